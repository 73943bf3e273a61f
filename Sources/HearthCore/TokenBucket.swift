public import Foundation

/// A token bucket: `burst` calls at once, refilled at `perSecond`. Pure: the caller passes time.
public struct TokenBucket: Sendable, Equatable {
    public let perSecond: Double
    public let burst: Double
    private(set) var tokens: Double
    private(set) var updatedAt: Date

    public init(perSecond: Double, burst: Double, now: Date) {
        self.perSecond = perSecond
        self.burst = burst
        self.tokens = burst
        self.updatedAt = now
    }

    /// Takes one token if there is one. Otherwise returns how long until there will be.
    /// A wall clock set back refills nothing for the step and counts on from the new time
    /// (kept at the old one, the bucket would stay empty until the clock caught up with it).
    public mutating func take(now: Date) -> TimeInterval? {
        let elapsed = max(0, now.timeIntervalSince(self.updatedAt))
        self.tokens = min(self.burst, self.tokens + elapsed * self.perSecond)
        self.updatedAt = now
        guard self.tokens >= 1 else {
            return (1 - self.tokens) / self.perSecond
        }
        self.tokens -= 1
        return nil
    }

    /// Whether it would hold `burst` tokens at `now`: nothing taken since it refilled.
    public func isFull(at now: Date) -> Bool {
        self.tokens + max(0, now.timeIntervalSince(self.updatedAt)) * self.perSecond >= self.burst
    }
}
