import Foundation
import HearthCore
import HearthMail
import HearthPush
import HearthScheduler
import HearthStore
import Logging
import Synchronization

/// The switch's deciding: what fell due goes into the alert outbox (in batches, one transaction
/// each), and the senders are woken after each batch. It never waits for a delivery, so a slow SMTP
/// server holds back no warning. The messages that go out at once are claimed for this
/// process's senders as they are recorded, as many as their handoffs have room for
/// (``ClaimHandoff``): those cost no claim of their own. So do the ends of the graces of
/// contacts stored before invitations existed: the user is told of one that ended unanswered
/// (``SafetyPersistence/endGraces(now:limit:)``).
struct AlertDecider: DueWork {
    static let batch = 500

    let store: any SafetyPersistence
    /// What it claims for each channel's sender.
    let handoffs: [AlertRecord.Channel: ClaimHandoff]
    /// How long a message claimed as it is decided is held (the senders' lease).
    let lease: TimeInterval
    let wakeSenders: @Sendable () -> Void

    func nextDueTime() async throws -> Date? {
        let decision = try await self.store.nextDecisionTime()
        let graceEnd = try await self.store.nextGraceEnd()
        return [decision, graceEnd].compactMap { $0 }.min()
    }

    func runDue(now: Date) async throws {
        var decided = Self.batch
        while decided == Self.batch {
            let (store, room) = (self.store, self.room)
            // Not cut short by a shutdown once it claims: claims committed reach the senders.
            let batch =
                room.isEmpty
                ? try await store.decideDue(now: now, limit: Self.batch, claiming: room)
                : try await Task { try await store.decideDue(now: now, limit: Self.batch, claiming: room) }.value
            decided = batch.looked
            // Sending begins while later batches are decided.
            defer { if decided > 0 { self.wakeSenders() } }
            try await self.handOver(batch.claimed)
        }
        var ended = Self.batch
        while ended == Self.batch {
            let graces = try await self.store.endGraces(now: now, limit: Self.batch)
            ended = graces.ended
            if graces.told > 0 { self.wakeSenders() }
        }
    }
}

extension AlertDecider {
    /// As many of each channel as its sender's handoff has room for; none while stopping.
    private var room: ClaimRoom {
        guard !Task.isCancelled else { return .none }
        return ClaimRoom(free: self.handoffs.mapValues(\.room), lease: self.lease)
    }

    /// Gives each sender the messages claimed for it; those a stopped sender no longer takes
    /// are handed back to the store, due again at once for any process (not cut short by the
    /// shutdown).
    private func handOver(_ claimed: [ClaimedAlert]) async throws {
        guard !claimed.isEmpty else { return }
        var refused: [AlertClaim] = []
        for (channel, handoff) in self.handoffs {
            refused += handoff.put(claimed.filter { $0.alert.channel == channel }).map(\.claim)
        }
        guard !refused.isEmpty else { return }
        let store = self.store
        try await Task { try await store.returnClaims(refused) }.value
    }
}

/// Delivers one channel's messages from the alert outbox: sends what the decider claimed for it
/// (``ClaimHandoff``), claims other due ones (in a write that counts the attempt), up to
/// ``sendersAtOnce`` at a time, taking and claiming more as sends finish and as time passes,
/// and records each outcome as it comes. One sender per channel, so a stuck SMTP server holds
/// back no push.
struct AlertSender: DueWork {
    static let sendersAtOnce = 64
    /// Claims are made for at least this many free senders (or when all are free): with more
    /// than 48 sends hanging, a message newly due waits for one of them to end.
    static let claimAtLeast = 16
    /// How long a claimed message waits before it can be claimed again, by default: it is under
    /// way, or its outcome is held in memory (``UnrecordedOutcomes``), and either way this process
    /// leaves it out; on SQLite the lease only matters for a claim that never reached a send (a
    /// process start releases claims at once).
    static let lease: TimeInterval = 10 * 60
    /// How often a sender with sends under way looks for messages newly due.
    static let lookAgainEvery: Duration = .milliseconds(250)
    /// How soon an outcome that could not be written is written again when no send is under
    /// way (while sends are, at every look-again tick).
    static let outcomeRetry: TimeInterval = 5

    let channel: AlertRecord.Channel
    let store: any SafetyPersistence
    let channels: AlertChannels
    let logger: Logger
    /// The domain Message-IDs end in.
    let messageDomain: String
    /// How long a claim holds a message (``lease``, unless the store's replicas need another).
    let lease: TimeInterval
    /// Outcomes known but not yet written: never sent again while this process holds them.
    let unrecorded = UnrecordedOutcomes()
    /// Messages the decider claimed for this sender (``ClaimHandoff``).
    let handoff: ClaimHandoff

    func nextDueTime() async throws -> Date? {
        // What the decider claimed goes out at once.
        if !self.handoff.isEmpty { return .distantPast }
        let unrecorded = self.unrecorded.ids
        let next = try await self.store.nextAttemptTime(self.channel, excluding: unrecorded)
        guard !unrecorded.isEmpty else { return next }
        return min(next ?? .distantFuture, self.store.now.addingTimeInterval(Self.outcomeRetry))
    }

