import Foundation
import GRDB
import HearthCore
import HearthStore

/// An activity with its rule (if any).
struct ActivityWithRule: Sendable, Equatable {
    var activity: ActivityRecord
    var rule: RuleRecord?
}

/// Activities, location rules and offers, in the tasks service's SQLite file. An offer is
/// decided and recorded in one write transaction with the ledger it reads, so two concurrent
/// reports can never both pass a cap.
struct ActivityStore: Sendable {
    let base: Store

    var now: Date { self.base.now }

    // MARK: Activities

    enum CreateOutcome: Sendable {
        case created(ActivityWithRule)
        /// The user has ``OfferRules/maxActivities`` already.
        case full
    }

    func createActivity(user: String, title: String, repeat kind: Recurrence, priority: Int, now: Date)
        async throws -> CreateOutcome
    {
        let activity = ActivityRecord(
            id: UUID().uuidString.lowercased(),
            userID: user,
            title: title,
            repeatKind: kind.rawValue,
            priority: priority,
            createdAt: now,
            updatedAt: now
        )
        return try await self.base.write { db in
            guard
                try ActivityRecord.filter(ActivityRecord.Columns.userID == user).fetchCount(db)
                    < OfferRules.maxActivities
            else {
                return .full
            }
            try activity.insert(db)
            return .created(ActivityWithRule(activity: activity, rule: nil))
        }
    }

    func activity(_ id: String, user: String) async throws -> ActivityWithRule? {
        try self.base.read { db in try Self.activity(id, user: user, in: db) }
    }

    func activities(user: String) async throws -> [ActivityWithRule] {
        try self.base.read { db in try Self.activities(user: user, in: db) }
    }

    /// `user`'s activities with their rules, newest first, read by position (the lists and
    /// ListGeofences read up to 200 at a time).
    static func activities(user: String, in db: Database) throws -> [ActivityWithRule] {
        let activities = try db.cachedStatement(
            sql: "\(ActivityRecord.selection) FROM activity WHERE user_id = ? ORDER BY created_at DESC, rowid DESC"
        ).fetchAll(binding: user, read: ActivityRecord.init(columns:))
        let rules = try db.cachedStatement(
            sql: """
                \(RuleRecord.selection) FROM activity_rule
                WHERE activity_id IN (SELECT id FROM activity WHERE user_id = ?)
                """
        ).fetchAll(binding: user, read: RuleRecord.init(columns:))
        let byActivity = Dictionary(uniqueKeysWithValues: rules.map { ($0.activityID, $0) })
        return activities.map { ActivityWithRule(activity: $0, rule: byActivity[$0.id]) }
    }

    /// Marks the activity done (for DAILY: done today in the user's zone) and cancels its open
    /// offers, except `keeping` (the offer being answered with MARK_DONE).
    func complete(_ id: String, user: String, now: Date, keeping: String? = nil) async throws -> ActivityWithRule? {
        try await self.base.write { db in
            try Self.complete(id, user: user, now: now, keeping: keeping, in: db)
        }
    }

    /// Deletes the activity and its rule; its open offers are cancelled (kept for statistics).
    func delete(_ id: String, user: String, now: Date) async throws -> Bool {
        try await self.base.write { db in
            guard try Self.activity(id, user: user, in: db) != nil else { return false }
            try Self.cancelOpenOffers(activityID: id, except: nil, now: now, in: db)
            try db.cachedStatement(sql: "DELETE FROM activity WHERE id = ?").execute(arguments: [id])
            return true
        }
    }

    func setRule(_ id: String, user: String, rule: OfferRules.Rule, now: Date) async throws -> ActivityWithRule? {
        try await self.base.write { db in
            guard var found = try Self.activity(id, user: user, in: db) else { return nil }
            let record = RuleRecord(
                activityID: id,
                label: rule.label,
                latitude: rule.latitude,
                longitude: rule.longitude,
                radiusM: rule.radiusMeters,
                trigger: rule.trigger.rawValue,
                delayMinutes: rule.delayMinutes,
                cooldownMinutes: rule.cooldownMinutes,
                onlyIfIncomplete: rule.onlyIfIncomplete,
                enabled: rule.enabled,
                updatedAt: now,
                minDwellMinutes: rule.minDwellMinutes
            )
            try record.save(db)
            if !rule.enabled { try Self.cancelOpenOffers(activityID: id, except: nil, now: now, in: db) }
            found.rule = record
            return found
        }
    }

