/// Trimming without Foundation: `trimmingCharacters(in: .whitespacesAndNewlines)` went through
/// `CharacterSet` for every string, 2.2% of an alert sender's CPU (every alarm names its user and
/// greets its contact). The same characters: Unicode's White_Space property, and U+200B (zero
/// width space), which Foundation's set still holds (a test compares the two scalar by scalar).
extension String {
    /// The text without the whitespace and line breaks at its ends; the string itself when it has
    /// none there.
    public func trimmingWhitespace() -> String {
        let scalars = self.unicodeScalars
        guard let first = scalars.first, let last = scalars.last else { return "" }
        if !first.isTrimmed, !last.isTrimmed { return self }
        guard let start = scalars.firstIndex(where: { !$0.isTrimmed }) else { return "" }
        // A scalar that stays exists, so the last one is found at or after `start`.
        let end = scalars.lastIndex(where: { !$0.isTrimmed })!
        return String(Substring(scalars[start...end]))
    }
}

extension Unicode.Scalar {
    /// Whether Foundation's `whitespacesAndNewlines` holds it.
    fileprivate var isTrimmed: Bool { self.properties.isWhitespace || self.value == 0x200B }
}