    func runDue(now: Date) async throws {
        await self.writeHeldOutcomes()
        // Outcomes still held keep their claims, whether or not a send is under way.
        if !self.unrecorded.ids.isEmpty { await self.renew([], at: self.store.now) }
        // Each child answers the message it sent, or nil for a look-again tick.
        let claimFailure: (any Error)? = await withTaskGroup(of: String?.self) { group in
            var claimFailure: (any Error)?
            // Never claimed again while under way here, however long it takes.
            var underWay: [String: AlertClaim] = [:]
            var ticking = false
            // Whether a claim may find more: its last one was cut short by the free senders,
            // or time has passed since.
            var mayFindMore = true
            // The claims under way are renewed every third of their lease.
            var renewedAt = self.store.now
            var handedBack = false
            while true {
                // What the decider claimed first: it is under way already. Stopping, it goes
                // back to the store at once, for any process, while the sends under way end.
                if !Task.isCancelled {
                    // What waited too long first (its sends are slow or stuck, or this loop was
                    // held up): for any process, and never taken here once its lease may have run.
                    await self.handBack(self.handoff.overdue())
                    for claim in self.handoff.take(Self.sendersAtOnce - underWay.count) {
                        self.send(claim, in: &group, underWay: &underWay)
                    }
                } else if !handedBack {
                    handedBack = true
                    await self.handBack()
                }
                let free = Self.sendersAtOnce - underWay.count
                if mayFindMore, free >= Self.claimAtLeast || underWay.isEmpty, !Task.isCancelled {
                    mayFindMore = false
                    do {
                        let claimed = try await self.store.claimDue(
                            self.channel,
                            now: max(now, self.store.now),
                            limit: free,
                            lease: self.lease,
                            excluding: Set(underWay.keys).union(self.unrecorded.ids).union(self.handoff.ids)
                        )
                        for claim in claimed { self.send(claim, in: &group, underWay: &underWay) }
                        mayFindMore = claimed.count == free
                        claimFailure = nil
                    } catch  where Task.isCancelled {
                        // Shutting down: a claim cut short is no failure (nothing more is claimed).
                    } catch {
                        // Tried again at the next tick while sends are under way; else the pass
                        // fails, and the scheduler tries again after its retry delay.
                        self.logger.error("could not claim messages to send", metadata: ["error": "\(error)"])
                        claimFailure = error
                    }
                }
                guard !underWay.isEmpty else { break }
                // A slow send must not hold back a message that falls due meanwhile: look
                // again every tick while any is under way. Shutting down, the ticks go on (a
                // sleep of their own, which the shutdown does not cut) to renew the claims of
                // the sends it lets finish; nothing more is claimed.
                if !ticking {
                    group.addTask {
                        await Task { try? await Task.sleep(for: Self.lookAgainEvery) }.value
                        return nil
                    }
                    ticking = true
                }
                switch await group.next() {
                case .some(.some(let sent)):
                    underWay.removeValue(forKey: sent)
                    self.handoff.sendEnded()
                case .some(.none), .none:
                    ticking = false
                    mayFindMore = true
                    await self.writeHeldOutcomes()
                    if self.store.now >= renewedAt.addingTimeInterval(self.lease / 3) {
                        renewedAt = self.store.now
                        await self.renew(Array(underWay.values), at: renewedAt)
                    }
                }
            }
            group.cancelAll()
            return claimFailure
        }
        if let claimFailure { throw claimFailure }
        // Outcomes still held mean the store cannot be written: the pass fails, so the process's
        // health hears of it (the scheduler tries again after its retry delay).
        if let writeFailure = self.unrecorded.writeFailure { throw writeFailure }
    }

    /// Sends `claim` in `group`, under way until it ends.
    private func send(_ claim: ClaimedAlert, in group: inout TaskGroup<String?>, underWay: inout [String: AlertClaim]) {
        underWay[claim.alert.id] = claim.claim
        group.addTask {
            // A send is not cut short by a shutdown: it ends with its outcome.
            await Task { await self.deliver(claim) }.value
            return claim.alert.id
        }
    }

    /// Once stopped, the handoff takes no more, and what still waits in it goes back to the
    /// store.
    func stopped() async {
        await self.handBack()
    }

    /// Closes the handoff and hands what waits in it back to the store.
    private func handBack() async {
        await self.handBack(self.handoff.close())
    }

    /// Hands `waiting` back to the store: due again at once, for any process (not cut short by
    /// the shutdown).
    private func handBack(_ waiting: [ClaimedAlert]) async {
        guard !waiting.isEmpty else { return }
        let store = self.store
        do {
            try await Task { try await store.returnClaims(waiting.map(\.claim)) }.value
        } catch {
            // Their lease runs out instead (the store fails: no send would be recorded either).
            self.logger.error("could not hand back the messages claimed but not sent", metadata: ["error": "\(error)"])
        }
    }

