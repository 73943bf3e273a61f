import Foundation
import HearthCore
import Synchronization

/// How fast one peer address may open connections: `burst` at once, then `perSecond`.
public struct AcceptRate: Sendable, Equatable, CustomStringConvertible {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double) {
        precondition(perSecond > 0 && burst >= 1)
        self.perSecond = perSecond
        self.burst = burst
    }

    /// "50 a second (bursts of 256)"
    public var description: String {
        func number(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
        return "\(number(self.perSecond)) a second (bursts of \(number(self.burst)))"
    }
}

/// A token bucket per peer address for the connections it opens (``AcceptRate``). Without it
/// one host could open and drop connections as fast as the server accepts them, each costing a
/// handshake, and never hold more than the per-address cap at once.
///
/// An address's bucket is kept while it is not full, so closing each connection at once gains
/// nothing; full ones are let go once there are many (`sweepAbove`), which bounds the memory to
/// the addresses seen within `burst / perSecond`.
final class AcceptLimiter: Sendable {
    let rate: AcceptRate
    private let now: @Sendable () -> Date
    private let buckets = Mutex<[String: TokenBucket]>([:])
    private let sweepAbove: Int

    init(rate: AcceptRate, now: @escaping @Sendable () -> Date = { Date() }, sweepAbove: Int = 4096) {
        self.rate = rate
        self.now = now
        self.sweepAbove = sweepAbove
    }

    /// Takes a connection from `address`: nil when admitted, else how long until one would be.
    func admit(_ address: String) -> TimeInterval? {
        let now = self.now()
        return self.buckets.withLock { buckets in
            if buckets.count > self.sweepAbove { Self.sweep(&buckets, now: now) }
            var bucket =
                buckets[address] ?? TokenBucket(perSecond: self.rate.perSecond, burst: self.rate.burst, now: now)
            let wait = bucket.take(now: now)
            buckets[address] = bucket
            return wait
        }
    }

    /// The addresses it keeps a bucket for now.
    var tracked: Int { self.buckets.withLock { $0.count } }

    /// Lets go of every bucket that has refilled: an address seen again starts full anyway.
    private static func sweep(_ buckets: inout [String: TokenBucket], now: Date) {
        buckets = buckets.filter { _, bucket in !bucket.isFull(at: now) }
    }
}
