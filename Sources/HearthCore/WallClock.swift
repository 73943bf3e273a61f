public import Foundation
import Synchronization

/// Where services get the current time, so that tests can set it.
public protocol WallClock: Sendable {
    func now() -> Date
}

/// The real time.
public struct SystemClock: WallClock {
    public init() {}

    public func now() -> Date { Date() }
}

/// A clock that moves only when told to: for tests of schedules, deadlines and caps.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    public init(_ start: Date) {
        self.current = Mutex(start)
    }

    public func now() -> Date {
        self.current.withLock { $0 }
    }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by interval: TimeInterval) {
        self.current.withLock { $0 += interval }
    }

    public func set(_ date: Date) {
        self.current.withLock { $0 = date }
    }
}
