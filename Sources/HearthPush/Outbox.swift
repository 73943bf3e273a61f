public import Foundation
public import GRDB
public import HearthCore
public import Logging
public import ServiceLifecycle

/// A durable outbox of pushes in a service's own SQLite file. A service enqueues a message in
/// the same transaction as the change it reports, so the two commit or fail together; the
/// ``OutboxDeliverer`` sends it later, retrying with backoff until the receiver accepts it.
public enum Outbox {
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
    }

    /// Enqueues `message` inside the caller's write transaction.
    public static func enqueue(_ message: PushMessage, in db: Database) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try db.execute(
            sql: "INSERT INTO push_outbox (id, message, next_attempt_at) VALUES (?, ?, ?)",
            arguments: [message.id, String(decoding: try encoder.encode(message), as: UTF8.self), message.createdAt]
        )
    }

    /// What is still waiting, for status pages and tests.
    public static func pending(in db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox WHERE delivered_at IS NULL AND failed_at IS NULL")
            ?? 0
    }
}

/// A service that reports changes through an outbox in its own store.
public protocol OutboxOwner: Sendable {
    func outboxDeliverer(sender: any PushSender, logger: Logger) -> OutboxDeliverer
}

/// Sends what the outbox holds, oldest due first; a message is marked delivered only after the
/// receiver accepted it, so a crash in between sends it again (with the same `Idempotency-Key`),
/// and nothing is ever lost. Failures retry with exponential backoff up to `maxDelay`.
public final class OutboxDeliverer: Service, Sendable {
    private let writer: any DatabaseWriter
    private let sender: any PushSender
    private let clock: any WallClock
    private let logger: Logger
    private let pollInterval: Duration
    private let maxDelay: TimeInterval

    public init(
        writer: any DatabaseWriter,
        sender: any PushSender,
        clock: any WallClock = SystemClock(),
        pollInterval: Duration = .seconds(1),
        maxDelay: TimeInterval = 300,
        logger: Logger
    ) {
        self.writer = writer
        self.sender = sender
        self.clock = clock
        self.pollInterval = pollInterval
        self.maxDelay = maxDelay
        self.logger = logger
    }

    /// Delivers until graceful shutdown.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await self.deliverDue()
                    try await Task.sleep(for: self.pollInterval)
                }
            }
        } catch is CancellationError {
            // Shutdown: what is left stays in the outbox for the next start.
        }
    }

    /// Sends every message due now; returns how many were delivered.
    @discardableResult
    public func deliverDue() async throws -> Int {
        let now = self.clock.now()
        let due = try await self.writer.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message, attempts FROM push_outbox
                    WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, id LIMIT 100
                    """,
                arguments: [now]
            ).map { row -> (id: String, message: String, attempts: Int) in
                (row["id"], row["message"], row["attempts"])
            }
        }
        var delivered = 0
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        for (id, text, attempts) in due {
            do {
                let message = try decoder.decode(PushMessage.self, from: Data(text.utf8))
                try await self.sender.send(message)
                try await self.writer.write { db in
                    try db.execute(
                        sql: "UPDATE push_outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
                        arguments: [self.clock.now(), id]
                    )
                }
                delivered += 1
            } catch let rejected as PushRejected {
                self.logger.warning("push rejected", metadata: ["id": "\(id)", "error": "\(rejected)"])
                try await self.writer.write { db in
                    try db.execute(
                        sql:
                            "UPDATE push_outbox SET failed_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?",
                        arguments: [self.clock.now(), "\(rejected)", id]
                    )
                }
            } catch {
                let delay = min(self.maxDelay, pow(2, Double(attempts)))
                self.logger.info(
                    "push failed; will retry",
                    metadata: ["id": "\(id)", "in_s": "\(delay)", "error": "\(error)"]
                )
                try await self.writer.write { db in
                    try db.execute(
                        sql:
                            "UPDATE push_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?",
                        arguments: [self.clock.now().addingTimeInterval(delay), "\(error)", id]
                    )
                }
            }
        }
        return delivered
    }
}
