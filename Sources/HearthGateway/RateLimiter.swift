public import Foundation
public import HearthCore
import Synchronization

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
}

/// Per-user rate limits: one bucket per user id.
public final class RateLimiter: Sendable {
    public struct Limits: Sendable {
        public var perSecond: Double
        public var burst: Double

        public init(perSecond: Double = 50, burst: Double = 100) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    private let limits: Limits
    private let clock: any WallClock
    private let buckets = Mutex<[String: TokenBucket]>([:])

    public init(limits: Limits, clock: any WallClock = SystemClock()) {
        self.limits = limits
        self.clock = clock
    }

    /// Takes one call from `user`'s bucket; returns how long to wait when it is empty.
    public func admit(_ user: String) -> TimeInterval? {
        self.buckets.withLock { buckets in
            // Read under the lock: calls from two loops then reach the buckets in clock order,
            // and no bucket's time steps back for a call that merely came second.
            let now = self.clock.now()
            if buckets.count > 100_000 { Self.forgetFull(&buckets, now: now) }
            return buckets[
                user,
                default: TokenBucket(perSecond: self.limits.perSecond, burst: self.limits.burst, now: now)
            ]
            .take(now: now)
        }
    }

    /// Drops buckets that have refilled completely: they hold nothing a new bucket would not.
    private static func forgetFull(_ buckets: inout [String: TokenBucket], now: Date) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + now.timeIntervalSince(bucket.updatedAt) * bucket.perSecond < bucket.burst
        }
    }
}
