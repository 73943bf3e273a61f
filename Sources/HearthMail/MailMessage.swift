public import Foundation
import HearthCore

/// One plain-text email, rendered as RFC 5322 with MIME: a UTF-8 body (base64, so any
/// language and line length travel intact), an RFC 2047 encoded subject, Date and Message-ID.
public struct MailMessage: Sendable, Equatable {
    public var from: MailAddress
    public var to: MailAddress
    public var subject: String
    public var body: String
    public var date: Date
    /// Without angle brackets, e.g. `alert-123@hearth.local`. Stable per message, so that a
    /// message sent again after a crash can be recognized as the same one.
    public var messageID: String
    /// Further header fields, after the standard ones (e.g. `List-Unsubscribe`). Their values
    /// are ASCII without line breaks (``MailHeader``).
    public var headers: [MailHeader]

    public init(
        from: MailAddress,
        to: MailAddress,
        subject: String,
        body: String,
        date: Date,
        messageID: String,
        headers: [MailHeader] = []
    ) {
        self.from = from
        self.to = to
        self.subject = subject
        self.body = body
        self.date = date
        self.messageID = messageID
        self.headers = headers
    }

    /// The message as sent after DATA, lines ending in CRLF (before dot-stuffing).
    public var rendered: String {
        let headers =
            [
                "Date: \(Self.rfc5322Date(self.date))",
                "From: \(self.from.header)",
                "To: \(self.to.header)",
                "Subject: \(EncodedWords.encode(self.subject))",
                "Message-ID: <\(self.messageID)>",
                "MIME-Version: 1.0",
                "Content-Type: text/plain; charset=UTF-8",
                "Content-Transfer-Encoding: base64",
            ] + self.headers.map { "\($0.name): \($0.value)" }
        let body = Data(self.body.utf8).base64EncodedString(options: [
            .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed,
        ])
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + body + "\r\n"
    }

    /// `Sun, 22 Nov 2026 01:02:03 +0000`, in UTC, to the second below. With integer arithmetic
    /// for years 1-9999 (a `DateFormatter` was 1.4% of an alert sender's CPU), with one outside.
    static func rfc5322Date(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // 0001-01-01 ..< 10000-01-01 (NaN and infinities fail it too)
        guard seconds >= -62_135_596_800, seconds < 253_402_300_800 else {
            return DateFormats.string(date, pattern: "EEE, dd MMM yyyy HH:mm:ss Z", locale: "en_US_POSIX", zone: .gmt)
        }
        let whole = Int(seconds)
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let ofDay = whole - days * 86_400
        let day = LocalDate(daysSinceEpoch: days)
        // 1970-01-01 was a Thursday.
        let weekday = Self.weekdays[((days % 7) + 11) % 7]
        let month = Self.months[day.month - 1]
        return "\(weekday), \(day.day.zeroPadded(to: 2)) \(month) \(day.year.zeroPadded(to: 4)) "
            + "\((ofDay / 3600).zeroPadded(to: 2)):\((ofDay / 60 % 60).zeroPadded(to: 2)):"
            + "\((ofDay % 60).zeroPadded(to: 2)) +0000"
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}

/// A header field of plain ASCII. A value with a line break, or any byte outside printable
/// ASCII, would let its text forge other fields: such a value is refused when made.
public struct MailHeader: Sendable, Equatable {
    public let name: String
    public let value: String

    /// Nil for a name that is not a field name, or a value that is not printable ASCII.
    public init?(_ name: String, _ value: String) {
        guard !name.isEmpty, name.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: ":") }),
            value.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else { return nil }
        self.name = name
        self.value = value
    }
}

/// An address with an optional display name.
public struct MailAddress: Sendable, Equatable {
    public var address: String
    public var name: String?

    public init(_ address: String, name: String? = nil) {
        self.address = address
        self.name = name
    }

    /// Whether it looks deliverable: one `@`, a local part and a dotted domain, printable
    /// ASCII only, none of the characters that would break a header or an SMTP command.
    public var isValid: Bool {
        let parts = self.address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64, self.address.count <= 254 else { return false }
        let domain = parts[1]
        // Byte by byte: as Characters, "\r\n" is one grapheme, so a set of them holding it
        // lets a lone CR or LF through.
        guard self.address.utf8.allSatisfy({ Self.allowedBytes.contains($0) }) else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }
    }

    /// Printable ASCII less space and `<>(),;:"[]\`.
    private static let allowedBytes: Set<UInt8> = Set(0x21...0x7E).subtracting("<>(),;:\"[]\\".utf8)

    var header: String {
        guard let name, !name.isEmpty else { return "<\(self.address)>" }
        return "\(EncodedWords.encode(name)) <\(self.address)>"
    }
}

/// RFC 2047 encoded words: non-ASCII header text as `=?UTF-8?B?...?=`, split so that no
/// word is over 75 characters and no character is cut in two.
enum EncodedWords {
    static func encode(_ text: String) -> String {
        let plain = text.allSatisfy { $0.isASCII && !$0.isNewline } && !text.contains("=?")
        if plain { return text }
        var words: [Data] = []
        var chunk = Data()
        for character in text {
            let bytes = Data(String(character).utf8)
            // 42 bytes of UTF-8 make 56 of base64: with "=?UTF-8?B?" and "?=", 68, so that even
            // the first word keeps "Subject: " under 78 characters.
            if chunk.count + bytes.count > 42 {
                words.append(chunk)
                chunk = Data()
            }
            chunk.append(bytes)
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\($0.base64EncodedString())?=" }.joined(separator: "\r\n ")
    }
}