    /// Keeps the claims on the messages under way, on those waiting in the handoff and on those
    /// whose outcome is held, for another lease: a send longer than its lease must not let
    /// another process send the message too.
    private func renew(_ underWay: [AlertClaim], at now: Date) async {
        let claims = underWay + self.handoff.claims + self.unrecorded.all.map(\.outcome.claim)
        guard !claims.isEmpty else { return }
        do {
            try await self.store.extendClaims(claims, lease: self.lease, now: now)
        } catch {
            self.logger.error("could not renew the claims of sends under way", metadata: ["error": "\(error)"])
        }
    }

    /// Writes again the outcomes that could not be written before.
    private func writeHeldOutcomes() async {
        for (_, outcome) in self.unrecorded.all {
            await self.record(outcome.claim, outcome.attempt, at: outcome.at)
        }
    }

    private func deliver(_ claim: ClaimedAlert) async {
        let alert = claim.alert
        let outcome: Result<String, DeliveryFailure>
        do {
            switch alert.channel {
            case .email:
                try await self.channels.mail.send(
                    try self.channels.email(
                        claim,
                        date: self.store.now,
                        // Stable across retries and restarts: a resend is recognizably the same message.
                        messageID: "\(alert.id)@\(self.messageDomain)"
                    )
                )
            case .push:
                guard try !alert.address.open().isEmpty else {
                    throw DeliveryFailure(
                        message: "no push token on the profile",
                        isPermanent: true,
                        mayHaveArrived: false
                    )
                }
                try await self.channels.push.send(try self.channels.push(claim))
            }
            outcome = .success("")
        } catch let failure as DeliveryFailure {
            outcome = .failure(failure)
        } catch let error as SealedValueUnreadable {
            // Damaged, or sealed under a key the data key file no longer holds (its id read
            // from the same bytes): no attempt will deliver it.
            outcome = .failure(
                DeliveryFailure(
                    message: "its address or words cannot be read: \(error)",
                    isPermanent: true,
                    mayHaveArrived: false
                )
            )
        } catch let error as SMTPError {
            outcome = .failure(
                DeliveryFailure(
                    // Kept in the alert row and logged: a server's reply may name the recipient.
                    message: error.description.maskingEmailAddresses,
                    isPermanent: error.isPermanent,
                    mayHaveArrived: error.mayHaveDelivered,
                    addressRefused: error.refusedRecipient
                )
            )
        } catch let error as PushRejected {
            outcome = .failure(DeliveryFailure(message: error.description, isPermanent: true, mayHaveArrived: false))
        } catch {
            // Nothing says how far it got.
            outcome = .failure(
                DeliveryFailure(message: "\(error)".maskingEmailAddresses, isPermanent: false, mayHaveArrived: true)
            )
        }
        if case .failure(let failure) = outcome {
            self.logger.warning(
                "alert not delivered",
                metadata: ["alert": "\(alert.id)", "kind": "\(alert.kind)", "error": "\(failure.message)"]
            )
        }
        await self.record(claim.claim, outcome, at: self.store.now)
    }

    private func record(_ claim: AlertClaim, _ attempt: Result<String, DeliveryFailure>, at now: Date) async {
        do {
            if try await !self.store.record(claim, attempt: attempt, now: now) {
                // Its lease ran out (the database was out of reach longer than it) and another
                // process claimed it again: that claim's attempt is the one recorded.
                self.logger.warning(
                    "a delivery's claim was taken over; its outcome is not recorded",
                    metadata: ["alert": "\(claim.id)"]
                )
            }
            self.unrecorded.remove(claim.id)
        } catch {
            self.unrecorded.hold(claim, attempt, at: now, because: error)
            self.logger.error(
                "could not record a delivery; it is kept and written again later",
                metadata: ["alert": "\(claim.id)", "error": "\(error)"]
            )
        }
    }
}

/// Delivery outcomes a sender knows but could not write yet (a full disk).
final class UnrecordedOutcomes: Sendable {
    struct Outcome: Sendable {
        var claim: AlertClaim
        var attempt: Result<String, DeliveryFailure>
        var at: Date
    }

    private struct State {
        var outcomes: [String: Outcome] = [:]
        /// Why the last one held could not be written; nil once none is held.
        var failure: (any Error)?
    }

    private let state = Mutex(State())

    var ids: Set<String> { self.state.withLock { Set($0.outcomes.keys) } }
    var all: [(id: String, outcome: Outcome)] { self.state.withLock { $0.outcomes.map { ($0.key, $0.value) } } }

    /// Why the last outcome held could not be written, while any is held.
    var writeFailure: (any Error)? { self.state.withLock { $0.failure } }

    func hold(_ claim: AlertClaim, _ attempt: Result<String, DeliveryFailure>, at: Date, because failure: any Error) {
        self.state.withLock { state in
            state.outcomes[claim.id] = Outcome(claim: claim, attempt: attempt, at: at)
            state.failure = failure
        }
    }

    func remove(_ id: String) {
        self.state.withLock { state in
            state.outcomes.removeValue(forKey: id)
            if state.outcomes.isEmpty { state.failure = nil }
        }
    }
}
