import Foundation
import GRDB
import HearthCore
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import Testing

@testable import TasksService

/// The ledger of account erasures in the tasks store: erasures recorded in the earlier order of
/// the parts, and how long a finished one is kept.
@Suite("Tasks: the erasure ledger", .timeLimit(.minutes(1)))
struct ErasureLedgerTests {
    static let requested = at("2026-06-01T10:00:00Z")

    /// One row of the ledger as the earlier order wrote it, at offsets from ``requested``.
    struct OldRow {
        var user: String
        var service: String
        var doneAfter: TimeInterval?
        var attempts: Int
        var nextAfter: TimeInterval?
    }

    /// A tasks store file as the version before checkins' part went first left it (migrated up to
    /// "v5: account erasures"), holding `rows`.
    static func writeOldLedger(at path: String, _ rows: [OldRow]) throws {
        let pool = try DatabasePool(path: path)
        try TaskMigrations.migrator.migrate(pool, upTo: "v5: account erasures")
        try pool.write { db in
            for row in rows {
                try db.execute(
                    sql: """
                        INSERT INTO erasure (user_id, service, requested_at, done_at, attempts, next_attempt_at,
                            last_error)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        row.user, row.service, Self.requested,
                        row.doneAfter.map { Self.requested.addingTimeInterval($0) }, row.attempts,
                        row.nextAfter.map { Self.requested.addingTimeInterval($0) },
                        row.doneAfter == nil && row.attempts > 0 ? "UNAVAILABLE: down" : "",
                    ]
                )
            }
        }
        try pool.close()
    }

    /// An erasure of `user` as the earlier order left it: tasks' part done at once, the others
    /// as given (done after some seconds, and the next try).
    static func old(
        _ user: String,
        checkins: (done: TimeInterval?, attempts: Int, next: TimeInterval?),
        routines: (done: TimeInterval?, attempts: Int, next: TimeInterval?),
        safety: (done: TimeInterval?, attempts: Int, next: TimeInterval?)
    ) -> [OldRow] {
        [
            OldRow(
                user: user,
                service: "checkins",
                doneAfter: checkins.done,
                attempts: checkins.attempts,
                nextAfter: checkins.next
            ),
            OldRow(user: user, service: "tasks", doneAfter: 0, attempts: 1, nextAfter: nil),
            OldRow(
                user: user,
                service: "safety",
                doneAfter: safety.done,
                attempts: safety.attempts,
                nextAfter: safety.next
            ),
            OldRow(
                user: user,
                service: "routines",
                doneAfter: routines.done,
                attempts: routines.attempts,
                nextAfter: routines.next
            ),
        ]
    }

    static func step(_ service: ErasedService, of user: String, in store: TaskStore) throws -> ErasureStep {
        try #require(try store.erasure(of: user).first { $0.service == service })
    }

    @Test(
        "erasures under way when routines went first still end: checkins' part falls due, routines' comes after it"
    )
    func oldLedgersEnd() async throws {
        let file = try TemporaryStoreFile()
        let ledgers: [[OldRow]] = [
            // Routines' part done; checkins' waiting, with no due time.
            Self.old("ana", checkins: (nil, 0, nil), routines: (1, 1, nil), safety: (1, 1, nil)),
            // Routines' part failing (a retry set); checkins' waiting; safety's failing too.
            Self.old("ben", checkins: (nil, 0, nil), routines: (nil, 3, 8), safety: (nil, 1, 2)),
            // Routines' part done, which made checkins' due; checkins' failing since.
            Self.old("cai", checkins: (nil, 2, 30), routines: (1, 1, nil), safety: (1, 1, nil)),
            // Finished.
            Self.old("dee", checkins: (5, 1, nil), routines: (1, 1, nil), safety: (1, 1, nil)),
        ]
        try Self.writeOldLedger(at: file.path, ledgers.flatMap { $0 })
        let clock = ManualClock(Self.requested.addingTimeInterval(60))
        let store = try TaskStore(location: file.location, clock: clock)
        let after = { (seconds: TimeInterval) in Self.requested.addingTimeInterval(seconds) }

        // Checkins' part is due (at once when it had no due time, at its retry otherwise);
        // routines' waits for it, made again where it was done before it.
        #expect(try Self.step(.checkins, of: "ana", in: store).nextAttemptAt == after(0))
        let anasRoutines = try Self.step(.routines, of: "ana", in: store)
        #expect(!anasRoutines.isDone && anasRoutines.nextAttemptAt == nil)
        #expect(try Self.step(.checkins, of: "ben", in: store).nextAttemptAt == after(0))
        let bensRoutines = try Self.step(.routines, of: "ben", in: store)
        #expect(bensRoutines.nextAttemptAt == nil && bensRoutines.attempts == 3)
        #expect(try Self.step(.safety, of: "ben", in: store).nextAttemptAt == after(2), "its retry, as it was")
        #expect(try Self.step(.checkins, of: "cai", in: store).nextAttemptAt == after(30))
        #expect(try Self.step(.routines, of: "cai", in: store).isDone == false)
        #expect(try store.erasure(of: "dee").allSatisfy(\.isDone), "a finished erasure stays as it was")
        #expect(try Self.step(.checkins, of: "dee", in: store).doneAt == after(5))

        let due = try store.dueErasureSteps(at: clock.now(), limit: 20).map { "\($0.user) \($0.service)" }
        #expect(Set(due) == ["ana checkins", "ben checkins", "ben safety", "cai checkins"])

        // Each ends in the new order: routines' part falls due once checkins' is done.
        try await store.recordErasure(.checkins, of: "ana", failure: nil)
        #expect(try Self.step(.routines, of: "ana", in: store).nextAttemptAt == store.now)
        try await store.recordErasure(.routines, of: "ana", failure: nil)
        #expect(try store.erasure(of: "ana").allSatisfy(\.isDone))
        try await store.recordErasure(.checkins, of: "cai", failure: nil)
        let dueThen = try store.dueErasureSteps(at: clock.now(), limit: 20)
        #expect(dueThen.contains { $0.user == "cai" && $0.service == .routines })
    }

    @Test(
        "a finished erasure's rows go 30 days after its last part, the worker waking for it though no erasure is due"
    )
    func prunedOnTime() async throws {
        let file = try TemporaryStoreFile()
        let clock = ManualClock(Self.requested)
        let store = try TaskStore(location: file.location, clock: clock)
        _ = try await store.requestErasure("olivia")
        clock.advance(by: 5)
        for service in [ErasedService.checkins, .safety, .routines] {
            try await store.recordErasure(service, of: "olivia", failure: nil)
        }
        let finished = Self.requested.addingTimeInterval(5)
        #expect(try store.erasure(of: "olivia").allSatisfy(\.isDone))
        #expect(try store.nextErasureTime() == nil, "no part is due")
        #expect(try store.nextErasurePruneTime() == finished.addingTimeInterval(TaskStore.erasureRetention))

        // No peer is called: nothing is due. They listen nowhere.
        let nowhere = RPCClient(host: "127.0.0.1", port: 9)
        var logger = Logger(label: "erasure-ledger")
        logger.logLevel = .critical
        let worker = DueTimeScheduler(
            work: ErasureWork(
                store: store,
                peers: AccountPeers(
                    checkins: nowhere,
                    routines: nowhere,
                    safety: nowhere,
                    credentials: .init(checkins: "unused", routines: "unused", safety: "unused")
                ),
                logger: logger
            ),
            clock: clock,
            logger: logger
        )
        let running = Task { try await worker.run() }
        do {
            try await eventually("the worker sleeps") { worker.hasHandled(upTo: clock.now()) }
            // A second short of 30 days (a pass asked for): kept.
            let almost = finished.addingTimeInterval(TaskStore.erasureRetention - 1)
            clock.set(almost)
            worker.wake()
            try await eventually("the worker looked at the ledger a second short of 30 days") {
                worker.hasHandled(upTo: almost)
            }
            #expect(try store.erasure(of: "olivia").count == ErasedService.allCases.count)

            // 30 days after: the worker wakes by itself (nothing wakes it), and the user's id goes.
            clock.set(finished.addingTimeInterval(TaskStore.erasureRetention))
            try await eventually("the ledger forgot olivia") { try store.erasure(of: "olivia").isEmpty }
            #expect(try store.nextErasurePruneTime() == nil)
        } catch {
            running.cancel()
            _ = await running.result
            await nowhere.close()
            throw error
        }
        running.cancel()
        _ = await running.result
        await nowhere.close()
    }
}
