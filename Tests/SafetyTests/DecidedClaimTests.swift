import Foundation
import HearthCore
import HearthMail
import HearthPostgres
import HearthPush
import HearthStore
import HearthTestSupport
import Logging
import Testing

@testable import SafetyService

/// A decision claims for its process's senders the messages that go out at once, as it records
/// them (``ClaimRoom``, ``ClaimHandoff``): no claim of their own, and whatever a stopping sender
/// never began goes back to the store, due at once for any process.
@Suite("Safety: messages claimed as they are decided", .timeLimit(.minutes(2)))
struct DecidedClaimTests {
    static let due = ReplicaTests.t0 + 24 * ReplicaTests.hour
    static let lease: TimeInterval = 60

    @Test(
        "a decision claims what goes out at once, as many as its room allows; the rest waits for a sender's claim",
        arguments: StoreKind.allCases
    )
    func claimsItsRoom(store kind: StoreKind) async throws {
        try await withDecidingStore(kind) { store, clock in
            let decided = try await Self.decideAlarms(of: ["ana", "ben"], on: store, clock, emails: 1)
            #expect(decided.looked == 2)
            let claimed = try #require(decided.claimed.first)
            #expect(decided.claimed.count == 1, "the room of one email")
            #expect(claimed.alert.kind == MessageKind.alert && claimed.alert.channel == .email)
            #expect(claimed.alert.attempts == 1 && claimed.alert.claimedAt == store.now)
            #expect(claimed.alert.nextAttemptAt == store.now.addingTimeInterval(Self.lease))
            let stored = try #require(
                try await store.messages(of: claimed.alert.userID).first { $0.id == claimed.alert.id }
            )
            #expect(
                stored.state == .pending && stored.attempts == 1 && stored.claimedAt == store.now,
                "inserted claimed"
            )
            // The other alarm is left to any sender's claim; the claimed one is under way.
            let other = try await store.claimDue(.email, now: Self.due, limit: 10, lease: Self.lease)
            #expect(other.map(\.alert.kind) == [MessageKind.alert])
            #expect(other.map(\.alert.userID) == [claimed.alert.userID == "ana" ? "ben" : "ana"])
            // Its links were stored with it: its opt-out acts.
            let optOut = try #require(claimed.links?.optOut)
            #expect(try await store.answer(optOut, .optOut).changed)
        }
    }

    @Test(
        "claims handed back are due again at once, their attempt uncounted; one a check-in cancelled stays so, with no all-clear",
        arguments: StoreKind.allCases
    )
    func handedBack(store kind: StoreKind) async throws {
        try await withDecidingStore(kind) { store, clock in
            let claimed = try await Self.decideAlarms(of: ["ana", "ben"], on: store, clock, emails: 10).claimed
            #expect(claimed.count == 2)
            // Ana checks in before her alarm was sent: it is cancelled while claimed.
            _ = try await store.recordHeartbeat("ana", timeZone: nil, deviceInfo: "", requestID: "back", source: "app")
            clock.set(Self.due + 1)
            try await store.returnClaims(claimed.map(\.claim))
            let ben = try #require(try await Self.alarm(of: "ben", in: store))
            #expect(ben.state == .pending && ben.attempts == 0 && ben.claimedAt == nil)
            #expect(ben.nextAttemptAt == Self.due + 1, "due again at once")
            let ana = try #require(try await Self.alarm(of: "ana", in: store))
            #expect(ana.state == .cancelled && ana.attempts == 0 && ana.claimedAt == nil)
            // Ben's is claimed again; handing back the old claim leaves the new one alone.
            let again = try await store.claimDue(.email, now: Self.due + 1, limit: 10, lease: Self.lease)
            #expect(again.map(\.alert.id) == [ben.id])
            try await store.returnClaims(claimed.filter { $0.alert.userID == "ben" }.map(\.claim))
            let retaken = try #require(try await Self.alarm(of: "ben", in: store))
            #expect(retaken.attempts == 1 && retaken.claimedAt == again.first?.alert.claimedAt)
        }
    }

    @Test("only what no later effect of its user cancels may be claimed")
    func laterCancel() {
        let remember = SwitchEffect.forgetSkippedReminder(key: "daily")
        #expect(!DecidedClaims.mayClaim(effectAt: 0, of: [remember, .cancelPending(.warnings)]))
        #expect(DecidedClaims.mayClaim(effectAt: 1, of: [.cancelPending(.warnings), remember]))
        #expect(DecidedClaims.mayClaim(effectAt: 0, of: [remember]))
    }

    @Test(
        "a sender sends what the decider handed it without claiming it again; stopped, it hands back what waits and takes no more",
        arguments: StoreKind.allCases
    )
    func senderAndHandoff(store kind: StoreKind) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await withDecidingStore(kind) { store, clock in
            // Nothing waits past its longest wait here, however slow the machine; its ends all count.
            let handoff = ClaimHandoff(capacity: 2, longestWait: .seconds(3600))
            let sender = Self.sender(store, sink: sink, handoff: handoff)
            let decided = try await Self.decideAlarms(
                of: ["ana", "ben", "cyd"],
                on: store,
                clock,
                emails: handoff.room
            )
            .claimed
            #expect(decided.count == 2, "the handoff's room")
            #expect(handoff.put(decided).isEmpty)
            #expect(handoff.room == 0)
            #expect(try await sender.nextDueTime() == .distantPast, "what waits goes out at once")
            try await sender.runDue(now: Self.due)
            #expect(handoff.isEmpty && handoff.room == 2)
            #expect(handoff.recentEnds == 2, "its sends' ends told (at most its capacity counted)")
            try await eventually("three alarms sent") { try sink.messageCount() == 3 }
            for user in ["ana", "ben", "cyd"] {
                let alarm = try #require(try await Self.alarm(of: user, in: store))
                #expect(alarm.state == .sent && alarm.attempts == 1, "\(user): claimed once")
            }

            // Stopped with a claim waiting: it goes back, and the handoff takes no more.
            for user in ["dan", "eve"] { try await store.armSwitch(user) }
            clock.set(Self.due + 24 * ReplicaTests.hour)
            let waiting = try await store.decideDue(
                now: clock.now(),
                limit: 10,
                claiming: ClaimRoom(free: [.email: 1], lease: Self.lease)
            ).claimed
            #expect(waiting.count == 1)
            #expect(handoff.put(waiting).isEmpty)
            await sender.stopped()
            #expect(handoff.room == 0 && handoff.isEmpty)
            let user = try #require(waiting.first?.alert.userID)
            let returned = try #require(try await Self.alarm(of: user, in: store))
            #expect(returned.state == .pending && returned.claimedAt == nil && returned.attempts == 0)
            #expect(handoff.put(waiting).map(\.alert.id) == waiting.map(\.alert.id), "refused once closed")
        }
    }

    @Test(
        "a handoff's room follows the sends that ended in the last half of its longest wait, from its least up to its capacity"
    )
    func roomFollowsThePace() {
        let handoff = ClaimHandoff(capacity: 8, atLeast: 3, longestWait: .seconds(3600))
        #expect(handoff.room == 3, "no send ended yet: its least")
        for _ in 0..<5 { handoff.sendEnded() }
        #expect(handoff.room == 5)
        for _ in 0..<10 { handoff.sendEnded() }
        #expect(handoff.room == 8 && handoff.recentEnds == 8, "at most its capacity")
        // Every end is past half of a negative longest wait at once: forgotten.
        let stale = ClaimHandoff(capacity: 8, atLeast: 3, longestWait: .seconds(-1))
        for _ in 0..<5 { stale.sendEnded() }
        #expect(stale.recentEnds == 0 && stale.room == 3, "only recent ends count")
        #expect(ClaimHandoff(capacity: 2, atLeast: 64).room == 2, "its least is within its capacity")
    }

    @Test("what waited longer than a handoff's longest wait is taken out, to go back to the store")
    func overdue() async throws {
        try await withDecidingStore(.sqlite) { store, clock in
            let claimed = try await Self.decideAlarms(of: ["ana", "ben"], on: store, clock, emails: 2).claimed
            let patient = ClaimHandoff(capacity: 2, longestWait: .seconds(3600))
            #expect(patient.put(claimed).isEmpty && patient.room == 0)
            #expect(patient.overdue().isEmpty)
            let hasty = ClaimHandoff(capacity: 2, longestWait: .seconds(-1))
            #expect(hasty.put(claimed).isEmpty)
            #expect(hasty.overdue().map(\.alert.id) == claimed.map(\.alert.id))
            #expect(hasty.isEmpty && hasty.room == 2)
        }
    }

    // MARK: Helpers

    /// Arms `users`' switches, then decides at their deadline with room for `emails` emails.
    static func decideAlarms(of users: [String], on store: any SafetyPersistence, _ clock: ManualClock, emails: Int)
        async throws -> DecidedBatch
    {
        for user in users { try await store.armSwitch(user) }
        clock.set(Self.due)
        return try await store.decideDue(
            now: Self.due,
            limit: 10,
            claiming: ClaimRoom(free: [.email: emails], lease: Self.lease)
        )
    }

    static func alarm(of user: String, in store: any SafetyPersistence) async throws -> AlertRecord? {
        try await store.messages(of: user).first { $0.kind == MessageKind.alert }
    }

    static func sender(_ store: any SafetyPersistence, sink: SMTPSink, handoff: ClaimHandoff) -> AlertSender {
        var logger = Logger(label: "decided-claims")
        logger.logLevel = .critical
        return AlertSender(
            channel: .email,
            store: store,
            channels: AlertChannels(
                mail: SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .none)),
                from: MailAddress("alerts@hearth.example", name: "Hearth"),
                push: WebhookPushSender(url: "http://127.0.0.1:9/push")
            ),
            logger: logger,
            messageDomain: "hearth.local",
            lease: Self.lease,
            handoff: handoff
        )
    }
}

/// Runs `body` on a new store of `kind` whose clock the test moves: a SQLite store in memory, or
/// one on a PostgreSQL server of its own.
func withDecidingStore(
    _ kind: StoreKind,
    _ body: (any SafetyPersistence, ManualClock) async throws -> Void
) async throws {
    let clock = ManualClock(ReplicaTests.t0)
    let keys = DataKeys.random()
    guard kind == .postgres else {
        return try await body(try SafetyStore(location: .inMemory, keys: keys, clock: clock), clock)
    }
    try await withPostgresServer { server in
        var logger = Logger(label: "decided-claims")
        logger.logLevel = .critical
        let store = try await PostgresSafetyStore.open(server.location, keys: keys, clock: clock, logger: logger)
        try await whileServing(store) { try await body(store, clock) }
    }
}
