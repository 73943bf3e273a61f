import Foundation

/// How many of the messages a decision records it may claim at once for this process's
/// senders, by channel, and for how long (``SafetyPersistence/decideDue(now:limit:claiming:)``).
/// A message claimed as it is recorded is inserted under its claim: its claim costs no
/// statement of its own, and no read of what the decision just wrote.
struct ClaimRoom: Sendable {
    var free: [AlertRecord.Channel: Int]
    var lease: TimeInterval

    /// Claims nothing: every message decided waits for a sender's claim.
    static let none = ClaimRoom(free: [:], lease: 0)

    var isEmpty: Bool { self.free.values.allSatisfy { $0 <= 0 } }
}

/// What a decision did: how many switches it looked at, and the messages it claimed as it
/// recorded them (to be sent by this process: ``ClaimHandoff``).
struct DecidedBatch: Sendable {
    var looked: Int
    var claimed: [ClaimedAlert]
}

/// Claims, as a decision records them, the messages its room allows: each claimed as a sender's
/// claim would claim it (one attempt begun now, due again when its lease runs out), its links
/// minted. Store-independent: both stores insert what it leaves in the records.
struct DecidedClaims {
    private var room: ClaimRoom
    /// When the claims are made (the store's clock), and the time decided for.
    private let claimedAt: Date
    private let now: Date
    /// Each claim, with the tokens its links need stored.
    private var claims: [(alert: ClaimedAlert, tokens: [ContactLinks.NewToken])] = []

    /// The messages claimed.
    var claimed: [ClaimedAlert] { self.claims.map(\.alert) }
    /// The tokens to store for their links.
    var tokens: [ContactLinks.NewToken] { self.claims.flatMap(\.tokens) }

    init(room: ClaimRoom, claimedAt: Date, now: Date) {
        self.room = room
        self.claimedAt = claimedAt
        self.now = now
    }

    /// Claims nothing (a call's transition, not a decision of what fell due).
    static func none(at now: Date) -> DecidedClaims {
        DecidedClaims(room: .none, claimedAt: now, now: now)
    }

    /// Whether any channel has room left.
    var hasRoom: Bool { !self.room.isEmpty }

    /// Whether the effect at `index` of a user's may be claimed: none of the user's effects
    /// after it cancels what is pending (it would be cancelled before it was sent).
    static func mayClaim(effectAt index: Int, of effects: [SwitchEffect]) -> Bool {
        effects[(index + 1)...].allSatisfy {
            if case .cancelPending = $0 { return false }
            return true
        }
    }

    /// Claims `alert`, a message just decided for `profile`, when it goes out at once and its
    /// channel has room.
    mutating func claim(_ alert: inout AlertRecord, of profile: ProfileRecord) {
        guard alert.state == .pending, let due = alert.nextAttemptAt, due <= self.now,
            let free = self.room.free[alert.channel], free > 0
        else { return }
        self.room.free[alert.channel] = free - 1
        alert.attempts += 1
        alert.claimedAt = self.claimedAt
        alert.nextAttemptAt = self.claimedAt.addingTimeInterval(self.room.lease)
        let minted = ContactLinks.mint(forDecided: alert, profile: profile)
        let language = alert.channel == .push ? profile.language : nil
        self.claims.append(
            (ClaimedAlert(alert: alert, links: minted?.links, language: language), minted?.tokens ?? [])
        )
    }

    /// Leaves out the claim of `id`, a message not inserted (decided already: `alert_once`), and
    /// its tokens. Store the tokens after the messages.
    mutating func drop(_ id: String) {
        guard let index = self.claims.firstIndex(where: { $0.alert.alert.id == id }) else { return }
        let dropped = self.claims.remove(at: index).alert.alert
        self.room.free[dropped.channel, default: 0] += 1
    }
}
