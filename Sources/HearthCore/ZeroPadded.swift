extension BinaryInteger {
    /// The number in decimal, zeros after its sign to `width` characters ("07", "0042", "-07"):
    /// what `String(format: "%0Nd")` writes, without Foundation's format parser, which was a
    /// list call's costliest step per row.
    public func zeroPadded(to width: Int) -> String {
        let sign = self < 0 ? "-" : ""
        let digits = String(self.magnitude)
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }
}
