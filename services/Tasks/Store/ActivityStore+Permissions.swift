import Foundation
import GRDB
import HearthStore

/// What a user's phone allows the app, as it last reported (ReportPermissions): kept apart from
/// the offer preferences, which SetOfferPreferences replaces whole.
struct PermissionsRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "device_permissions"
    var userID: String
    /// ``Permissions/Location`` raw value.
    var location: Int
    /// ``Permissions/Notifications`` raw value.
    var notifications: Int
    var reportedAt: Date

    enum CodingKeys: String, CodingKey {
        case location, notifications
        case userID = "user_id"
        case reportedAt = "reported_at"
    }

    var permissions: Permissions {
        Permissions(location: .init(rawValue: self.location), notifications: .init(rawValue: self.notifications))
    }
}

extension ActivityStore {
    /// The phone's permissions as last reported, and when; nil when never.
    func permissions(user: String) async throws -> PermissionsRecord? {
        try self.base.read { db in try Self.permissions(user: user, in: db) }
    }

    func setPermissions(_ permissions: PermissionsRecord) async throws {
        try await self.base.write { db in try permissions.save(db) }
    }

    static func permissions(user: String, in db: Database) throws -> PermissionsRecord? {
        try db.cachedStatement(
            sql: "SELECT user_id, location, notifications, reported_at FROM device_permissions WHERE user_id = ?"
        ).fetchOne(binding: user) { columns in
            try PermissionsRecord(
                userID: columns.value(0),
                location: columns.value(1),
                notifications: columns.value(2),
                reportedAt: columns.date(3)
            )
        }
    }
}

extension ActivityMigrations {
    /// v8: offers are opt-in (a user without preferences has them off: nothing to change, the
    /// default is read where no row is); the phone's permissions; a rule's minimum dwell; and the
    /// cooldown's index keeps only the events that came as far as the cooldown, now that two
    /// reasons after it (13, PERMISSION_MISSING, checked early; 14, DWELL_NOT_MET, a stay that
    /// ended too soon) do not.
    static func registerOptInAndDwell(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8: the phone's permissions; a rule's minimum dwell") { db in
            try db.execute(
                sql: """
                    CREATE TABLE device_permissions (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        location INTEGER NOT NULL,
                        notifications INTEGER NOT NULL,
                        reported_at DATETIME NOT NULL
                    );
                    ALTER TABLE activity_rule ADD COLUMN min_dwell_minutes INTEGER NOT NULL DEFAULT 0;
                    DROP INDEX location_event_by_activity;
                    CREATE INDEX location_event_by_activity ON location_event(user_id, activity_id, occurred_at)
                        WHERE reason = 0 OR reason BETWEEN 8 AND 12;
                    """
            )
        }
    }
}
