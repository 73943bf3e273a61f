public import Foundation
public import HearthCore
import Synchronization

/// Per-user limits: a token bucket for the rate of calls, and a cap on the calls each user has
/// in flight at once. Every user behind one gateway event loop shares that loop's connection to
/// a replica, and a replica takes at most 1,024 calls in flight on a connection: without the
/// cap, one user holding slow calls could have the replica refuse everyone else on that loop.
public final class RateLimiter: Sendable {
    public struct Limits: Sendable {
        public var perSecond: Double
        public var burst: Double
        /// Calls one user may have in flight at once through this gateway.
        public var maxInFlight: Int

        public init(perSecond: Double = 50, burst: Double = 100, maxInFlight: Int = 100) {
            self.perSecond = perSecond
            self.burst = burst
            self.maxInFlight = maxInFlight
        }
    }

    /// Why a call was not admitted.
    public enum Refusal: Sendable, Equatable {
        /// The bucket is empty: the next token comes after this long.
        case rate(retryAfter: TimeInterval)
        /// The user has ``Limits/maxInFlight`` calls in flight already.
        case inFlight
    }

    private struct User {
        var bucket: TokenBucket
        var inFlight = 0

        mutating func admit(now: Date, maxInFlight: Int) -> Refusal? {
            guard self.inFlight < maxInFlight else { return .inFlight }
            if let wait = self.bucket.take(now: now) { return .rate(retryAfter: wait) }
            self.inFlight += 1
            return nil
        }

        mutating func finish() {
            precondition(self.inFlight > 0, "a call finished that was never admitted")
            self.inFlight -= 1
        }
    }

    private let limits: Limits
    private let clock: any WallClock
    private let users = Mutex<[String: User]>([:])

    public init(limits: Limits, clock: any WallClock = SystemClock()) {
        precondition(limits.maxInFlight > 0, "a user may have at least one call in flight")
        self.limits = limits
        self.clock = clock
    }

    /// Admits one call from `user` (nil) or says why not. An admitted call counts as in flight
    /// until ``finished(_:)``; a refused one takes nothing (a call refused for the calls in
    /// flight takes no token either).
    public func admit(_ user: String) -> Refusal? {
        self.users.withLock { users in
            // Read under the lock: calls from two loops then reach the buckets in clock order,
            // and no bucket's time steps back for a call that merely came second.
            let now = self.clock.now()
            if users.count > 100_000 { Self.forgetIdle(&users, now: now) }
            return users[
                user,
                default: User(bucket: TokenBucket(perSecond: self.limits.perSecond, burst: self.limits.burst, now: now))
            ]
            .admit(now: now, maxInFlight: self.limits.maxInFlight)
        }
    }

    /// A call ``admit(_:)`` let through has ended, however it ended.
    public func finished(_ user: String) {
        // Never forgotten meanwhile: a user with calls in flight is kept.
        self.users.withLock { users in users[user]?.finish() }
    }

    /// How many calls `user` has in flight (for tests).
    func inFlight(_ user: String) -> Int {
        self.users.withLock { $0[user]?.inFlight ?? 0 }
    }

    /// Drops users with nothing in flight whose buckets have refilled completely: they hold
    /// nothing a new entry would not.
    private static func forgetIdle(_ users: inout [String: User], now: Date) {
        users = users.filter { _, state in state.inFlight > 0 || !state.bucket.isFull(at: now) }
    }
}
