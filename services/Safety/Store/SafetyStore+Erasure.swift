import Foundation
import GRDB
import HearthStore

// A user's erasure (hearth.account.v1): everything safety holds about them goes, in one
// transaction; deleted bytes are zeroed (`secure_delete`).
extension SafetyStore {
    /// Deletes the user's profile with their contacts, check-ins and every message (pending
    /// ones are not sent), the links sent to their contacts and the invitations counted for
    /// the day. Kept: what each contact address answered this user (``contact_address``: a
    /// keyed hash, a refusal, a count), so that a contact who said no is not mailed again if
    /// the user signs up again. Returns the rows deleted.
    func eraseUser(_ user: String) async throws -> Int {
        let deleted = try await self.base.write { db in
            // Counted before: the profile's delete cascades to them.
            let cascaded =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT COUNT(*) FROM contact WHERE user_id = :user)
                            + (SELECT COUNT(*) FROM heartbeat WHERE user_id = :user)
                            + (SELECT COUNT(*) FROM alert WHERE user_id = :user)
                        """,
                    arguments: ["user": user]
                ) ?? 0
            var deleted = 0
            for table in ["profile", "contact_token", "invitation_sent"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE user_id = ?", arguments: [user])
                deleted += db.changesCount
            }
            return deleted + cascaded
        }
        // The WAL keeps the pages as they were before, until written over. Every time, even when
        // nothing was left to delete: an earlier call may have deleted and then failed here
        // (a read holding the WAL), and its retry must not answer done with the WAL as it was.
        try await self.base.truncateWAL()
        return deleted
    }
}
