import Foundation
import Synchronization

/// Messages the decider claimed as it recorded them, waiting for a free sender of their channel
/// in this process (``AlertDecider``, ``AlertSender``). A sender takes them before it claims
/// from the store: they cost no claim of their own. As many wait as the sender ended sends in
/// the last half of ``longestWait`` (at least ``atLeast``, at most ``capacity``), so they wait
/// about half of it whatever the relay's pace; and about ``longestWait`` at most (the sender
/// looks when a send ends or at its next tick, while the store answers): what waited longer
/// (its sender's sends slowed down, or are stuck) goes back to the store, due at once for any
/// process, as the rest of what was decided stays there. A sender that stops closes it: it takes
/// no more, and what still waits goes back too (``SafetyPersistence/returnClaims(_:)``).
final class ClaimHandoff: Sendable {
    /// How many wait a channel at most by default. Under load about half of each decided batch
    /// (up to 500) is claimed. With at most 64 (one a sender) most of such a batch stayed
    /// unclaimed, and cost a claim of its own from the store: on PostgreSQL a fifth more CPU an
    /// alarm, and late alarms once the cores were full (BENCHMARKS.md).
    static let defaultCapacity = 4 * AlertSender.sendersAtOnce

    /// The most that wait.
    let capacity: Int
    /// As many may wait whatever the pace of the sends (one a sender, by default): a sender with
    /// all its senders free starts them at once.
    let atLeast: Int
    /// The longest a claim waits for a sender before it is handed back.
    let longestWait: Duration

    private struct State {
        var waiting: [(claimed: ClaimedAlert, since: ContinuousClock.Instant)] = []
        /// When the sender's latest sends ended, oldest first (those of the last half of
        /// ``longestWait``).
        var ended: [ContinuousClock.Instant] = []
        var closed = false
    }

    private let state = Mutex(State())

    init(
        capacity: Int = ClaimHandoff.defaultCapacity,
        atLeast: Int = AlertSender.sendersAtOnce,
        longestWait: Duration = .seconds(1)
    ) {
        self.capacity = capacity
        self.atLeast = min(atLeast, capacity)
        self.longestWait = longestWait
    }

    /// How many more the decider may claim for it.
    var room: Int {
        self.state.withLock { state in
            guard !state.closed else { return 0 }
            let pace = min(self.capacity, max(self.atLeast, self.countRecentEnds(in: &state)))
            return max(0, pace - state.waiting.count)
        }
    }

    /// The sends that ended in the last half of ``longestWait`` (at most ``capacity`` counted).
    var recentEnds: Int { self.state.withLock { self.countRecentEnds(in: &$0) } }

    private func countRecentEnds(in state: inout State) -> Int {
        let oldest = ContinuousClock.now - self.longestWait / 2
        state.ended.removeFirst(state.ended.prefix { $0 < oldest }.count)
        return state.ended.count
    }

    /// The sender ended a send (whatever its outcome): the pace ``room`` follows.
    func sendEnded() {
        let now = ContinuousClock.now
        self.state.withLock { state in
            state.ended.append(now)
            // More than the room can use tells nothing more.
            if state.ended.count > self.capacity { state.ended.removeFirst() }
        }
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
