import Foundation
import GRDB
import HearthStore

// A user's export (hearth.account.v1): what the tasks process's store (the tasks and the
// activities services share it) holds about one user, every row of it, read in one snapshot:
// tasks, prompts, check-ins, activities with their rules, offer preferences, offers, and every
// location event the phone reported with its repeats (`location_event`, `location_event_repeat`).
// Not the `erasure` ledger (the erasure's own record, which GetErasure reads), nor what the
// store keeps only to do its work: the pushes and calls in the outboxes (`push_outbox`,
// `relay_outbox`), the retry ids a task or a check-in was made with (`client_request_id`: they
// only tell a retry from a new call), and a prompt's push bookkeeping (`notify_at`, `pushed_at`).
extension TaskStore {
    /// One user's rows, as the store keeps them (the service maps them to messages).
    struct UserRows: Sendable {
        /// Their tasks, cancelled and ended ones too, oldest first (the earlier made first
        /// among tasks made the same millisecond).
        var tasks: [TaskRecord]
        /// Every prompt of those tasks, whatever its state, by scheduled time.
        var prompts: [PromptRecord]
        /// Every check-in of those tasks (answers and extra ones), by recorded time.
        var checkIns: [CheckInRecord]
        /// Their activities, each with its rule if it has one, oldest first.
        var activities: [ActivityWithRule]
        /// Their offer preferences; nil when they never set them (the calls then read the
        /// defaults, ``OfferRules/Preferences``).
        var preferences: OfferRules.Preferences?
        /// What their phone allows the app, as last reported; nil when never.
        var permissions: PermissionsRecord?
        /// Every offer kept for them (``ActivityStore/historyRetention``), by delivery time.
        var offers: [OfferRecord]
        /// Every location event kept for them (``ActivityStore/historyRetention``) as first
        /// reported, with what came of it, by when it occurred (then when it was received, then
        /// the client's id).
        var locationEvents: [LocationEventRecord]
        /// Every later report of an event already reported, kept as long, by when it occurred
        /// (then when it was received, then in the order they came).
        var locationEventRepeats: [LocationEventRepeat]
    }

    /// A report of a location event already reported (a `location_event_repeat` row): it made
    /// no offer, and its activity and trigger are the first report's.
    struct LocationEventRepeat: Sendable, Equatable {
        var clientEventID: String
        /// When this report says the event happened.
        var occurredAt: Date
        var receivedAt: Date
        /// ``SuppressionReason`` raw value: what it was answered.
        var reason: Int

        /// Read column by column, as the records are.
        init(row: Row) throws {
            self.clientEventID = try row.decode(String.self, forColumn: "client_event_id")
            self.occurredAt = try row.date("occurred_at")
            self.receivedAt = try row.date("received_at")
            self.reason = try row.decode(Int.self, forColumn: "reason")
        }
    }

    /// Every row of `user`'s in the store, in one read transaction: a prompt or a check-in is
    /// there with its task, an offer with its activity (unless the activity was deleted since;
    /// its offers are kept), a location event with its offer and its repeats. On a reader
    /// thread: a user of long standing has thousands of prompts, check-ins and location events.
    func userRows(of user: String) async throws -> UserRows {
        try await self.base.longRead { db in
            // A prompt or a check-in is found through its task (the indexed path: `prompt_by_task`,
            // `check_in_by_task`), as the erasure finds it (``eraseUser(_:in:)``).
            let tasks = "SELECT id FROM task WHERE user_id = ?"
            return UserRows(
                tasks: try TaskRecord.fetchAll(
                    db.cachedStatement(sql: "SELECT * FROM task WHERE user_id = ? ORDER BY created_at, rowid"),
                    arguments: [user]
                ),
                prompts: try PromptRecord.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT * FROM prompt WHERE task_id IN (\(tasks)) ORDER BY scheduled_at, id"
                    ),
                    arguments: [user]
                ),
                checkIns: try CheckInRecord.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT * FROM check_in WHERE task_id IN (\(tasks)) ORDER BY recorded_at, id"
                    ),
                    arguments: [user]
                ),
                activities: try ActivityStore.activities(user: user, in: db).reversed(),
                preferences: try ActivityStore.storedPreferences(user: user, in: db),
                permissions: try ActivityStore.permissions(user: user, in: db),
                offers: try OfferRecord.fetchAll(
                    db.cachedStatement(sql: "SELECT * FROM offer WHERE user_id = ? ORDER BY deliver_at, id"),
                    arguments: [user]
                ),
                // Both along their `(user_id, occurred_at)` indexes.
                locationEvents: try LocationEventRecord.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT * FROM location_event WHERE user_id = ?
                            ORDER BY occurred_at, received_at, client_event_id
                            """
                    ),
                    arguments: [user]
                ),
                locationEventRepeats: try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT client_event_id, occurred_at, received_at, reason FROM location_event_repeat
                            WHERE user_id = ? ORDER BY occurred_at, received_at, rowid
                            """
                    ),
                    arguments: [user]
                ).map(LocationEventRepeat.init(row:))
            )
        }
    }
}

extension ActivityStore {
    /// `user`'s offer preferences as every call reads them (``preferences(user:in:)``); nil
    /// when they never set them.
    static func storedPreferences(user: String, in db: Database) throws -> OfferRules.Preferences? {
        let stored =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM offer_preferences WHERE user_id = ?"),
                arguments: [user]
            ) != nil
        guard stored else { return nil }
        return try Self.preferences(user: user, in: db)
    }
}
