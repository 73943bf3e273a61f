import Foundation
import GRDB
import HearthStore

struct ActivityRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "activity"
    var id: String
    var userID: String
    var title: String
    /// ``Recurrence`` raw value.
    var repeatKind: Int
    var priority: Int
    var createdAt: Date
    var updatedAt: Date
    var lastCompletedAt: Date?

    enum CodingKeys: String, CodingKey {
        case id, title, priority
        case userID = "user_id"
        case repeatKind = "repeat_kind"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case lastCompletedAt = "last_completed_at"
    }
}

extension ActivityRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let userID = Column(CodingKeys.userID)
    }
}

struct RuleRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "activity_rule"
    var activityID: String
    var label: String
    var latitude: Double
    var longitude: Double
    var radiusM: Int
    /// ``Trigger`` raw value.
    var trigger: Int
    var delayMinutes: Int
    var cooldownMinutes: Int?
    var onlyIfIncomplete: Bool
    var enabled: Bool
    var updatedAt: Date
    /// ARRIVE only; 0: none.
    var minDwellMinutes: Int

    enum CodingKeys: String, CodingKey {
        case label, latitude, longitude, trigger, enabled
        case activityID = "activity_id"
        case radiusM = "radius_m"
        case delayMinutes = "delay_minutes"
        case cooldownMinutes = "cooldown_minutes"
        case onlyIfIncomplete = "only_if_incomplete"
        case updatedAt = "updated_at"
        case minDwellMinutes = "min_dwell_minutes"
    }
}

struct PreferencesRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "offer_preferences"
    var userID: String
    var enabled: Bool
    var dailyCap: Int
    var minSpacingMinutes: Int
    var defaultCooldownMinutes: Int
    var quietStart: Int?
    var quietEnd: Int?
    var timeZone: String
    var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case enabled
        case userID = "user_id"
        case dailyCap = "daily_cap"
        case minSpacingMinutes = "min_spacing_minutes"
        case defaultCooldownMinutes = "default_cooldown_minutes"
        case quietStart = "quiet_start"
        case quietEnd = "quiet_end"
        case timeZone = "time_zone"
        case updatedAt = "updated_at"
    }
}

struct OfferRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "offer"
    var id: String
    var userID: String
    var activityID: String
    var title: String
    var channel: Int
    var occurredAt: Date
    var deliverAt: Date
    var createdAt: Date
    var snoozed: Bool
    /// ``OfferAction`` raw value, once answered.
    var action: Int?
    var answeredAt: Date?
    var cancelledAt: Date?
    /// The offer a snooze made.
    var snoozedOfferID: String?
    /// ``Trigger`` raw value of the event it was made on (a snooze's: its offer's).
    var trigger: Int

    enum CodingKeys: String, CodingKey {
        case id, title, channel, snoozed, action, trigger
        case userID = "user_id"
        case activityID = "activity_id"
        case occurredAt = "occurred_at"
        case deliverAt = "deliver_at"
        case createdAt = "created_at"
        case answeredAt = "answered_at"
        case cancelledAt = "cancelled_at"
        case snoozedOfferID = "snoozed_offer_id"
    }
}

extension OfferRecord: ColumnWrites {
    static let columnNames = [
        "id", "user_id", "activity_id", "title", "channel", "occurred_at", "deliver_at", "created_at", "snoozed",
        "action", "answered_at", "cancelled_at", "snoozed_offer_id", "trigger",
    ]
    static let insertSQL = makeInsertSQL()

    var columnValues: [(any DatabaseValueConvertible)?] {
        [
            self.id, self.userID, self.activityID, self.title, self.channel, self.occurredAt.stored,
            self.deliverAt.stored, self.createdAt.stored, self.snoozed, self.action, self.answeredAt?.stored,
            self.cancelledAt?.stored, self.snoozedOfferID, self.trigger,
        ]
    }

    func encode(to container: inout PersistenceContainer) throws { self.encodeColumns(to: &container) }
}

/// Every location event and what was decided: the duplicate check and the statistics.
struct LocationEventRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "location_event"
    var userID: String
    var clientEventID: String
    var activityID: String
    var trigger: Int
    var occurredAt: Date
    var receivedAt: Date
    /// ``SuppressionReason`` raw value; 0 when it made an offer.
    var reason: Int
    var offerID: String?

    enum CodingKeys: String, CodingKey {
        case trigger, reason
        case userID = "user_id"
        case clientEventID = "client_event_id"
        case activityID = "activity_id"
        case occurredAt = "occurred_at"
        case receivedAt = "received_at"
        case offerID = "offer_id"
    }
}

extension LocationEventRecord: ColumnWrites {
    static let columnNames = [
        "user_id", "client_event_id", "activity_id", "trigger", "occurred_at", "received_at", "reason", "offer_id",
    ]
    static let insertSQL = makeInsertSQL()

