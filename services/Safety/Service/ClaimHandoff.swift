import Foundation
import Synchronization

/// Messages the decider claimed as it recorded them, waiting for a free sender of their channel
/// in this process (``AlertDecider``, ``AlertSender``). A sender takes them before it claims
/// from the store: they cost no claim of their own. The decider claims no more than the sender
/// has free (``room``), so none waits longer than the sender takes to look again (a send's end
/// or its next tick); the rest stay in the store for any process's claim. A sender that stops
/// closes it: it takes no more, and what still waits is handed back to the store
/// (``SafetyPersistence/returnClaims(_:)``), due again at once for any process.
final class ClaimHandoff: Sendable {
    /// The most sends a sender has under way (``AlertSender/sendersAtOnce``).
    let capacity: Int

    private struct State {
        var waiting: [ClaimedAlert] = []
        /// The sends its sender has under way.
        var underWay = 0
        var closed = false
    }

    private let state = Mutex(State())

    init(capacity: Int = AlertSender.sendersAtOnce) {
        self.capacity = capacity
    }

    /// How many more the decider may claim for it: the sender's free sends, less what waits.
    var room: Int {
        self.state.withLock { $0.closed ? 0 : max(0, self.capacity - $0.underWay - $0.waiting.count) }
    }

    /// The sender tells how many sends it has under way.
    func sending(_ count: Int) {
        self.state.withLock { $0.underWay = count }
    }

    var isEmpty: Bool { self.state.withLock { $0.waiting.isEmpty } }

    /// The claims waiting (renewed with those under way) and their messages' ids (left out of
    /// a sender's claims).
    var claims: [AlertClaim] { self.state.withLock { $0.waiting.map(\.claim) } }
    var ids: Set<String> { self.state.withLock { Set($0.waiting.map(\.alert.id)) } }

    /// Hands `claimed` over to the sender; answers what it did not take (its sender stopped):
    /// the decider hands those back to the store.
    func put(_ claimed: [ClaimedAlert]) -> [ClaimedAlert] {
        guard !claimed.isEmpty else { return [] }
        return self.state.withLock { state in
            guard !state.closed else { return claimed }
            state.waiting += claimed
            return []
        }
    }

    /// Up to `limit` of the claims waiting, oldest first: under way from now on.
    func take(_ limit: Int) -> [ClaimedAlert] {
        guard limit > 0 else { return [] }
        return self.state.withLock { state in
            let taken = Array(state.waiting.prefix(limit))
            state.waiting.removeFirst(taken.count)
            state.underWay += taken.count
            return taken
        }
    }

    /// Takes no more; answers what still waits, for the store.
    func close() -> [ClaimedAlert] {
        self.state.withLock { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
    }
}
