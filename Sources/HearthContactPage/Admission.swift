import Foundation
import HearthCore
import Synchronization

/// Which requests the page lets ask safety: a token bucket per client (``AddressBuckets``), and
/// a cap on the requests asking safety at once, over all clients. Time comes from a clock the
/// tests move.
final class Admission: Sendable {
    /// Why a request was not let through.
    enum Refusal: Sendable, Equatable {
        /// The client's bucket is empty: the next token comes in this many whole seconds.
        case rate(retryAfter: Int)
        /// ``ContactPage/Limits/maxInFlight`` requests are asking safety already.
        case busy
    }

    private struct State {
        var buckets: AddressBuckets
        var inFlight = 0
    }

    private let maxInFlight: Int
    private let clock: any WallClock
    private let state: Mutex<State>

    init(limits: ContactPage.Limits, clock: any WallClock) {
        precondition(limits.maxInFlight >= 1, "at least one request may ask safety")
        self.maxInFlight = limits.maxInFlight
        self.clock = clock
        self.state = Mutex(
            State(
                buckets: AddressBuckets(
                    capacity: limits.maxAddresses,
                    perSecond: limits.perMinute / 60,
                    burst: limits.burst
                )
            )
        )
    }

    /// Lets one request from `client` ask safety (nil), or says why not. A request let through
    /// counts as in flight until ``finished()``. A request refused because too many are in
    /// flight takes no token from its client's bucket.
    func admit(_ client: ClientKey) -> Refusal? {
        self.state.withLock { state in
            guard state.inFlight < self.maxInFlight else { return .busy }
            // Read under the lock: requests reach a bucket in the order of their times.
            if let wait = state.buckets.take(client, now: self.clock.now()) {
                return .rate(retryAfter: max(1, Int(wait.rounded(.up))))
            }
            state.inFlight += 1
            return nil
        }
    }

    /// A request ``admit(_:)`` let through has its answer from safety, or gave up.
    func finished() {
        self.state.withLock { state in
            precondition(state.inFlight > 0, "a request finished that was never admitted")
            state.inFlight -= 1
        }
    }

    /// How many clients have a bucket (for tests).
    var clients: Int { self.state.withLock { $0.buckets.count } }
}

/// A token bucket per client, at most `capacity` of them: a client not seen before, with the
/// table full, takes the place of the one that has gone longest without a request (the least
/// recently used, found in constant time from a list kept in order of use). So an attacker
/// with a great many addresses costs a bounded table; evicting a bucket only forgets what the
/// client had spent, the worst being a fresh burst for a client idle longest.
struct AddressBuckets {
    private struct Entry {
        var client: ClientKey
        var bucket: TokenBucket
        /// Neighbours in the order of use: `older` towards ``oldest``, `newer` towards ``newest``.
        var older: Int?
        var newer: Int?
    }

    let capacity: Int
    let perSecond: Double
    let burst: Double
    private var slots: [ClientKey: Int] = [:]
    private var entries: [Entry] = []
    private var oldest: Int?
    private var newest: Int?

    init(capacity: Int, perSecond: Double, burst: Double) {
        precondition(capacity >= 1 && perSecond > 0 && burst >= 1, "a table of buckets that can let a request through")
        self.capacity = capacity
        self.perSecond = perSecond
        self.burst = burst
        self.slots.reserveCapacity(min(capacity, 1024))
    }

    /// How many clients have a bucket.
    var count: Int { self.slots.count }

    /// Whether `client` has a bucket now.
    func contains(_ client: ClientKey) -> Bool { self.slots[client] != nil }

    /// Takes a token from `client`'s bucket (nil), or returns how long until it has one. Either
    /// way the client becomes the most recently seen.
    mutating func take(_ client: ClientKey, now: Date) -> TimeInterval? {
        let slot: Int
        if let known = self.slots[client] {
            slot = known
            self.unlink(slot)
        } else {
            let fresh = TokenBucket(perSecond: self.perSecond, burst: self.burst, now: now)
            if self.entries.count < self.capacity {
                slot = self.entries.count
                self.entries.append(Entry(client: client, bucket: fresh))
            } else {
                // Full: the least recently seen client gives up its place.
                guard let idlest = self.oldest else { preconditionFailure("a full table has an oldest entry") }
                slot = idlest
                self.unlink(slot)
                self.slots[self.entries[slot].client] = nil
                self.entries[slot] = Entry(client: client, bucket: fresh)
            }
            self.slots[client] = slot
        }
        self.linkNewest(slot)
        return self.entries[slot].bucket.take(now: now)
    }

    private mutating func unlink(_ slot: Int) {
        let (older, newer) = (self.entries[slot].older, self.entries[slot].newer)
        if let older { self.entries[older].newer = newer } else { self.oldest = newer }
        if let newer { self.entries[newer].older = older } else { self.newest = older }
        self.entries[slot].older = nil
        self.entries[slot].newer = nil
    }

    private mutating func linkNewest(_ slot: Int) {
        self.entries[slot].older = self.newest
        self.entries[slot].newer = nil
        if let newest = self.newest { self.entries[newest].newer = slot } else { self.oldest = slot }
        self.newest = slot
    }
}