    var columnValues: [(any DatabaseValueConvertible)?] {
        [
            self.userID, self.clientEventID, self.activityID, self.trigger, self.occurredAt.stored,
            self.receivedAt.stored, self.reason, self.offerID,
        ]
    }

    func encode(to container: inout PersistenceContainer) throws { self.encodeColumns(to: &container) }
}

enum ActivityMigrations {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2: activities, location rules, offers") { db in
            try db.execute(
                sql: """
                    CREATE TABLE activity (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        repeat_kind INTEGER NOT NULL,
                        priority INTEGER NOT NULL,
                        created_at DATETIME NOT NULL,
                        updated_at DATETIME NOT NULL,
                        last_completed_at DATETIME
                    );
                    CREATE INDEX activity_by_user ON activity(user_id, created_at);

                    CREATE TABLE activity_rule (
                        activity_id TEXT PRIMARY KEY NOT NULL REFERENCES activity(id) ON DELETE CASCADE,
                        label TEXT NOT NULL,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        radius_m INTEGER NOT NULL,
                        trigger INTEGER NOT NULL,
                        delay_minutes INTEGER NOT NULL,
                        cooldown_minutes INTEGER,
                        only_if_incomplete BOOLEAN NOT NULL,
                        enabled BOOLEAN NOT NULL,
                        updated_at DATETIME NOT NULL
                    );

                    CREATE TABLE offer_preferences (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        enabled BOOLEAN NOT NULL,
                        daily_cap INTEGER NOT NULL,
                        min_spacing_minutes INTEGER NOT NULL,
                        default_cooldown_minutes INTEGER NOT NULL,
                        quiet_start INTEGER,
                        quiet_end INTEGER,
                        time_zone TEXT NOT NULL,
                        updated_at DATETIME NOT NULL
                    );

                    CREATE TABLE offer (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL,
                        activity_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        channel INTEGER NOT NULL,
                        occurred_at DATETIME NOT NULL,
                        deliver_at DATETIME NOT NULL,
                        created_at DATETIME NOT NULL,
                        snoozed BOOLEAN NOT NULL,
                        action INTEGER,
                        answered_at DATETIME,
                        cancelled_at DATETIME,
                        snoozed_offer_id TEXT
                    );
                    CREATE INDEX offer_by_user ON offer(user_id, deliver_at);
                    CREATE INDEX offer_by_activity ON offer(activity_id, deliver_at);

                    CREATE TABLE location_event (
                        user_id TEXT NOT NULL,
                        client_event_id TEXT NOT NULL,
                        activity_id TEXT NOT NULL,
                        trigger INTEGER NOT NULL,
                        occurred_at DATETIME NOT NULL,
                        received_at DATETIME NOT NULL,
                        reason INTEGER NOT NULL,
                        offer_id TEXT,
                        PRIMARY KEY (user_id, client_event_id)
                    );
                    CREATE INDEX location_event_by_time ON location_event(user_id, occurred_at);

                    -- Reports of an event already seen, for the statistics (reason: v4).
                    CREATE TABLE location_event_repeat (
                        user_id TEXT NOT NULL,
                        client_event_id TEXT NOT NULL,
                        occurred_at DATETIME NOT NULL,
                        received_at DATETIME NOT NULL
                    );
                    CREATE INDEX location_event_repeat_by_time ON location_event_repeat(user_id, occurred_at);
                    """
            )
        }
    }

    /// An offer keeps the trigger of the event it was made on. Offers from before take their
    /// event's; a snooze, its offer's (a chain of them, link by link). The cooldown looks up an
    /// activity's last event by index.
    static func registerOfferTriggers(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v7: the trigger an offer was made on; events by activity") { db in
            try db.execute(
                sql: """
                    ALTER TABLE offer ADD COLUMN trigger INTEGER NOT NULL DEFAULT 0;
                    -- The cooldown's look for the activity's last event that came as far as it: an
                    -- offer (reason 0) or a suppression by it (8, EVENT_COOLDOWN) or a later check.
                    CREATE INDEX location_event_by_activity ON location_event(user_id, activity_id, occurred_at)
                        WHERE reason = 0 OR reason >= 8;
                    -- Through that index (an offer's event is one of those), not a scan per offer.
                    UPDATE offer SET trigger = coalesce(
                        (SELECT e.trigger FROM location_event AS e
                         WHERE e.user_id = offer.user_id AND e.activity_id = offer.activity_id
                            AND e.reason = 0 AND e.offer_id = offer.id), 0);
                    -- For the snooze chains only: a look from an offer to the one it came from.
                    CREATE INDEX offer_snoozed_into ON offer(snoozed_offer_id) WHERE snoozed_offer_id IS NOT NULL;
                    """
            )
            repeat {
                try db.execute(
                    sql: """
                        UPDATE offer SET trigger = (SELECT earlier.trigger FROM offer AS earlier
                            WHERE earlier.snoozed_offer_id = offer.id)
                        WHERE trigger = 0 AND EXISTS (SELECT 1 FROM offer AS earlier
                            WHERE earlier.snoozed_offer_id = offer.id AND earlier.trigger != 0)
                        """
                )
            } while db.changesCount > 0
            try db.execute(sql: "DROP INDEX offer_snoozed_into")
        }
    }

    /// v4: a repeated event's statistics count what it was answered (STALE_EVENT, DISABLED,
    /// ...), which is DUPLICATE_EVENT only when nothing checked before that stopped it. Rows
    /// from before are DUPLICATE_EVENT, as they were counted.
    static func registerRepeatReasons(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4: the reason a repeated location event was answered") { db in
            // 6: DUPLICATE_EVENT (``SuppressionReason/duplicateEvent``), written out: a shipped
            // migration does not change with the code.
            try db.execute(
                sql: """
                    ALTER TABLE location_event_repeat ADD COLUMN reason INTEGER NOT NULL
                        DEFAULT 6
                    """
            )
        }
    }
}

