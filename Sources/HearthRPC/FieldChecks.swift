public import Foundation
public import HearthCore
public import SwiftProtobuf

/// Checks of request fields that several services share, each naming the field it checks.
public enum FieldChecks {
    /// The most UTF-8 bytes a user-perceived character may average in checked text: the
    /// longest emoji sequences take about 35; a character can otherwise hold any number of
    /// combining marks, and "one character" a megabyte.
    public static let maxBytesPerCharacter = 64

    /// Text trimmed of surrounding white space, with a user-perceived character count in
    /// `characters` and at most `maxBytes` bytes of UTF-8 (by default ``maxBytesPerCharacter``
    /// for each character it may have), and no control character (``firstControl(in:allowingLineFeeds:)``):
    /// names, captions, titles and labels reach email headers, subjects and pushes, where a line
    /// break or an escape does harm. `allowingLineFeeds`: a free text of several lines (an answer)
    /// may keep its line feeds (U+000A), and nothing else.
    public static func trimmed(
        _ raw: String,
        field: String,
        characters: ClosedRange<Int>,
        maxBytes: Int? = nil,
        allowingLineFeeds: Bool = false
    ) -> Result<String, FieldViolation> {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        let maxBytes = maxBytes ?? characters.upperBound * Self.maxBytesPerCharacter
        guard text.utf8.count <= maxBytes else {
            return .failure(
                FieldViolation(field: field, description: "has \(text.utf8.count) bytes of UTF-8; at most \(maxBytes)")
            )
        }
        if let (scalar, offset) = Self.firstControl(in: text, allowingLineFeeds: allowingLineFeeds) {
            let code = String(scalar.value, radix: 16, uppercase: true)
            return .failure(
                FieldViolation(
                    field: field,
                    description:
                        "has a control character (U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code)) "
                        + "at position \(offset + 1); control characters are not allowed"
                        + (allowingLineFeeds ? " but for line feeds" : "")
                )
            )
        }
        guard characters.contains(text.count) else {
            let description =
                characters.lowerBound == 0
                ? "has \(text.count) characters; at most \(characters.upperBound)"
                : "must have \(characters.lowerBound) to \(characters.upperBound) characters (has \(text.count))"
            return .failure(FieldViolation(field: field, description: description))
        }
        return .success(text)
    }

    /// The first control character of `text` and its position (in Unicode scalars, from 0): C0
    /// (U+0000 to U+001F), DEL (U+007F) or C1 (U+0080 to U+009F); line feeds pass when
    /// `allowingLineFeeds`. Nil when there is none.
    public static func firstControl(in text: String, allowingLineFeeds: Bool = false) -> (Unicode.Scalar, Int)? {
        for (offset, scalar) in text.unicodeScalars.enumerated() {
            let value = scalar.value
            guard value < 0x20 || (0x7F...0x9F).contains(value) else { continue }
            if allowingLineFeeds && value == 0x0A { continue }
            return (scalar, offset)
        }
        return nil
    }

    /// Whether `text` has at most `characters` user-perceived characters, and at most
    /// ``maxBytesPerCharacter`` bytes of UTF-8 for each it may have (checked first, so that a
    /// huge "character" is not counted).
    public static func fits(_ text: String, characters: Int) -> Bool {
        text.utf8.count <= characters * Self.maxBytesPerCharacter && text.count <= characters
    }

    /// `text` cut to its first `characters` user-perceived characters, and to at most
    /// ``maxBytesPerCharacter`` bytes of UTF-8 for each (at a character's end), for text that
    /// is shortened rather than refused.
    public static func cut(_ text: String, characters: Int) -> String {
        let maxBytes = characters * Self.maxBytesPerCharacter
        var kept = Substring(text.prefix(characters))
        while kept.utf8.count > maxBytes { kept = kept.dropLast() }
        return String(kept)
    }

    /// The zone a request names; a violation unless it is an IANA zone.
    public static func zone(_ identifier: String, field: String = "time_zone") -> Result<TimeZone, FieldViolation> {
        guard let zone = TimeZone(iana: identifier) else {
            let description =
                identifier.isEmpty
                ? "is required: an IANA time zone such as Asia/Taipei"
                : "'\(identifier)' is not an IANA time zone such as Asia/Taipei"
            return .failure(FieldViolation(field: field, description: description))
        }
        return .success(zone)
    }

    /// The time a request names: a violation unless it is a valid protobuf Timestamp from
    /// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, nanos below a second (what every store
    /// and RFC 3339 text can hold: a year past 9999 is written but never read back). The range
    /// ends at that second itself: a fraction of it would round up to the year 10000 as a
    /// `Date` (a Double, 30 us apart out there) or a stored millisecond. A client that sends
    /// milliseconds as seconds lands far past it.
    public static func timestamp(_ timestamp: Google_Protobuf_Timestamp, field: String) -> Result<Date, FieldViolation>
    {
        let inRange =
            Self.timestampSeconds.contains(timestamp.seconds) && (0..<1_000_000_000).contains(timestamp.nanos)
            && (timestamp.seconds < Self.timestampSeconds.upperBound || timestamp.nanos == 0)
        guard inRange else {
            return .failure(
                FieldViolation(
                    field: field,
                    description: "must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z "
                        + "(\(timestamp.seconds) s, \(timestamp.nanos) ns is not)"
                )
            )
        }
        return .success(timestamp.date)
    }

    /// ``timestamp(_:field:)`` for a field the request must set (`isSet`: its `has...`).
    public static func requiredTimestamp(_ timestamp: Google_Protobuf_Timestamp, isSet: Bool, field: String)
        -> Result<Date, FieldViolation>
    {
        isSet
            ? Self.timestamp(timestamp, field: field)
            : .failure(FieldViolation(field: field, description: "is required"))
    }

    /// The seconds of a valid Timestamp: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
    static let timestampSeconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    /// A `YYYY-MM-DD` date a request names.
    public static func date(_ text: String, field: String) -> Result<LocalDate, FieldViolation> {
        guard let date = LocalDate(text) else {
            return .failure(FieldViolation(field: field, description: "'\(text)' is not a date YYYY-MM-DD"))
        }
        return .success(date)
    }
}

extension Result where Failure == FieldViolation {
    /// The value, or nil once the violation is added to `violations` (to report every bad
    /// field of a request at once).
    public func value(collecting violations: inout [FieldViolation]) -> Success? {
        switch self {
        case .success(let value):
            return value
        case .failure(let violation):
            violations.append(violation)
            return nil
        }
    }
}
