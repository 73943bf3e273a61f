import Foundation

extension MailAddress {
    /// The address as logs show it: the first character of the local part and the domain
    /// (`m***@example.com`), enough to tell addresses apart without keeping them.
    public var masked: String { Self.mask(self.address) }

    static func mask(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@"), let first = address.first, at != address.startIndex else {
            return "***"
        }
        return "\(first)***\(address[at...])"
    }
}

extension String {
    /// The text with every email address in it masked (``MailAddress/masked``): for what goes
    /// to a log or is kept as an error, such as an SMTP server's reply naming the recipient.
    public var maskingEmailAddresses: String {
        guard self.contains("@") else { return self }
        let range = NSRange(self.startIndex..., in: self)
        var result = ""
        var last = self.startIndex
        for match in maskedAddressPattern.matches(in: self, range: range) {
            guard let found = Range(match.range, in: self) else { continue }
            result += self[last..<found.lowerBound]
            result += MailAddress.mask(String(self[found]))
            last = found.upperBound
        }
        return result + self[last...]
    }
}

/// A local part and a domain: what SMTP replies and texts write addresses as.
private let maskedAddressPattern = try! NSRegularExpression(
    pattern: "[A-Za-z0-9._%+'\\-]+@[A-Za-z0-9.\\-]+"
)
