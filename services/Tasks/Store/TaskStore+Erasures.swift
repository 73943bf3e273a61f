import Foundation
import GRDB
import HearthCore
import HearthStore

// The ledger of account erasures (hearth.account.v1): one row per user and service, kept until
// every part is done and a while after, so that the user can read where theirs stands.
extension TaskStore {
    static func registerErasureMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5: account erasures") { db in
            try db.execute(
                sql: """
                    CREATE TABLE erasure (
                        user_id TEXT NOT NULL,
                        service TEXT NOT NULL,
                        requested_at DATETIME NOT NULL,
                        done_at DATETIME,
                        attempts INTEGER NOT NULL,
                        next_attempt_at DATETIME,
                        last_error TEXT NOT NULL,
                        PRIMARY KEY (user_id, service)
                    ) WITHOUT ROWID;
                    CREATE INDEX erasure_due ON erasure(next_attempt_at) WHERE next_attempt_at IS NOT NULL;
                    """
            )
        }
        // Routines' part once went first, with the nests checkins listed, and checkins' after it;
        // now checkins goes first (``ErasedService/waitsFor``). The erasures under way then
        // are put in the new order, so that each still ends.
        migrator.registerMigration("v6: erasures erase checkins' nests before routines'") { db in
            try Self.reorderErasures(in: db)
        }
    }

    /// Puts every erasure under way in the order of ``ErasedService/waitsFor``
    /// (``ErasurePlan/reordered(_:at:)``), a part that falls due so due at once (at its
    /// request's time). A finished erasure stays as it is.
    static func reorderErasures(in db: Database) throws {
        let users = try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM erasure WHERE done_at IS NULL")
        for user in users {
            let steps = try Self.erasureSteps(of: user, in: db)
            guard let requestedAt = steps.map(\.requestedAt).min() else { continue }
            for changed in ErasurePlan.reordered(steps, at: requestedAt) where !steps.contains(changed) {
                try Self.save(changed, in: db)
            }
        }
    }

    /// How long a finished erasure stays readable (GetErasure) before its rows go too.
    static let erasureRetention: TimeInterval = 30 * 86_400

    /// Starts an erasure of `user`, unless one is under way (then answers it as it stands):
    /// tasks' own part is done in this transaction, the others are recorded for the erasure
    /// worker. Answers the steps.
    func requestErasure(_ user: String) async throws -> [ErasureStep] {
        let now = self.now
        let steps = try await self.base.write { db in
            let steps = try Self.erasureSteps(of: user, in: db)
            guard ErasurePlan.startsAnew(steps) else { return steps }
            _ = try Self.eraseUser(user, in: db)
            let started = ErasurePlan.start(for: user, at: now)
            for step in started { try Self.save(step, in: db) }
            return started
        }
        // Every time, not only when erased now: a request that erased and then failed here (a
        // read holding the WAL) is asked again, and must not leave the WAL as it was.
        try await self.base.truncateWAL()
        return steps
    }

    /// `user`'s erasure as it stands; empty when they never asked (or it went with time).
    func erasure(of user: String) throws -> [ErasureStep] {
        try self.base.read { db in try Self.erasureSteps(of: user, in: db) }
    }

    /// Parts due by `now`, oldest first.
    func dueErasureSteps(at now: Date, limit: Int) throws -> [ErasureStep] {
        try self.base.read { db in
            try db.cachedStatement(
                sql: """
                    SELECT \(Self.erasureColumns) FROM erasure WHERE next_attempt_at <= ?
                    ORDER BY next_attempt_at LIMIT ?
                    """
            ).fetchAll(binding: now.stored, limit, read: Self.erasureStep(columns:))
        }
    }

    /// When the next part is due; nil when none is.
    func nextErasureTime() throws -> Date? {
        try self.base.read { db in
            try db.cachedStatement(sql: "SELECT MIN(next_attempt_at) FROM erasure WHERE next_attempt_at IS NOT NULL")
                .fetchOne { try $0.optionalDate(0) } ?? nil
        }
    }

    /// When the finished erasure that goes first is to go (``pruneErasures(now:)``):
    /// ``erasureRetention`` after its last part was done; nil when none is finished.
    func nextErasurePruneTime() throws -> Date? {
        let finished: Date? = try self.base.read { db in
            try db.cachedStatement(
                sql: """
                    SELECT MIN(finished) FROM (
                        SELECT MAX(done_at) AS finished FROM erasure GROUP BY user_id
                        HAVING COUNT(done_at) = COUNT(*))
                    """
            ).fetchOne { try $0.optionalDate(0) } ?? nil
        }
        return finished?.addingTimeInterval(Self.erasureRetention)
    }

    /// Records what became of a call for `service`'s part of `user`'s erasure: done (the parts
    /// that waited for it fall due), or failed (tried again later).
    func recordErasure(_ service: ErasedService, of user: String, failure: String?) async throws {
        let now = self.now
        try await self.base.write { db in
            let steps = try Self.erasureSteps(of: user, in: db)
            guard let step = steps.first(where: { $0.service == service }), !step.isDone else { return }
            let after =
                if let failure { [ErasurePlan.failed(step, because: failure, at: now)] } else {
                    ErasurePlan.done(service, in: steps, at: now)
                }
            for changed in after where !steps.contains(changed) { try Self.save(changed, in: db) }
        }
    }

    /// Deletes erasures finished ``erasureRetention`` or longer before `now` (at the time
    /// ``nextErasurePruneTime()`` says, not a moment later). Returns how many users' went.
    func pruneErasures(now: Date) async throws -> Int {
        try await self.base.write { db in
            try db.execute(
                sql: """
                    DELETE FROM erasure WHERE user_id IN (
                        SELECT user_id FROM erasure GROUP BY user_id
                        HAVING COUNT(done_at) = COUNT(*) AND MAX(done_at) <= ?)
                    """,
                arguments: [now.addingTimeInterval(-Self.erasureRetention).stored]
            )
            return db.changesCount / ErasedService.allCases.count
        }
    }

    // MARK: Rows

    private static let erasureColumns =
        "user_id, service, requested_at, done_at, attempts, next_attempt_at, last_error"

    private static func erasureSteps(of user: String, in db: Database) throws -> [ErasureStep] {
        try db.cachedStatement(sql: "SELECT \(Self.erasureColumns) FROM erasure WHERE user_id = ?")
            .fetchAll(binding: user, read: Self.erasureStep(columns:))
            .sorted { $0.service.order < $1.service.order }
    }

    private static func erasureStep(columns: StatementColumns) throws -> ErasureStep {
        let service: String = try columns.value(1)
        guard let known = ErasedService(rawValue: service) else {
            throw StoredValueError(message: "an erasure of service \(service)")
        }
        return ErasureStep(
            user: try columns.value(0),
            service: known,
            requestedAt: try columns.date(2),
            doneAt: try columns.optionalDate(3),
            attempts: try columns.value(4),
            nextAttemptAt: try columns.optionalDate(5),
            lastError: try columns.value(6)
        )
    }

    private static func save(_ step: ErasureStep, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO erasure (\(Self.erasureColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, service) DO UPDATE SET requested_at = excluded.requested_at,
                    done_at = excluded.done_at, attempts = excluded.attempts,
                    next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error
                """
        ).execute(
            binding: step.user,
            step.service.rawValue,
            step.requestedAt.stored,
            step.doneAt?.stored,
            step.attempts,
            step.nextAttemptAt?.stored,
            step.lastError
        )
    }
}

extension ErasedService {
    /// The order steps are listed in: as the services are declared.
    var order: Int { Self.allCases.firstIndex(of: self) ?? 0 }
}
