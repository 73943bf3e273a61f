import Foundation
import GRDB
import HearthCore
import HearthStore

// The grace of contacts stored before invitations existed (migration v6): they receive alarms
// while their first invitation is open (`alarms_until`). When it ends unanswered the user is told
// once, by push; the decider finds the next end by the indexed column, which is cleared once
// the end is handled, so it is handled once, across restarts.
extension SafetyStore {
    /// The earliest end of a grace not handled yet, if any.
    func nextGraceEnd() async throws -> Date? {
        try self.base.read { db in
            try Date.fetchOne(
                db.cachedStatement(sql: "SELECT MIN(alarms_until) FROM contact WHERE alarms_until IS NOT NULL")
            )
        }
    }

    /// Ends up to `limit` graces over by `now`, oldest first, in one transaction
    /// (``ContactConsent/endGrace(at:)``): each is cleared, and the user of a contact still
    /// invited is told by push. A contact who answered (or bounced) has no grace left; one removed
    /// has no row. Answers how many graces ended and how many pushes were queued.
    func endGraces(now: Date, limit: Int) async throws -> (ended: Int, told: Int) {
        // Most passes find nothing: look with a read before taking the writer.
        let anyOver = try self.base.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM contact WHERE alarms_until <= ? LIMIT 1"),
                arguments: [now.stored]
            ) ?? false
        }
        guard anyOver else { return (0, 0) }
        return try await self.base.write { db in
            let over = try self.contacts(
                "WHERE alarms_until <= ? ORDER BY alarms_until LIMIT ?",
                binding: now.stored,
                limit,
                in: db
            )
            var told = 0
            for var contact in over {
                var consent = contact.consent
                let tell = consent.endGrace(at: now)
                contact.consent = consent
                try contact.updateConsent(in: db)
                guard tell, let profile = try self.profile(contact.userID, in: db) else { continue }
                try AlertRecord.graceEnded(of: contact, to: profile, product: self.product, at: now)
                    .insert(in: db, sealingWith: self.keys, ignoringConflict: true)
                told += 1
            }
            return (over.count, told)
        }
    }
}
