public import Foundation
public import GRDB
import HearthContracts
import HearthCore
public import HearthRPC
public import HearthScheduler
public import HearthStore
public import Logging

/// A durable outbox of calls to another service, in the caller's own SQLite file: a service
/// records the call in the same transaction as its own write, so the write never fails or
/// waits because the other service is down, and the call is made later, retried with backoff
/// until the other service answers OK. (DESIGN.md: checkins, tasks and routines forward
/// activity to safety this way.)
public final class Relay: Sendable {
    /// Answers that will never change on retry: the call is dropped (and logged).
    static let permanent: Set<StatusCode> = [
        .invalidArgument, .notFound, .permissionDenied, .unimplemented, .failedPrecondition, .alreadyExists,
    ]
    static let batch = 100

    private let store: Store
    private let slot = SchedulerSlot()

    /// A relay over `store`, whose migrations include ``registerMigration(in:)``.
    public init(store: Store) {
        self.store = store
    }

    /// Adds the relay table to a service's migrations (append this once, in order).
    public static func registerMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("relay v1: relay_outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE relay_outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        method TEXT NOT NULL,
                        payload BLOB NOT NULL,
                        user_id TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at DATETIME NOT NULL,
                        delivered_at DATETIME,
                        failed_at DATETIME,
                        last_error TEXT
                    );
                    CREATE INDEX relay_outbox_due ON relay_outbox(next_attempt_at)
                        WHERE delivered_at IS NULL AND failed_at IS NULL;
                    """
            )
        }
        migrator.registerMigration("relay v2: settled calls by time") { db in
            try db.execute(sql: SettledRows.indexSQL(table: "relay_outbox"))
        }
    }

    /// How long a made call is kept: its id keeps the same call from being queued again
    /// (safety also recognises a repeat of a forward by its event id).
    public static let retention: TimeInterval = 30 * 86_400

    /// Records a call inside the caller's write transaction; a second call with the same id
    /// is ignored. Call ``wake()`` after the transaction commits.
    public static func enqueue(id: String, method: String, payload: Data, user: String, at now: Date, in db: Database)
        throws
    {
        try db.cachedStatement(
            sql: """
                INSERT INTO relay_outbox (id, method, payload, user_id, next_attempt_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING
                """
        ).execute(arguments: [id, method, payload, user, now.stored])
    }

    /// Deletes, inside the caller's write transaction, every call made or to be made for `user`
    /// (an account erasure); answers how many.
    public static func erase(callsFor user: String, in db: Database) throws -> Int {
        try db.execute(sql: "DELETE FROM relay_outbox WHERE user_id = ?", arguments: [user])
        return db.changesCount
    }

    /// Calls still waiting to be made.
    public func pending() async throws -> Int {
        try self.store.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM relay_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
            ) ?? 0
        }
    }

    /// Something was enqueued: deliver it now (when the deliverer runs).
    public func wake() {
        self.slot.wake()
    }

    /// The part that makes the calls, with `client` (to the other service) and the internal
    /// credential, acting for each call's user. Run it beside the server.
    public func deliverer(client: RPCClient, credential: String, logger: Logger) -> DueTimeScheduler {
        self.slot.fill(
            work: RelayWork(store: self.store, client: client, credential: credential, logger: logger),
            clock: self.store.clock,
            logger: logger
        )
    }
}

private struct RelayWork: DueWork {
    let store: Store
    var clock: any WallClock { self.store.clock }
    let client: RPCClient
    let credential: String
    let logger: Logger
    let settled = SettledRows(table: "relay_outbox", retention: Relay.retention)

    func nextDueTime() async throws -> Date? {
        try self.store.read { db in
            try StoredDate.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT MIN(next_attempt_at) FROM relay_outbox WHERE delivered_at IS NULL AND failed_at IS NULL
                        """
                )
            )?.date
        }
    }

    func runDue(now: Date) async throws {
        try Task.checkCancellation()
        let due = try self.store.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, method, payload, user_id, attempts FROM relay_outbox
                        WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
                        ORDER BY next_attempt_at, id LIMIT ?
                        """
                ),
                arguments: [now.stored, Relay.batch]
            ).map { row -> (id: String, method: String, payload: Data, user: String, attempts: Int) in
                (row[0], row[1], row[2], row[3], row[4])
            }
        }
        // An outcome that could not be written leaves its call due: the pass fails, so that
        // the scheduler tries again after its pause instead of at once, call after call.
        let unrecorded = await withTaskGroup(of: (any Error)?.self) { group in
            for call in due {
                group.addTask { await self.make(call) }
            }
            return await group.first { $0 != nil } ?? nil
        }
        if let unrecorded { throw unrecorded }
        try await self.settled.pruneIfDue(now: now, writer: self.store.writer)
    }

    /// Makes the call and records its outcome; the error that kept it from being recorded, if any.
    private func make(_ call: (id: String, method: String, payload: Data, user: String, attempts: Int)) async
        -> (any Error)?
    {
        let options = CallOptions(
            timeout: .seconds(5),
            metadata: [TrustedMetadata.credential: self.credential, TrustedMetadata.user: call.user]
        )
        let sql: String
        let arguments: StatementArguments
        do {
            _ = try await self.client.callRaw(call.method, payload: call.payload, options: options)
            sql = "UPDATE relay_outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?"
            arguments = [self.clock.now().stored, call.id]
        } catch {
            // Shutting down: the call was cut short or never sent. It stays due as it was, and
            // goes at the next start without counting as an attempt.
            if Task.isCancelled { return nil }
            let answer = RPCError(answering: error)
            if Relay.permanent.contains(answer.code) {
                self.logger.warning(
                    "relayed call refused; dropped",
                    metadata: ["method": "\(call.method)", "error": "\(answer)"]
                )
                sql = "UPDATE relay_outbox SET failed_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?"
                arguments = [self.clock.now().stored, "\(answer)", call.id]
            } else {
                // 1 s, 2 s, 4 s, ... at most 5 min.
                let delay = RetryPause.after(attempts: call.attempts, longest: 300)
                self.logger.log(
                    level: RetryLog.level(afterAttempts: call.attempts),
                    "relayed call failed; will retry",
                    metadata: [
                        "method": "\(call.method)", "attempts": "\(call.attempts + 1)", "in_s": "\(delay)",
                        "error": "\(answer)",
                    ]
                )
                sql =
                    "UPDATE relay_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?"
                arguments = [self.clock.now().addingTimeInterval(delay).stored, "\(answer)", call.id]
            }
        }
        do {
            // Outcomes of calls made together share a commit.
            try await self.store.write { db in try db.cachedStatement(sql: sql).execute(arguments: arguments) }
            return nil
        } catch {
            self.logger.error("could not record a relayed call", metadata: ["id": "\(call.id)", "error": "\(error)"])
            return error
        }
    }
}

extension Relay {
    /// Records, in the caller's transaction, that `user` was active (a check-in, an answered
    /// prompt, a ticked routine): safety counts it as a check-in when the user opted in.
    /// `eventID` is unique within `source` for this user, so recording it twice forwards it
    /// once; it must fit ``SafetyActivity/maxEventIDCharacters`` whatever the user id, so it
    /// never contains one (safety knows the user from the call).
    public static func forwardActivity(
        source: String,
        eventID: String,
        user: String,
        at occurredAt: Date,
        in db: Database
    ) throws {
        assert(eventID.count <= SafetyActivity.maxEventIDCharacters, "safety would refuse event id \(eventID)")
        try Self.enqueue(
            id: "safety:\(source):\(user):\(eventID)",
            method: SafetyActivity.method,
            payload: SafetyActivity.request(source: source, eventID: eventID, occurredAt: occurredAt),
            user: user,
            at: occurredAt,
            in: db
        )
    }
}
