import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import NIOCore
import Testing

@Suite("Push outbox", .timeLimit(.minutes(1)))
struct OutboxTests {
    let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    private func store(clock: ManualClock, at path: String? = nil) throws -> Store {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: things") { db in
            try db.execute(sql: "CREATE TABLE thing (id INTEGER PRIMARY KEY)")
        }
        Outbox.registerMigration(in: &migrator)
        return try Store(location: path.map { .file($0) } ?? .inMemory, migrator: migrator, clock: clock)
    }

    private func deliverer(_ store: Store, _ clock: ManualClock, _ listener: WebhookListener) -> OutboxDeliverer {
        OutboxDeliverer(
            store: store,
            sender: WebhookPushSender(url: "http://127.0.0.1:\(listener.port)/push"),
            logger: self.logger
        )
    }

    private func message(_ n: Int, clock: ManualClock) -> PushMessage {
        PushMessage(
            userID: "olivia",
            kind: "checkin.created",
            title: "New check-in",
            body: "update \(n)",
            createdAt: clock.now()
        )
    }

    @Test("a message withdrawn while the sends ahead of it in its batch are under way is not sent")
    func withdrawnWhileBatchSends() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        // Every answer held until released: the first eight sends stay under way.
        let listener = try await WebhookListener(answerTogether: .max)
        // A second apart, so that the batch sends them in this order.
        let messages = (0..<9).map { n in
            defer { clock.advance(by: 1) }
            return self.message(n, clock: clock)
        }
        try await store.writer.write { db in for message in messages { try Outbox.enqueue(message, in: db) } }
        let deliverer = self.deliverer(store, clock, listener)
        let sending = Task { try await deliverer.deliverDue() }
        try await eventually("eight sends under way (the outbox sends 8 at once)") { listener.received.count == 8 }
        // The ninth, read in the same batch, is taken back (its prompt answered meanwhile).
        let withdrawn = try await store.writer.write { db in try Outbox.withdraw(id: messages[8].id, in: db) }
        #expect(withdrawn)
        listener.releaseHeld()
        #expect(try await sending.value == 8)
        #expect(listener.received.count == 8)
        #expect(!listener.received.contains { $0.headers["idempotency-key"] == messages[8].id })
        await listener.close()
    }

    @Test(
        "an outcome that cannot be written (a full disk) is held, not sent again pass after pass, and written once it can be"
    )
    func outcomeNotWritten() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        let listener = try await WebhookListener()
        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        try await store.writer.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER disk_full BEFORE UPDATE OF delivered_at ON push_outbox
                    WHEN NEW.delivered_at IS NOT NULL BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """
            )
        }
        let deliverer = self.deliverer(store, clock, listener)
        await #expect(throws: (any Error).self) { try await deliverer.deliverDue() }
        #expect(listener.received.count == 1)
        for _ in 0..<3 {
            clock.advance(by: 1)
            await #expect(throws: (any Error).self) { try await deliverer.deliverDue() }
        }
        #expect(listener.received.count == 1, "not sent again while its outcome waits")

        try await store.writer.write { db in try db.execute(sql: "DROP TRIGGER disk_full") }
        #expect(try await deliverer.deliverDue() == 0)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)
        #expect(listener.received.count == 1)
        await listener.close()
    }

    @Test("a shutdown lets the sends under way end with their outcome recorded, and starts no more")
    func shutdownMidBatch() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        let listener = try await WebhookListener(answerTogether: .max)
        let messages = (0..<9).map { self.message($0, clock: clock) }
        try await store.writer.write { db in for message in messages { try Outbox.enqueue(message, in: db) } }
        let deliverer = self.deliverer(store, clock, listener)
        let sending = Task { try await deliverer.deliverDue() }
        try await eventually("eight sends under way") { listener.received.count == 8 }
        // The scheduler's pass is cancelled (SIGTERM) while the webhook holds its answers.
        sending.cancel()
        listener.releaseHeld()
        _ = try? await sending.value
        // The webhook took those eight: they are recorded as delivered, not sent again at the
        // next start; the ninth was not begun.
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 1)
        #expect(listener.received.count == 8)
        await listener.close()
    }

    @Test(
        "messages reach a real webhook once each, with their idempotency key; failures retry with backoff; a restart sends nothing twice"
    )
    func deliveryRetryAndRestart() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-outbox-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("service.sqlite").path
        let listener = try await WebhookListener(statuses: [500, 503])
        let url = "http://127.0.0.1:\(listener.port)/push"
        var store = try self.store(clock: clock, at: path)
        let messages = (0..<3).map { self.message($0, clock: clock) }
        try await store.writer.write { db in for message in messages { try Outbox.enqueue(message, in: db) } }

        let deliverer = OutboxDeliverer(
            store: store,
            sender: WebhookPushSender(url: url),
            logger: self.logger
        )
        #expect(try await deliverer.deliverDue() == 1)  // 500, 503, then 200
        #expect(try await deliverer.deliverDue() == 0, "the failed two wait for their backoff")
        clock.advance(by: 1)
        #expect(try await deliverer.deliverDue() == 2)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)

        // Restart: a new deliverer over the reopened file sends nothing again.
        store = try self.store(clock: clock, at: path)
        let restarted = OutboxDeliverer(
            store: store,
            sender: WebhookPushSender(url: url),
            logger: self.logger
        )
        clock.advance(by: 3600)
        #expect(try await restarted.deliverDue() == 0)

        let received = listener.received
        #expect(received.count == 5)
        #expect(received.allSatisfy { $0.method == "POST" && $0.path == "/push" })
        #expect(received.allSatisfy { $0.headers["content-type"] == "application/json" })
        let accepted = Set(received.suffix(3).compactMap { $0.headers["idempotency-key"] })
        #expect(accepted == Set(messages.map(\.id)))
        let bodies = try received.map { try JSONSerialization.jsonObject(with: $0.body) as? [String: Any] }
        #expect(bodies.allSatisfy { $0?["userID"] as? String == "olivia" })
        await listener.close()
    }

    @Test("run by the due-time scheduler: sent as soon as it is woken, retried when its backoff ends")
    func scheduled() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let listener = try await WebhookListener(statuses: [503])
        let store = try self.store(clock: clock)
        let outbox = Outbox(store: store)
        let scheduler = outbox.deliverer(
            sender: WebhookPushSender(url: "http://127.0.0.1:\(listener.port)/push"),
            logger: self.logger
        )
        let running = Task { try await scheduler.run() }
        defer { running.cancel() }
        try await eventually("the deliverer sleeps with nothing to send") { scheduler.isSleeping }

        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        outbox.wake()
        try await eventually("the first attempt was made (503)") { listener.received.count == 1 }
        try await eventually("it sleeps until the retry") { scheduler.isSleeping }
        clock.advance(by: 1)
        try await eventually("the retry went through") { listener.received.count == 2 }
        try await eventually("nothing is pending") {
            try await store.writer.read { db in try Outbox.pending(in: db) } == 0
        }
        await listener.close()
    }

    @Test("messages due together are sent together (a webhook that answers only when eight wait gets all eight)")
    func sentTogether() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        let listener = try await WebhookListener(answerTogether: 8)
        let messages = (0..<8).map { self.message($0, clock: clock) }
        try await store.writer.write { db in for message in messages { try Outbox.enqueue(message, in: db) } }
        #expect(try await self.deliverer(store, clock, listener).deliverDue() == 8)
        #expect(Set(listener.received.compactMap { $0.headers["idempotency-key"] }) == Set(messages.map(\.id)))
        await listener.close()
    }

    @Test("a 2xx answer with a large body is a delivery, not a failure to retry")
    func largeAnswerBody() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        let listener = try await WebhookListener(responseBodySize: 200_000)
        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        #expect(try await self.deliverer(store, clock, listener).deliverDue() == 1)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)
        await listener.close()
    }

    @Test("a 4xx is a refusal: not retried, kept as failed")
    func rejected() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let listener = try await WebhookListener(statuses: [400])
        let store = try self.store(clock: clock)
        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        let deliverer = OutboxDeliverer(
            store: store,
            sender: WebhookPushSender(url: "http://127.0.0.1:\(listener.port)/push"),
            logger: self.logger
        )
        #expect(try await deliverer.deliverDue() == 0)
        clock.advance(by: 3600)
        #expect(try await deliverer.deliverDue() == 0)
        #expect(listener.received.count == 1)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)
        await listener.close()
    }

    @Test("a 1xx or 3xx left unfollowed says nothing about the message: retried, then delivered")
    func unfollowedAnswersRetry() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let listener = try await WebhookListener(statuses: [304, 101])
        let store = try self.store(clock: clock)
        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        let deliverer = self.deliverer(store, clock, listener)
        for _ in 0..<2 {
            #expect(try await deliverer.deliverDue() == 0)
            #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 1, "kept for later")
            clock.advance(by: 3600)
        }
        #expect(try await deliverer.deliverDue() == 1)
        #expect(listener.received.count == 3)
        await listener.close()
    }

    @Test("a message that no longer reads is dropped as failed, not retried forever")
    func unreadableMessage() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let listener = try await WebhookListener()
        let store = try self.store(clock: clock)
        try await store.writer.write { db in
            try Outbox.enqueue(self.message(1, clock: clock), in: db)
            try db.execute(sql: "UPDATE push_outbox SET message = '{\"userID\": 7'")
        }
        #expect(try await self.deliverer(store, clock, listener).deliverDue() == 0)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)
        let error = try await store.writer.read { db in
            try String.fetchOne(db, sql: "SELECT last_error FROM push_outbox WHERE failed_at IS NOT NULL")
        }
        #expect(error?.hasPrefix("unreadable message") == true, "\(error ?? "none")")
        #expect(listener.received.isEmpty)
        await listener.close()
    }

    @Test("delivered messages are kept a week, then deleted on a later pass; undelivered ones stay")
    func retention() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let listener = try await WebhookListener(statuses: [200, 503, 503])
        let store = try self.store(clock: clock)
        try await store.writer.write { db in
            try Outbox.enqueue(self.message(1, clock: clock), in: db)
            try Outbox.enqueue(self.message(2, clock: clock), in: db)
        }
        let deliverer = self.deliverer(store, clock, listener)
        try await deliverer.runDue(now: clock.now())  // one delivered, one to retry
        let rows = {
            try await store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox") }
        }
        #expect(try await rows() == 2)
        clock.advance(by: Outbox.retention + 1)
        try await deliverer.runDue(now: clock.now())
        #expect(try await rows() == 1, "the delivered one is gone")
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 1, "the other still waits")
        await listener.close()
    }

    @Test("an unreachable webhook keeps the message for later")
    func unreachable() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        try await store.writer.write { db in try Outbox.enqueue(self.message(1, clock: clock), in: db) }
        let deliverer = OutboxDeliverer(
            store: store,
            sender: WebhookPushSender(url: "http://127.0.0.1:1/push", timeout: .milliseconds(300)),
            logger: self.logger
        )
        #expect(try await deliverer.deliverDue() == 0)
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 1)
    }

    @Test("an enqueued message rolls back with the transaction that enqueued it")
    func rollback() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try self.store(clock: clock)
        struct Abort: Error {}
        await #expect(throws: Abort.self) {
            try await store.writer.write { db in
                try Outbox.enqueue(self.message(1, clock: clock), in: db)
                throw Abort()
            }
        }
        #expect(try await store.writer.read { db in try Outbox.pending(in: db) } == 0)
    }
}
