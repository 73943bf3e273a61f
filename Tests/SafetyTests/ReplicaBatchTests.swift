import Foundation
import HearthCore
import HearthPostgres
import HearthStore
import HearthTestSupport
import PostgresNIO
import Testing

@testable import SafetyService

/// On PostgreSQL a claim takes its batch in a handful of statements, and outcomes reported
/// together are written in one transaction: each message still ends as it would alone.
@Suite("Safety replicas: claims and outcomes in batches", .timeLimit(.minutes(2)), .serialized)
struct ReplicaBatchTests {
    static let due = ReplicaTests.t0 + 24 * ReplicaTests.hour

    @Test(
        "a batch of outcomes in one transaction: each as its own; one whose claim another process took over, not at all; a busy user's, later alone"
    )
    func outcomesTogether() async throws {
        try await withReplicas(count: 0) { replicas in
            let (first, second) = (try await replicas.openStore(), try await replicas.openStore())
            let alarms = try await Self.claimedAlarms(of: (0..<5).map { "user-\($0)" }, by: first, replicas)
            replicas.clock.set(Self.due + ReplicaTests.lease)
            let taken = try #require(
                try await second.claimDue(.email, now: replicas.clock.now(), limit: 1, lease: ReplicaTests.lease).first
            )
            let outcomes = alarms.map {
                DeliveryOutcome(claim: $0.claim, attempt: .success(""), at: replicas.clock.now())
            }
            // user-1's switch is being changed by another process meanwhile: left to be written alone.
            let written = try await second.database.transaction { db in
                try await db.lock("user-1")
                return try await first.recordTogether(outcomes)
            }
            #expect(
                written
                    == alarms.map { alarm -> Bool? in
                        alarm.alert.userID == "user-1" ? nil : alarm.alert.id != taken.alert.id
                    },
                "one transaction wrote them, but for the busy user's"
            )
            let busy = try #require(outcomes.first { $0.claim.id == alarms[1].alert.id })
            #expect(try await first.record([busy]).map { try $0.get() } == [alarms[1].alert.id != taken.alert.id])
            for alarm in alarms {
                let stored = try #require(
                    try await second.messages(of: alarm.alert.userID).first { $0.id == alarm.alert.id }
                )
                if alarm.alert.id == taken.alert.id {
                    #expect(stored.state == .pending && stored.claimedAt == taken.alert.claimedAt, "still the other's")
                } else {
                    #expect(stored.state == .sent && stored.claimedAt == nil && stored.attempts == 1)
                    #expect(
                        try stored.address.open().isEmpty && stored.body.open().isEmpty,
                        "a sent message keeps no words"
                    )
                }
            }
        }
    }

    @Test("a bounce in a batch is written alone: its contact bounces, the others are sent together")
    func bounceInABatch() async throws {
        try await withReplicas(count: 0) { replicas in
            let store = try await replicas.openStore()
            let alarms = try await Self.claimedAlarms(of: ["ana", "ben", "cyd"], by: store, replicas)
            let refused = DeliveryFailure(
                message: "550 no such user",
                isPermanent: true,
                mayHaveArrived: false,
                addressRefused: true
            )
            let now = replicas.clock.now()
            let results = await store.record(
                alarms.map { alarm in
                    DeliveryOutcome(
                        claim: alarm.claim,
                        attempt: alarm.alert.userID == "ben" ? .failure(refused) : .success(""),
                        at: now
                    )
                }
            )
            #expect(try results.map { try $0.get() } == [true, true, true])
            for alarm in alarms {
                let user = alarm.alert.userID
                let stored = try #require(try await store.messages(of: user).first { $0.id == alarm.alert.id })
                #expect(stored.state == (user == "ben" ? .failed : .sent), "\(user)")
                let contact = try #require(try await store.contacts(user).first)
                #expect(contact.consent.state == (user == "ben" ? .bounced : .confirmed), "\(user)")
            }
        }
    }

    @Test("a claim leaves out what its process has under way and a user whose switch is changing")
    func claimLeavesOut() async throws {
        try await withReplicas(count: 0) { replicas in
            let (store, other) = (try await replicas.openStore(), try await replicas.openStore())
            for user in ["ana", "ben", "cyd"] { try await replicas.setUpSwitch(user, on: store) }
            replicas.clock.set(Self.due)
            _ = try await store.decideDue(now: Self.due, limit: 10)
            let pending = try await store.messages(of: "ana").filter { $0.kind == MessageKind.alert }
            let underWay = try #require(pending.first).id
            // Ben's switch is being changed by another process while the claim runs.
            let claimed = try await other.database.transaction { db in
                try await db.lock("ben")
                return try await store.claimDue(
                    .email,
                    now: Self.due,
                    limit: 10,
                    lease: ReplicaTests.lease,
                    excluding: [underWay]
                )
            }
            let alarms = claimed.filter { $0.alert.kind == MessageKind.alert }
            #expect(alarms.map(\.alert.userID) == ["cyd"])
            #expect(alarms.first?.links?.optOut != nil, "an email to a contact carries its links")
            let anas = try #require(try await store.messages(of: "ana").first { $0.id == underWay })
            #expect(anas.claimedAt == nil && anas.state == .pending, "left as it was")
            let next = try await store.claimDue(.email, now: Self.due, limit: 10, lease: ReplicaTests.lease)
            #expect(Set(next.filter { $0.alert.kind == MessageKind.alert }.map(\.alert.userID)) == ["ana", "ben"])
        }
    }

    @Test("a due batch decides each switch as it would alone: one's alarm, another's warning, each its next due time")
    func dueBatchDecidesEach() async throws {
        try await withReplicas(count: 0) { replicas in
            let store = try await replicas.openStore()
            try await replicas.setUpSwitch("ana", on: store)
            try await replicas.setUpSwitch("ben", on: store)
            // Ben checks in two hours later: his deadline is two hours after ana's.
            replicas.clock.set(ReplicaTests.t0 + 2 * ReplicaTests.hour)
            _ = try await store.recordHeartbeat("ben", timeZone: nil, deviceInfo: "", requestID: "later", source: "app")
            #expect(try await store.decideDue(now: Self.due, limit: 10) == 2, "both in one batch")
            let switchKinds = Set(SwitchClock.items.map(\.kind))
            let anas = try await store.messages(of: "ana").filter { switchKinds.contains($0.kind) }
            #expect(anas.map(\.kind) == ["alert"], "past her deadline: the alarm alone, no warning beside it")
            #expect(anas.first?.contactID == (try await store.contacts("ana").first?.id))
            #expect(anas.first?.address == "ana@contacts.example" && anas.first?.state == .pending)
            let bens = try await store.messages(of: "ben").filter { switchKinds.contains($0.kind) }
            #expect(bens.map(\.kind) == ["warning_180"], "three hours before his deadline: that warning")
            let (ana, ben) = (try await store.profile("ana"), try await store.profile("ben"))
            #expect(ana?.nextDueAt == nil, "nothing left to decide for her")
            #expect(ben?.nextDueAt == ReplicaTests.t0 + 25 * ReplicaTests.hour, "his one-hour warning")
            #expect(try await store.decideDue(now: Self.due, limit: 10) == 0, "each decided once")
        }
    }

    /// `users`' switches set up through `store`, their alarms decided when due and claimed by it.
    static func claimedAlarms(of users: [String], by store: PostgresSafetyStore, _ replicas: Replicas) async throws
        -> [ClaimedAlert]
    {
        for user in users { try await replicas.setUpSwitch(user, on: store) }
        replicas.clock.set(Self.due)
        _ = try await store.decideDue(now: Self.due, limit: 100)
        let alarms = try await store.claimDue(.email, now: Self.due, limit: 100, lease: ReplicaTests.lease)
            .filter { $0.alert.kind == MessageKind.alert }
        try #require(alarms.count == users.count)
        return alarms.sorted { $0.alert.userID < $1.alert.userID }
    }
}