    func clearRule(_ id: String, user: String, now: Date) async throws -> ActivityWithRule? {
        try await self.base.write { db in
            guard var found = try Self.activity(id, user: user, in: db) else { return nil }
            try db.cachedStatement(sql: "DELETE FROM activity_rule WHERE activity_id = ?").execute(arguments: [id])
            try Self.cancelOpenOffers(activityID: id, except: nil, now: now, in: db)
            found.rule = nil
            return found
        }
    }

    // MARK: Offers

    /// Offers delivered and still open (answerable), oldest delivery first.
    func pendingOffers(user: String, now: Date) async throws -> [OfferRecord] {
        try self.base.read { db in
            try OfferRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM offer WHERE user_id = ? AND deliver_at <= ? AND deliver_at > ?
                        AND answered_at IS NULL AND cancelled_at IS NULL ORDER BY deliver_at, id
                        """
                ),
                arguments: [user, now, OfferRules.expiredBy(now)]
            )
        }
    }

    enum RespondOutcome: Sendable {
        case answered(OfferRecord, ActivityWithRule?, snoozed: OfferRecord?)
        case answeredDifferently(OfferRecord)
        case notDelivered(OfferRecord)
        case expired(OfferRecord)
        case cancelled(OfferRecord)
        case missing
    }

    /// Answers a delivered offer; answering it again the same way is the same result.
    func respond(offerID: String, user: String, action: OfferAction, now: Date) async throws
        -> RespondOutcome
    {
        try await self.base.write { db in
            guard
                var offer = try OfferRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM offer WHERE id = ? AND user_id = ?"),
                    arguments: [offerID, user]
                )
            else { return .missing }
            let found = try Self.activity(offer.activityID, user: user, in: db)
            if let earlier = offer.action {
                guard earlier == action.rawValue else { return .answeredDifferently(offer) }
                let snoozed = try offer.snoozedOfferID.flatMap { try OfferRecord.fetchOne(db, cachedKey: $0) }
                return .answered(offer, found, snoozed: snoozed)
            }
            switch OfferRules.offerState(
                answered: false,
                cancelled: offer.cancelledAt != nil,
                deliverAt: offer.deliverAt,
                now: now
            ) {
            case .scheduled: return .notDelivered(offer)
            case .expired: return .expired(offer)
            case .cancelled: return .cancelled(offer)
            case .pending, .answered: break
            }
            offer.action = action.rawValue
            offer.answeredAt = now
            var activity = found
            var snoozed: OfferRecord?
            switch action {
            case .markDone:
                activity = try Self.complete(offer.activityID, user: user, now: now, keeping: offer.id, in: db)
            case .snooze15, .snooze60:
                let minutes = action == .snooze15 ? 15 : 60
                let preferences = try Self.preferences(user: user, in: db)
                let next = OfferRecord(
                    id: UUID().uuidString.lowercased(),
                    userID: user,
                    activityID: offer.activityID,
                    title: offer.title,
                    channel: offer.channel,
                    occurredAt: offer.occurredAt,
                    deliverAt: OfferRules.snoozedDelivery(minutes: minutes, now: now, preferences: preferences),
                    createdAt: now,
                    snoozed: true,
                    trigger: offer.trigger
                )
                try next.insert(db)
                offer.snoozedOfferID = next.id
                snoozed = next
            case .disable:
                try db.cachedStatement(
                    sql: "UPDATE activity_rule SET enabled = 0, updated_at = ? WHERE activity_id = ?"
                ).execute(arguments: [now, offer.activityID])
                try Self.cancelOpenOffers(activityID: offer.activityID, except: offer.id, now: now, in: db)
                activity = try Self.activity(offer.activityID, user: user, in: db)
            case .dismiss:
                break
            }
            try offer.update(db)
            return .answered(offer, activity, snoozed: snoozed)
        }
    }

    struct Stats: Sendable, Equatable {
        var eligible = 0
        var suppressed: [Int: Int] = [:]
        var shown: [Int: Int] = [:]
        var actions: [Int: Int] = [:]
    }

    func stats(user: String, from: Date, to: Date, now: Date) async throws -> Stats {
        try self.base.read { db in
            var stats = Stats()
            // Every event and every repeat, each under what it was answered (a repeat never
            // earns an offer, so reason 0 counts first reports only).
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT reason, COUNT(*) AS n FROM (
                            SELECT reason FROM location_event
                            WHERE user_id = ? AND occurred_at >= ? AND occurred_at < ?
                            UNION ALL
                            SELECT reason FROM location_event_repeat
                            WHERE user_id = ? AND occurred_at >= ? AND occurred_at < ?
                        ) GROUP BY reason
                        """
                ),
                arguments: [user, from, to, user, from, to]
            ) {
                let reason: Int = row["reason"]
                let count: Int = row["n"]
                if reason == 0 { stats.eligible = count } else { stats.suppressed[reason] = count }
            }
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT channel, COUNT(*) AS n FROM offer
                        WHERE user_id = ? AND deliver_at >= ? AND deliver_at < ? AND deliver_at <= ?
                        AND (cancelled_at IS NULL OR cancelled_at >= deliver_at) GROUP BY channel
                        """
                ),
                arguments: [user, from, to, now]
            ) {
                stats.shown[row["channel"]] = row["n"]
            }
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT action, COUNT(*) AS n FROM offer
                        WHERE user_id = ? AND answered_at >= ? AND answered_at < ? GROUP BY action
                        """
                ),
                arguments: [user, from, to]
            ) {
                stats.actions[row["action"]] = row["n"]
            }
            return stats
        }
    }

    // MARK: Helpers

    static func activity(_ id: String, user: String, in db: Database) throws -> ActivityWithRule? {
        guard
            let activity = try db.cachedStatement(
                sql: "\(ActivityRecord.selection) FROM activity WHERE id = ? AND user_id = ?"
            ).fetchOne(binding: id, user, read: ActivityRecord.init(columns:))
        else { return nil }
        return ActivityWithRule(
            activity: activity,
            rule: try db.cachedStatement(sql: "\(RuleRecord.selection) FROM activity_rule WHERE activity_id = ?")
                .fetchOne(binding: id, read: RuleRecord.init(columns:))
        )
    }

    /// Done for good (NONE), or done on `day` in `zone` (DAILY).
    static func isDone(_ activity: ActivityRecord, on day: LocalDate, in zone: TimeZone) -> Bool {
        OfferRules.isDone(
            Recurrence(rawValue: activity.repeatKind) ?? .once,
            lastCompletedAt: activity.lastCompletedAt,
            on: day,
            in: zone
        )
    }

    private static func complete(_ id: String, user: String, now: Date, keeping: String?, in db: Database) throws
        -> ActivityWithRule?
    {
        guard var found = try Self.activity(id, user: user, in: db) else { return nil }
        found.activity.lastCompletedAt = now
        found.activity.updatedAt = now
        try found.activity.update(db)
        try Self.cancelOpenOffers(activityID: id, except: keeping, now: now, in: db)
        return found
    }

    private static func cancelOpenOffers(activityID: String, except keep: String?, now: Date, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE offer SET cancelled_at = ?
                WHERE activity_id = ? AND deliver_at > ? AND answered_at IS NULL AND cancelled_at IS NULL
                AND id IS NOT ?
                """
        ).execute(arguments: [now, activityID, OfferRules.expiredBy(now), keep])
    }
}

extension RuleRecord {
    var rule: OfferRules.Rule {
        OfferRules.Rule(
            label: self.label,
            latitude: self.latitude,
            longitude: self.longitude,
            radiusMeters: self.radiusM,
            // Written only from a checked rule: always a trigger the rules know.
            trigger: Trigger(rawValue: self.trigger) ?? .arrive,
            delayMinutes: self.delayMinutes,
            cooldownMinutes: self.cooldownMinutes,
            onlyIfIncomplete: self.onlyIfIncomplete,
            enabled: self.enabled,
            minDwellMinutes: self.minDwellMinutes
        )
    }
}
