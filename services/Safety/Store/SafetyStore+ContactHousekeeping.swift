import Foundation
import GRDB
import HearthStore

// Housekeeping of what contacts leave behind: the links' tokens (`contact_token`) that can no
// longer act, and what addresses answered (`contact_address`) once nothing needs it. Run by the
// hourly pass with the switch's history (``pruneHistory(now:usersPerBatch:rowsPerTransaction:)``),
// each in transactions of a bounded number of rows, along an index (migration v8).
extension SafetyStore {
    /// How long an invitation's Confirm and Decline link is kept once its invitation ended: in
    /// that time, someone opening an old invitation is told it expired and that the user can send
    /// a new one (or that they answered already), rather than that there is no such link. A
    /// month covers an invitation read late, after a holiday or from an archive.
    static let spentLinkRetention: TimeInterval = 30 * 86_400
    /// How long what an address answered a user is kept once it holds no refusal, no contact of
    /// theirs has that address and nothing was sent to it: counted from its last invitation. The
    /// count limits invitations to one address (``ContactConsent/maxInvitationsPerAddress``), so
    /// that a user who removes and adds a contact, or erases their account and signs up again,
    /// cannot mail someone who never answered over and over: it holds for three months after the
    /// last one, at most four invitations a quarter. The outbox keeps the same keyed hash of the
    /// address in the invitation's message as long (``alertRetention``), so a shorter time would
    /// forget nothing sooner.
    static let addressRetention: TimeInterval = 90 * 86_400

    /// Deletes the links' tokens that can no longer act: an invitation's Confirm and Decline
    /// links ``spentLinkRetention`` after the invitation ended (answered or not: none acts after
    /// it), and the opt-out links of a removed contact once the time they still work has ended
    /// (``ContactConsent/removedOptOutLifetime``, their `expires_at` set at the removal). An
    /// opt-out link of a contact who exists has no end (the one-click `List-Unsubscribe` of every
    /// email sent to them): never deleted here. Returns how many went.
    func pruneContactLinks(now: Date, rowsPerTransaction: Int) async throws -> Int {
        let spentBefore = StoredDate(now.addingTimeInterval(-Self.spentLinkRetention))
        return try await self.deleteInBatches(rowsPerTransaction) { db, limit in
            // Along `contact_token_expiry`: only links with an end have a row in it.
            try db.cachedStatement(
                sql: """
                    DELETE FROM contact_token WHERE hash IN (
                        SELECT hash FROM contact_token
                        WHERE expires_at IS NOT NULL AND expires_at <= ?
                            AND ((purpose = ? AND expires_at < ?) OR purpose = ?)
                        LIMIT ?)
                    """
            ).execute(
                binding: now.stored,
                LinkPurpose.answer.rawValue,
                spentBefore,
                LinkPurpose.optOut.rawValue,
                limit
            )
        }
    }

    /// Deletes what an address answered a user when it holds no refusal, no contact of that user
    /// has the address, and its last invitation is more than ``addressRetention`` ago (a row
    /// whose invitations have no date counts as old). A refusal is never deleted: that address is
    /// never mailed again for that user, past the contact and the account. Returns how many went.
    func pruneContactAddresses(now: Date, rowsPerTransaction: Int) async throws -> Int {
        let unusedBefore = StoredDate(now.addingTimeInterval(-Self.addressRetention))
        return try await self.deleteInBatches(rowsPerTransaction) { db, limit in
            // Along `contact_address_unrefused`; a current contact is found by its unique
            // (user_id, email_key).
            try db.cachedStatement(
                sql: """
                    DELETE FROM contact_address WHERE (user_id, address_key) IN (
                        SELECT a.user_id, a.address_key FROM contact_address a
                        WHERE a.refused IS NULL AND (a.last_invited_at IS NULL OR a.last_invited_at < ?)
                            AND NOT EXISTS (
                                SELECT 1 FROM contact c WHERE c.user_id = a.user_id AND c.email_key = a.address_key)
                        LIMIT ?)
                    """
            ).execute(binding: unusedBefore, limit)
        }
    }

    /// Runs `delete` (at most `limit` rows a transaction) until a transaction deletes fewer than
    /// that. Returns how many rows went.
    private func deleteInBatches(
        _ limit: Int,
        _ delete: @escaping @Sendable (Database, Int) throws -> Void
    ) async throws -> Int {
        var deleted = 0
        while true {
            let gone = try await self.db.write { db in
                try delete(db, limit)
                return db.changesCount
            }
            deleted += gone
            if gone < limit { return deleted }
        }
    }
}
