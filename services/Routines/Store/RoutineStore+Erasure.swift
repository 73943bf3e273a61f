import Foundation
import GRDB
import HearthRelay
import HearthStore

// An account erasure's part in routines (hearth.account.v1): the user's nests' routines, their
// own ticks anywhere, and the calls queued for them, deleted so that no byte of them stays.
extension RoutineStore {
    /// What goes with one of the user's nests, children first, the nest's id bound: each along
    /// an index (routine_nest, then completion's and action's keys by routine_id).
    private static let nestDeletes = [
        "DELETE FROM completion WHERE routine_id IN (SELECT id FROM routine WHERE nest_id = ?)",
        "DELETE FROM \"action\" WHERE routine_id IN (SELECT id FROM routine WHERE nest_id = ?)",
        "DELETE FROM routine WHERE nest_id = ?",
    ]

    /// What goes of the user's anywhere, their id bound. Neither table is indexed by user: each
    /// statement reads its whole table, once an erasure.
    private static let userDeletes = ["DELETE FROM completion WHERE user_id = ?"]

    /// Deletes, in one write transaction: every routine of `ownedNests` with its actions and
    /// every tick of them (by anyone); `user`'s ticks in any other nest; the calls relayed for
    /// `user` (queued, or kept after they were made). Then empties the WAL, whose older frames
    /// still hold the deleted rows (`secure_delete` zeroes them in the pages written now, not in
    /// the frames written before). Returns how many rows went: 0 when none was left.
    ///
    /// Children go before their parents, each counted: SQLite's change count leaves out what a
    /// cascade deletes, and here the cascades find nothing left. Nest by nest, one bound value a
    /// statement: 1,000 nests do not run into SQLite's limit on variables.
    /// - Throws: SQLite's errors; the checkpoint's (SQLITE_BUSY when a read held the WAL past the
    ///   busy timeout): the rows are gone by then, and a repeat, deleting nothing, empties the WAL.
    func erase(user: String, ownedNests: [String]) async throws -> Int {
        let count = try await self.base.write { db in
            var deleted = 0
            for nest in ownedNests {
                for sql in Self.nestDeletes { deleted += try Self.delete(sql, nest, in: db) }
            }
            for sql in Self.userDeletes { deleted += try Self.delete(sql, user, in: db) }
            return deleted + (try Relay.erase(callsFor: user, in: db))
        }
        try await self.base.truncateWAL()
        return count
    }

    /// Runs a DELETE with one argument; answers how many rows it deleted itself (not by cascade).
    private static func delete(_ sql: String, _ argument: String, in db: Database) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: [argument])
        return db.changesCount
    }
}
