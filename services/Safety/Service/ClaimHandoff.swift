import Foundation
import Synchronization

/// Messages the decider claimed as it recorded them, waiting for a free sender of their channel
/// in this process (``AlertDecider``, ``AlertSender``). A sender takes them before it claims
/// from the store: they cost no claim of their own. At most ``capacity`` wait, and about
/// ``longestWait`` at most (the sender looks when a send ends or at its next tick, while the
/// store answers): what waited longer (its sender's sends are slow, or stuck) goes back to the
/// store, due at once for any process, as the rest of what was decided stays there.
/// A sender that stops closes it: it takes no more, and what still waits goes back too
/// (``SafetyPersistence/returnClaims(_:)``).
final class ClaimHandoff: Sendable {
    /// How many wait a channel by default. Under load about half of each decided batch (up to
    /// 500) is claimed, and they wait about a third of a second for one of two processes'
    /// senders at full load against the benchmark's sink, within ``longestWait``. With 64 (one a sender) most of such a batch stayed
    /// unclaimed, and cost a claim of its own from the store: on PostgreSQL a fifth more CPU an
    /// alarm, and late alarms once the cores were full (BENCHMARKS.md).
    static let defaultCapacity = 4 * AlertSender.sendersAtOnce

    /// The most that wait.
    let capacity: Int
    /// The longest a claim waits for a sender before it is handed back.
    let longestWait: Duration

    private struct State {
        var waiting: [(claimed: ClaimedAlert, since: ContinuousClock.Instant)] = []
        var closed = false
    }

    private let state = Mutex(State())

    init(capacity: Int = ClaimHandoff.defaultCapacity, longestWait: Duration = .seconds(1)) {
        self.capacity = capacity
        self.longestWait = longestWait
    }

    /// How many more the decider may claim for it.
    var room: Int {
        self.state.withLock { $0.closed ? 0 : max(0, self.capacity - $0.waiting.count) }
    }

    var isEmpty: Bool { self.state.withLock { $0.waiting.isEmpty } }

    /// The claims waiting (renewed with those under way) and their messages' ids (left out of
    /// a sender's claims).
    var claims: [AlertClaim] { self.state.withLock { $0.waiting.map(\.claimed.claim) } }
    var ids: Set<String> { self.state.withLock { Set($0.waiting.map(\.claimed.alert.id)) } }

    /// Hands `claimed` over to the sender; answers what it did not take (its sender stopped):
    /// the decider hands those back to the store.
    func put(_ claimed: [ClaimedAlert]) -> [ClaimedAlert] {
        guard !claimed.isEmpty else { return [] }
        return self.state.withLock { state in
            guard !state.closed else { return claimed }
            // Read under the lock: the waiting stay in the order they came.
            let now = ContinuousClock.now
            state.waiting += claimed.map { ($0, now) }
            return []
        }
    }

    /// Up to `limit` of the claims waiting, oldest first.
    func take(_ limit: Int) -> [ClaimedAlert] {
        guard limit > 0 else { return [] }
        return self.state.withLock { state in
            let taken = state.waiting.prefix(limit).map(\.claimed)
            state.waiting.removeFirst(taken.count)
            return taken
        }
    }

    /// Takes out what has waited longer than ``longestWait``, to hand back to the store.
    func overdue() -> [ClaimedAlert] {
        let oldest = ContinuousClock.now - self.longestWait
        return self.state.withLock { state in
            let count = state.waiting.prefix { $0.since < oldest }.count
            defer { state.waiting.removeFirst(count) }
            return state.waiting.prefix(count).map(\.claimed)
        }
    }

    /// Takes no more; answers what still waits, for the store.
    func close() -> [ClaimedAlert] {
        self.state.withLock { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting.map(\.claimed)
        }
    }
}
