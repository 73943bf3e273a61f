public import Foundation
import Synchronization

/// Lets housekeeping run at most once per `interval` of a clock's time, however often it is
/// asked (its scheduler looks whenever woken): old outbox rows, old history.
public final class IntervalGate: Sendable {
    public let interval: TimeInterval
    private let lastRun: Mutex<Date?>

    /// - Parameter lastRun: when it counts as having run last; nil: it may run at once.
    public init(interval: TimeInterval, lastRun: Date? = nil) {
        self.interval = interval
        self.lastRun = Mutex(lastRun)
    }

    /// Whether it may run at `now`; when it may, `now` becomes its last run (a run that then
    /// fails waits for the next interval, rather than being tried again at once).
    public func admits(now: Date) -> Bool {
        self.lastRun.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= self.interval }) ?? true else { return false }
            last = now
            return true
        }
    }

    /// When it may run next: at once (`.distantPast`) if it never has.
    public var nextRun: Date {
        self.lastRun.withLock { $0 }.map { $0.addingTimeInterval(self.interval) } ?? .distantPast
    }
}
