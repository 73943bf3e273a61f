public import Foundation
public import GRDB
import HearthCore
public import HearthScheduler
public import HearthStore
public import Logging
import Synchronization

/// A durable outbox of pushes in a service's own SQLite file. A service enqueues a message in
/// the same transaction as the change it reports, so the two commit or fail together, and
/// calls ``wake()`` after the commit; the deliverer (a ``DueTimeScheduler`` over
/// ``OutboxDeliverer``) sends it at once, retrying with backoff until the receiver accepts it.
public final class Outbox: Sendable {
    private let store: Store
    private let slot = SchedulerSlot()

    /// An outbox in `store`, whose migrations include ``registerMigration(in:)``.
    public init(store: Store) {
        self.store = store
    }

    /// Something was enqueued: send it now (when the deliverer runs).
    public func wake() {
        self.slot.wake()
    }

    /// The part that sends, with `sender`. Run it beside the server.
    public func deliverer(sender: any PushSender, logger: Logger) -> DueTimeScheduler {
        self.slot.fill(
            work: OutboxDeliverer(store: self.store, sender: sender, logger: logger),
            clock: self.store.clock,
            logger: logger
        )
    }

    /// Adds the outbox table to a service's migrations (append this once, in order).
    public static func registerMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("outbox v1: push_outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE push_outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        message TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at DATETIME NOT NULL,
                        delivered_at DATETIME,
                        failed_at DATETIME,
                        last_error TEXT
                    );
                    CREATE INDEX push_outbox_due ON push_outbox(next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
                    """
            )
        }
        migrator.registerMigration("outbox v2: settled messages by time") { db in
            try db.execute(sql: SettledRows.indexSQL(table: "push_outbox"))
        }
    }

    /// How long a delivered or abandoned message is kept (for a look at what went out): a week.
    public static let retention: TimeInterval = 7 * 86_400

    /// Enqueues `message` inside the caller's write transaction.
    public static func enqueue(_ message: PushMessage, in db: Database) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try db.cachedStatement(sql: "INSERT INTO push_outbox (id, message, next_attempt_at) VALUES (?, ?, ?)")
            .execute(arguments: [
                message.id, String(decoding: try encoder.encode(message), as: UTF8.self), message.createdAt.stored,
            ])
    }

    /// Deletes, inside the caller's write transaction, every message to `user`, delivered or not
    /// (an account erasure); answers how many. The table has no user column: the message's own
    /// `userID` is read (a scan of the week of messages kept).
    public static func erase(messagesTo user: String, in db: Database) throws -> Int {
        // A message that is not JSON (never written so) is no one's.
        try db.execute(
            sql: """
                DELETE FROM push_outbox
                WHERE CASE WHEN json_valid(message) THEN json_extract(message, '$.userID') END = ?
                """,
            arguments: [user]
        )
        return db.changesCount
    }

    /// Takes back, inside the caller's write transaction, a message not yet delivered (what it
    /// announced is no longer true). Answers whether there was one.
    @discardableResult
    public static func withdraw(id: String, in db: Database) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM push_outbox WHERE id = ? AND delivered_at IS NULL")
            .execute(arguments: [id])
        return db.changesCount > 0
    }

    /// What is still waiting, for status pages and tests.
    public static func pending(in db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox WHERE delivered_at IS NULL AND failed_at IS NULL")
            ?? 0
    }
}

/// Sends what the outbox holds, oldest due first; a message is marked delivered only after the
/// receiver accepted it, so a crash in between sends it again (with the same `Idempotency-Key`),
/// and nothing is ever lost. Failures retry with exponential backoff up to `maxDelay`. An
/// outcome that cannot be written (a full disk) is held in memory and written before anything
/// more is sent: the message is not sent again pass after pass meanwhile.
public final class OutboxDeliverer: DueWork {
    private let store: Store
    private let sender: any PushSender
    private var clock: any WallClock { self.store.clock }
    private let logger: Logger
    private let maxDelay: TimeInterval
    private let settled = SettledRows(table: "push_outbox", retention: Outbox.retention)
    private let unrecorded = Mutex<[String: Outcome]>([:])

    /// A deliverer of what `store`'s outbox holds, on the store's clock.
    public init(store: Store, sender: any PushSender, maxDelay: TimeInterval = 300, logger: Logger) {
        self.store = store
        self.sender = sender
        self.maxDelay = maxDelay
        self.logger = logger
    }

    public func nextDueTime() async throws -> Date? {
        try self.store.read { db in
            try StoredDate.fetchOne(
                db.cachedStatement(
                    sql: "SELECT MIN(next_attempt_at) FROM push_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
                )
            )?.date
        }
    }

    public func runDue(now: Date) async throws {
        try await self.deliverDue()
        try await self.settled.pruneIfDue(now: now, writer: self.store.writer)
    }

    /// How many messages are sent at once: a preset time (every user's 09:00) makes many due
    /// together, and one slow webhook answer must not hold the rest back. AsyncHTTPClient's
    /// shared client opens at most 8 connections to one host, so more would only queue there.
    static let sendsAtOnce = 8

    /// Sends every message due now, `sendsAtOnce` at a time, recording each outcome as soon
    /// as it is known (a crash repeats only sends whose outcome was not recorded yet, with the
    /// same idempotency key); returns how many were delivered. When the store fails, nothing
    /// more is sent, and the run fails once every send under way has ended (an outcome that
    /// could not be written is held, and written first the next time).
    @discardableResult
    public func deliverDue() async throws -> Int {
        try await self.recordHeldOutcomes()
        let now = self.clock.now()
        let due = try self.store.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, message, attempts FROM push_outbox
                        WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
                        ORDER BY next_attempt_at, id LIMIT 100
                        """
                ),
                arguments: [now.stored]
            ).map { row in Due(id: row[0], message: row[1], attempts: row[2]) }
        }
        let tally = Mutex<(delivered: Int, firstError: (any Error)?)>((0, nil))
        await due.forEachConcurrently(atMost: Self.sendsAtOnce) { due in
            // None begun once shutting down; one under way is not cut short, but ends with its
            // outcome recorded (cut short after the webhook took it, it would go again at the
            // next start).
            guard !Task.isCancelled else { return false }
            do {
                if try await Task(operation: { try await self.deliver(due) }).value {
                    tally.withLock { $0.delivered += 1 }
                }
                return true
            } catch {
                tally.withLock { if $0.firstError == nil { $0.firstError = error } }
                return false
            }
        }
        let (delivered, firstError) = tally.withLock { $0 }
        if let firstError { throw firstError }
        return delivered
    }

    private struct Due: Sendable {
        var id: String
        var message: String
        var attempts: Int
    }

    /// Sends one message and records what came of it; returns whether it was delivered.
    private func deliver(_ due: Due) async throws -> Bool {
        // Read again just before sending: the batch was read before the sends ahead of this one
        // (each up to the webhook's timeout), and what it announces may have been withdrawn
        // meanwhile (a prompt answered, a task cancelled).
        let queued = try self.store.read { db in
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT 1 FROM push_outbox WHERE id = ? AND delivered_at IS NULL AND failed_at IS NULL"
                ),
                arguments: [due.id]
            ) ?? false
        }
        guard queued else { return false }
        let outcome = await self.send(due)
        do {
            // Outcomes of sends made together share a commit.
            try await self.store.write { db in try outcome.record(id: due.id, in: db) }
        } catch {
            self.unrecorded.withLock { $0[due.id] = outcome }
            throw error
        }
        return if case .delivered = outcome { true } else { false }
    }

    /// Writes the outcomes a full disk kept from being written; throws (sending nothing more)
    /// while it still cannot.
    private func recordHeldOutcomes() async throws {
        for (id, outcome) in self.unrecorded.withLock({ $0 }) {
            try await self.store.write { db in try outcome.record(id: id, in: db) }
            _ = self.unrecorded.withLock { $0.removeValue(forKey: id) }
        }
    }

    /// What came of one attempt, and how it is recorded.
    private enum Outcome: Sendable {
        case delivered(at: Date)
        /// Given up: `attempted` when the receiver was asked (and refused).
        case failed(at: Date, error: String, attempted: Bool)
        case retry(at: Date, error: String)

        func record(id: String, in db: Database) throws {
            switch self {
            case .delivered(let at):
                try db.cachedStatement(
                    sql: "UPDATE push_outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?"
                )
                .execute(arguments: [at.stored, id])
            case .failed(let at, let error, let attempted):
                try db.cachedStatement(
                    sql: "UPDATE push_outbox SET failed_at = ?, attempts = attempts + ?, last_error = ? WHERE id = ?"
                ).execute(arguments: [at.stored, attempted ? 1 : 0, error, id])
            case .retry(let at, let error):
                try db.cachedStatement(
                    sql:
                        "UPDATE push_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?"
                ).execute(arguments: [at.stored, error, id])
            }
        }
    }

    /// Sends one message; what came of it.
    private func send(_ due: Due) async -> Outcome {
        let id = due.id
        let message: PushMessage
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            message = try decoder.decode(PushMessage.self, from: Data(due.message.utf8))
        } catch {
            // It will not decode next time either.
            self.logger.error("push message unreadable; dropped", metadata: ["id": "\(id)", "error": "\(error)"])
            return .failed(at: self.clock.now(), error: "unreadable message: \(error)", attempted: false)
        }
        do {
            if let expiresAt = message.expiresAt, self.clock.now() >= expiresAt {
                throw PushExpired(expiresAt: expiresAt)
            }
            try await self.sender.send(message)
            return .delivered(at: self.clock.now())
        } catch let expired as PushExpired {
            self.logger.info("push expired unsent; dropped", metadata: ["id": "\(id)"])
            return .failed(at: self.clock.now(), error: "\(expired)", attempted: false)
        } catch let rejected as PushRejected {
            self.logger.warning("push rejected", metadata: ["id": "\(id)", "error": "\(rejected)"])
            return .failed(at: self.clock.now(), error: "\(rejected)", attempted: true)
        } catch {
            let delay = RetryPause.after(attempts: due.attempts, longest: self.maxDelay)
            self.logger.log(
                level: RetryLog.level(afterAttempts: due.attempts),
                "push failed; will retry",
                metadata: ["id": "\(id)", "attempts": "\(due.attempts + 1)", "in_s": "\(delay)", "error": "\(error)"]
            )
            return .retry(at: self.clock.now().addingTimeInterval(delay), error: "\(error)")
        }
    }
}

/// A message that could not be sent before it went stale.
struct PushExpired: Error, CustomStringConvertible {
    var expiresAt: Date
    var description: String { "expired at \(self.expiresAt.formatted(.iso8601)) before it could be sent" }
}
