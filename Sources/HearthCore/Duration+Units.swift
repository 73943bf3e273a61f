/// A `Duration` in the units Hearth's wire, logs and benchmarks use.
extension Duration {
    /// In nanoseconds, clamped to what `Int64` holds (about 292 years).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflow, !overflowAgain else { return seconds < 0 ? .min : .max }
        return total
    }

    /// In whole microseconds (clamped like ``nanoseconds``).
    public var microseconds: Int64 { self.nanoseconds / 1_000 }

    /// In seconds, as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension Duration {
    /// `seconds` as a `retry_after`: to the millisecond, rounded up (a client that waits that
    /// long is never early), and at least `minimum` seconds.
    public static func retryAfter(seconds: Double, minimum: Double = 0) -> Duration {
        .milliseconds(Int64((max(seconds, minimum) * 1000).rounded(.up)))
    }
}
