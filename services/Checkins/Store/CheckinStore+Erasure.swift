import Foundation
import GRDB
import HearthPush
import HearthRelay
import HearthStore

// An account erasure's part in checkins (hearth.account.v1): the user's nests with all they
// hold, their sitting elsewhere, and the messages queued for or about them, deleted so that no
// byte of them stays in the file. The ids of the nests that went are remembered a while
// (`erased_nest`), for routines' part, which erases the routines in them.
extension CheckinStore {
    static func registerErasedNestsMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4: erased nests") { db in
            try db.execute(
                sql: """
                    -- The nests an erasure deleted, kept erasedNestRetention after: what routines'
                    -- part of the erasure is told to erase the routines of.
                    CREATE TABLE erased_nest (
                        nest_id TEXT PRIMARY KEY NOT NULL,
                        owner_id TEXT NOT NULL,
                        erased_at DATETIME NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX erased_nest_owner ON erased_nest(owner_id);
                    CREATE INDEX erased_nest_age ON erased_nest(erased_at);
                    """
            )
        }
    }

    /// How long the id of an erased nest is kept (``erasedNestIDs(of:in:)``): longer than an
    /// erasure takes, retries and outages included, and then no longer than the erasure's own
    /// ledger keeps the user's id.
    static let erasedNestRetention: TimeInterval = 30 * 86_400

    /// Every nest `user` owns, oldest first: all of them at once (at most
    /// ``CheckinRules/maxNestsPerOwner``), for an export to hand to routines.
    func ownedNestIDs(of user: String) async throws -> [String] {
        try self.base.read { db in
            try String.fetchAll(
                db,
                sql: "SELECT id FROM nest WHERE owner_user_id = ? ORDER BY created_at, id",
                arguments: [user]
            )
        }
    }

    /// Deletes, in one write transaction, everything the store holds about `user`
    /// (``eraseUser(_:in:)``), remembering the nests that go (``recordErasedNests(of:at:in:)``),
    /// then empties the WAL, whose older frames still hold the deleted rows (`secure_delete`
    /// zeroes them in the pages written now, not in the frames written before). Returns how many
    /// rows went (none are left the second time: 0), and every nest of `user`'s erased so far, by
    /// this call and by earlier ones within ``erasedNestRetention``, oldest erasure first: a
    /// repeat whose first answer was lost learns them all the same.
    /// - Throws: SQLite's errors; the WAL checkpoint's (SQLITE_BUSY when a read held it past the
    ///   busy timeout): the rows are gone then, and a repeat, which deletes nothing, empties the
    ///   WAL.
    func eraseUser(_ user: String) async throws -> (deleted: Int, erasedNests: [String]) {
        let now = self.now
        let erased = try await self.base.write { db in
            try Self.recordErasedNests(of: user, at: now, in: db)
            let deleted = try Self.eraseUser(user, in: db)
            return (deleted: deleted, erasedNests: try Self.erasedNestIDs(of: user, in: db))
        }
        try await self.base.truncateWAL()
        return erased
    }

    /// Remembers, inside the caller's write transaction, every nest `user` owns as erased at
    /// `now`: called before ``eraseUser(_:in:)`` deletes them. A nest remembered already keeps
    /// its first time.
    static func recordErasedNests(of user: String, at now: Date, in db: Database) throws {
        assert(db.isInsideTransaction, "the nests are remembered in the transaction that erases them")
        try db.execute(
            sql: """
                INSERT INTO erased_nest (nest_id, owner_id, erased_at)
                SELECT id, owner_user_id, ? FROM nest WHERE owner_user_id = ?
                ON CONFLICT (nest_id) DO NOTHING
                """,
            arguments: [now, user]
        )
    }

    /// The nests of `user`'s that erasures deleted and the store still remembers, oldest erasure
    /// first (then by id).
    static func erasedNestIDs(of user: String, in db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: "SELECT nest_id FROM erased_nest WHERE owner_id = ? ORDER BY erased_at, nest_id",
            arguments: [user]
        )
    }

    /// Forgets the nests erased ``erasedNestRetention`` or longer before `now` (checkins'
    /// housekeeping, ``CheckinsService/housekeeping(logger:)``). Returns how many went.
    func pruneErasedNests(now: Date) async throws -> Int {
        let cutoff = now.addingTimeInterval(-Self.erasedNestRetention)
        return try await self.base.write { db in
            try db.execute(sql: "DELETE FROM erased_nest WHERE erased_at <= ?", arguments: [cutoff])
            return db.changesCount
        }
    }

    /// Deletes, inside the caller's write transaction, every row the store holds about `user`,
    /// and answers how many rows went. Nothing is left to find, so a second call deletes
    /// nothing and answers 0.
    ///
    /// The sessions that go are those in the nests `user` owns (whoever sits them) and those
    /// `user` sits in anyone else's; every check-in of them goes, with what hangs on it. Only a
    /// session's sitter posts in it, so these are all the check-ins `user` posted, and all the
    /// ones posted in their nests. Children go before their parents, each counted (SQLite's
    /// change count leaves out what an `ON DELETE CASCADE` deletes), so the cascades find
    /// nothing left:
    /// - `push_outbox`, sent or not (a sent one is kept a week, with the caption it carried):
    ///   the "New check-in" push of every check-in that goes (by id, ``createdPushID(_:)``, as
    ///   ``deleteCheckIn(_:)`` withdraws it): to the other owners about `user`'s check-ins, and
    ///   to `user` about their nests'; the one of every check-in `user` ever posted, found
    ///   through its request (`check_in_request` outlives a deleted check-in, whose sent push
    ///   DeleteCheckIn leaves); every message to `user` (`Outbox.erase(messagesTo:in:)`).
    /// - `relay_outbox`: the calls made for `user`, sent or not: their activity forwarded to
    ///   safety (`Relay.erase(callsFor:in:)`).
    /// - `photo`, `check_in_request`, `check_in`, `daily_count` of those sessions; and every
    ///   `check_in_request` of `user`'s, of check-ins deleted before too.
    /// - `template`, `session`, `nest`: the nests' quick captions, the sessions, the nests.
    ///
    /// What stays: other sitters' requests of check-ins in `user`'s nests deleted before the
    /// erasure (a `check_in_request` row names no session: nothing ties it to the nest; it holds
    /// the sitter's ids, nothing of `user`); the activity other sitters forwarded from `user`'s
    /// nests (theirs, naming only the check-in's id); `erased_nest`, the ids of the nests that
    /// went with `user`'s (``recordErasedNests(of:at:in:)``, forgotten after
    /// ``erasedNestRetention``).
    static func eraseUser(_ user: String, in db: Database) throws -> Int {
        assert(db.isInsideTransaction, "an erasure runs inside the caller's write transaction")
        // Both through indexes: the sitter's sessions, and the owner's nests (nest_owner), then
        // their sessions (session_nest).
        let sessions = """
            SELECT id FROM session
            WHERE sitter_user_id = :user OR nest_id IN (SELECT id FROM nest WHERE owner_user_id = :user)
            """
        // check_in_timeline, by session.
        let checkIns = "SELECT id FROM check_in WHERE session_id IN (\(sessions))"
        let arguments: StatementArguments = ["user": user, "pushPrefix": Self.createdPushID("")]
        let statements = [
            // Before the check-ins and the requests they are found through.
            """
            DELETE FROM push_outbox WHERE id IN (
                SELECT :pushPrefix || id FROM check_in WHERE session_id IN (\(sessions)))
            """,
            """
            DELETE FROM push_outbox WHERE id IN (
                SELECT :pushPrefix || check_in_id FROM check_in_request WHERE submitter_user_id = :user)
            """,
            // The bytes of the image and its thumbnail go with the row (zeroed: secure_delete).
            "DELETE FROM photo WHERE check_in_id IN (\(checkIns))",
            // By the request's key, which the check-in carries (the table has no index by check-in).
            """
            DELETE FROM check_in_request WHERE (submitter_user_id, client_request_id) IN (
                SELECT submitter_user_id, client_request_id FROM check_in WHERE session_id IN (\(sessions)))
            """,
            "DELETE FROM check_in_request WHERE submitter_user_id = :user",
            "DELETE FROM check_in WHERE session_id IN (\(sessions))",
            "DELETE FROM daily_count WHERE session_id IN (\(sessions))",
            "DELETE FROM template WHERE nest_id IN (SELECT id FROM nest WHERE owner_user_id = :user)",
            "DELETE FROM session WHERE id IN (\(sessions))",
            "DELETE FROM nest WHERE owner_user_id = :user",
        ]
        var deleted = try Outbox.erase(messagesTo: user, in: db) + Relay.erase(callsFor: user, in: db)
        for sql in statements {
            try db.execute(sql: sql, arguments: arguments)
            deleted += db.changesCount
        }
        return deleted
    }
}
