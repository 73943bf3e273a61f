import Foundation

/// How logs and kept errors show an email address: its first character and its domain
/// (`m***@example.com`), enough to tell addresses apart without keeping them.
public enum MaskedAddress {
    public static func mask(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@"), let first = address.first, at != address.startIndex else {
            return "***"
        }
        return "\(first)***\(address[at...])"
    }
}

extension String {
    /// The text with every email address in it masked (``MaskedAddress``): for what goes to a
    /// log or is kept as an error, such as an SMTP server's reply naming the recipient.
    public var maskingEmailAddresses: String {
        guard self.contains("@") else { return self }
        let range = NSRange(self.startIndex..., in: self)
        var result = ""
        var last = self.startIndex
        for match in addressPattern.matches(in: self, range: range) {
            guard let found = Range(match.range, in: self) else { continue }
            result += self[last..<found.lowerBound]
            result += MaskedAddress.mask(String(self[found]))
            last = found.upperBound
        }
        return result + self[last...]
    }
}

/// A local part (any character RFC 5322's atext allows, and dots) and a domain, as SMTP replies
/// and texts write addresses; a local part cut short before its `@` is not an address.
private let addressPattern = try! NSRegularExpression(
    pattern: "[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\\-]+@[A-Za-z0-9.\\-]+"
)
