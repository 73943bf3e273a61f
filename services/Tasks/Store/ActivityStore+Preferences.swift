import Foundation
import GRDB
import HearthCore
import HearthRPC
import HearthStore

// A user's offer preferences: stored whole by SetOfferPreferences, read by every decision.
extension ActivityStore {
    func preferences(user: String) async throws -> OfferRules.Preferences {
        try self.base.read { db in try Self.preferences(user: user, in: db) }
    }

    /// Replaces the user's preferences with `draft`'s, judged against those they have (a zone
    /// kept when offers are turned off without one) in the same transaction; answers what was
    /// stored, or why nothing was.
    func setPreferences(_ draft: PreferencesDraft, user: String, now: Date) async throws
        -> Result<OfferRules.Preferences, RPCError>
    {
        try await self.base.write { db in
            let judged = OfferRules.preferences(draft, current: try Self.preferences(user: user, in: db))
            if case .success(let preferences) = judged { try Self.store(preferences, user: user, now: now, in: db) }
            return judged
        }
    }

    private static func store(_ preferences: OfferRules.Preferences, user: String, now: Date, in db: Database) throws {
        let record = PreferencesRecord(
            userID: user,
            enabled: preferences.enabled,
            dailyCap: preferences.dailyCap,
            minSpacingMinutes: preferences.minSpacingMinutes,
            defaultCooldownMinutes: preferences.defaultCooldownMinutes,
            quietStart: preferences.quietHours?.start,
            quietEnd: preferences.quietHours?.end,
            timeZone: preferences.timeZone,
            updatedAt: now
        )
        try record.save(db)
        // Offers off: none already made is delivered or answered any more. (Only those still
        // open: an offer past its lifetime expired, and stays so in the stats; and a user's
        // whole history is not read.)
        if !preferences.enabled {
            try db.cachedStatement(
                sql: """
                    UPDATE offer SET cancelled_at = ? WHERE user_id = ? AND deliver_at > ?
                    AND answered_at IS NULL AND cancelled_at IS NULL
                    """
            ).execute(arguments: [now, user, OfferRules.expiredBy(now)])
        }
    }

    static func preferences(user: String, in db: Database) throws -> OfferRules.Preferences {
        guard
            let record = try db.cachedStatement(
                sql: "\(PreferencesRecord.selection) FROM offer_preferences WHERE user_id = ?"
            ).fetchOne(binding: user, read: PreferencesRecord.init(columns:))
        else {
            return OfferRules.Preferences()
        }
        return OfferRules.Preferences(
            enabled: record.enabled,
            dailyCap: record.dailyCap,
            minSpacingMinutes: record.minSpacingMinutes,
            defaultCooldownMinutes: record.defaultCooldownMinutes,
            quietHours: record.quietStart.flatMap { start in
                record.quietEnd.map { OfferRules.QuietHours(start: start, end: $0) }
            },
            timeZone: record.timeZone
        )
    }
}

extension ActivityMigrations {
    /// v10: offers are opt-in, and a user who never turned them on has them off; the offers
    /// still open of such users (made while no preferences meant on) are cancelled, as turning
    /// offers off cancels them: those not yet past their 24 hours (an older one expired, and
    /// stays so in the stats).
    static func registerOptInOffersCancelled(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10: open offers of users who never turned offers on") { db in
            // Dates as the store writes them (StoredDate): now, and a day ago.
            try db.execute(
                sql: """
                    UPDATE offer SET cancelled_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
                    WHERE answered_at IS NULL AND cancelled_at IS NULL
                    AND deliver_at > strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 day')
                    AND user_id NOT IN (SELECT user_id FROM offer_preferences)
                    """
            )
        }
    }
}