extension ActivityRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.title = try row.decode(String.self, forColumn: "title")
        self.repeatKind = try row.decode(Int.self, forColumn: "repeat_kind")
        self.priority = try row.decode(Int.self, forColumn: "priority")
        self.createdAt = try row.date("created_at")
        self.updatedAt = try row.date("updated_at")
        self.lastCompletedAt = try row.optionalDate("last_completed_at")
    }
}

extension RuleRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.activityID = try row.decode(String.self, forColumn: "activity_id")
        self.label = try row.decode(String.self, forColumn: "label")
        self.latitude = try row.decode(Double.self, forColumn: "latitude")
        self.longitude = try row.decode(Double.self, forColumn: "longitude")
        self.radiusM = try row.decode(Int.self, forColumn: "radius_m")
        self.trigger = try row.decode(Int.self, forColumn: "trigger")
        self.delayMinutes = try row.decode(Int.self, forColumn: "delay_minutes")
        self.cooldownMinutes = try row.decode(Int?.self, forColumn: "cooldown_minutes")
        self.onlyIfIncomplete = try row.decode(Bool.self, forColumn: "only_if_incomplete")
        self.enabled = try row.decode(Bool.self, forColumn: "enabled")
        self.updatedAt = try row.date("updated_at")
        self.minDwellMinutes = try row.decode(Int.self, forColumn: "min_dwell_minutes")
    }
}

extension PreferencesRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.enabled = try row.decode(Bool.self, forColumn: "enabled")
        self.dailyCap = try row.decode(Int.self, forColumn: "daily_cap")
        self.minSpacingMinutes = try row.decode(Int.self, forColumn: "min_spacing_minutes")
        self.defaultCooldownMinutes = try row.decode(Int.self, forColumn: "default_cooldown_minutes")
        self.quietStart = try row.decode(Int?.self, forColumn: "quiet_start")
        self.quietEnd = try row.decode(Int?.self, forColumn: "quiet_end")
        self.timeZone = try row.decode(String.self, forColumn: "time_zone")
        self.updatedAt = try row.date("updated_at")
    }
}

extension OfferRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.activityID = try row.decode(String.self, forColumn: "activity_id")
        self.title = try row.decode(String.self, forColumn: "title")
        self.channel = try row.decode(Int.self, forColumn: "channel")
        self.occurredAt = try row.date("occurred_at")
        self.deliverAt = try row.date("deliver_at")
        self.createdAt = try row.date("created_at")
        self.snoozed = try row.decode(Bool.self, forColumn: "snoozed")
        self.action = try row.decode(Int?.self, forColumn: "action")
        self.answeredAt = try row.optionalDate("answered_at")
        self.cancelledAt = try row.optionalDate("cancelled_at")
        self.snoozedOfferID = try row.decode(String?.self, forColumn: "snoozed_offer_id")
        self.trigger = try row.decode(Int.self, forColumn: "trigger")
    }
}

extension LocationEventRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.clientEventID = try row.decode(String.self, forColumn: "client_event_id")
        self.activityID = try row.decode(String.self, forColumn: "activity_id")
        self.trigger = try row.decode(Int.self, forColumn: "trigger")
        self.occurredAt = try row.date("occurred_at")
        self.receivedAt = try row.date("received_at")
        self.reason = try row.decode(Int.self, forColumn: "reason")
        self.offerID = try row.decode(String?.self, forColumn: "offer_id")
    }
}
