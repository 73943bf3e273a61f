import Foundation

/// How long to wait before trying again what failed: 1 s after the first attempt, doubling with
/// each one, never more than `longest`. The push outbox, the relay and the erasures retry so.
public enum RetryPause {
    /// The pause after a failure, `attempts` attempts having been made before the one that failed.
    public static func after(attempts: Int, longest: TimeInterval) -> TimeInterval {
        min(pow(2, Double(max(attempts, 0))), longest)
    }
}
