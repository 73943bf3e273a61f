import Foundation
import GRDB
import HearthStore

struct ProfileRecord: PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "profile"
    var userID: String
    var name: String
    var email: String
    var thresholdHours: Int
    var language: String
    var timeZone: String
    var reminderEnabled: Bool
    var reminderHour: Int
    var reminderMinute: Int
    var pushToken: String
    var countActivity: Bool
    /// The last check-in, or the last resume: the deadline counts from it.
    var periodStart: Date
    var lastCheckInAt: Date?
    /// Snoozes in this period: each moves its deadline 24 h.
    var snoozes: Int
    /// Snoozes since the last check-in, across the periods a pause's end begins: the limit.
    var snoozesInARow: Int
    var pausedUntil: Date?
    /// Bumped at every check-in, snooze and resume: due items are decided once per epoch.
    var epoch: Int
    /// The epoch the last check-in began (alerts since then get an all-clear at the next).
    var checkInEpoch: Int
    /// When the scheduler must look at this profile next; nil when nothing is left.
    var nextDueAt: Date?
    var createdAt: Date
    var updatedAt: Date
}

// Read and written by hand, not through Codable: the profile is on the heartbeat's hot path
// (Codable decoding and encoding were a quarter of its writer time, and GRDB's rows, which
// index every column name on each fetch, a fifth). Reads select ``ProfileRecord/selection``
// and take the columns by position, straight from SQLite; the column names live here.
extension ProfileRecord {
    /// The columns every read selects, in the order `init(columns:)` takes them.
    static let columnNames = [
        "user_id", "name", "email", "threshold_hours", "language", "time_zone", "reminder_enabled",
        "reminder_hour", "reminder_minute", "push_token", "count_activity", "period_start", "last_check_in_at",
        "snoozes", "paused_until", "epoch", "check_in_epoch", "next_due_at", "created_at", "updated_at",
        "snoozes_in_a_row",
    ]

    /// `SELECT` this, then `FROM profile ...`, to fetch profiles.
    static let selection = "SELECT " + columnNames.joined(separator: ", ")

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.userID = try columns.value(0)
        self.name = try columns.value(1)
        self.email = try columns.value(2)
        self.thresholdHours = try columns.value(3)
        self.language = try columns.value(4)
        self.timeZone = try columns.value(5)
        self.reminderEnabled = try columns.value(6)
        self.reminderHour = try columns.value(7)
        self.reminderMinute = try columns.value(8)
        self.pushToken = try columns.value(9)
        self.countActivity = try columns.value(10)
        self.periodStart = try columns.date(11)
        self.lastCheckInAt = try columns.optionalDate(12)
        self.snoozes = try columns.value(13)
        self.pausedUntil = try columns.optionalDate(14)
        self.epoch = try columns.value(15)
        self.checkInEpoch = try columns.value(16)
        self.nextDueAt = try columns.optionalDate(17)
        self.createdAt = try columns.date(18)
        self.updatedAt = try columns.date(19)
        self.snoozesInARow = try columns.value(20)
    }

    /// The values of ``columnNames``, in their order.
    var columnValues: [(any DatabaseValueConvertible)?] {
        [
            self.userID, self.name, self.email, self.thresholdHours, self.language, self.timeZone, self.reminderEnabled,
            self.reminderHour, self.reminderMinute, self.pushToken, self.countActivity, self.periodStart.stored,
            self.lastCheckInAt?.stored, self.snoozes, self.pausedUntil?.stored, self.epoch, self.checkInEpoch,
            self.nextDueAt?.stored, self.createdAt.stored, self.updatedAt.stored, self.snoozesInARow,
        ]
    }

    func encode(to container: inout PersistenceContainer) throws {
        for (name, value) in zip(Self.columnNames, self.columnValues) { container[name] = value }
    }

    /// Saves the switch's moving parts with one prepared statement (what a check-in, snooze,
    /// pause or decision changes; the settings are saved by UpsertProfile).
    func saveSwitch(in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE profile SET time_zone = ?, period_start = ?, last_check_in_at = ?, snoozes = ?,
                    snoozes_in_a_row = ?, paused_until = ?, epoch = ?, check_in_epoch = ?, next_due_at = ?,
                    updated_at = ?
                WHERE user_id = ?
                """
        ).execute(
            binding: self.timeZone,
            self.periodStart.stored,
            self.lastCheckInAt?.stored,
            self.snoozes,
            self.snoozesInARow,
            self.pausedUntil?.stored,
            self.epoch,
            self.checkInEpoch,
            self.nextDueAt?.stored,
            self.updatedAt.stored,
            self.userID
        )
    }
}

extension ProfileRecord {
    /// The switch, as its rules see it.
    var switchState: SwitchState {
        SwitchState(
            thresholdHours: self.thresholdHours,
            timeZone: self.timeZone,
            reminderEnabled: self.reminderEnabled,
            reminderHour: self.reminderHour,
            reminderMinute: self.reminderMinute,
            periodStart: self.periodStart,
            lastCheckInAt: self.lastCheckInAt,
            snoozes: self.snoozes,
            snoozesInARow: self.snoozesInARow,
            pausedUntil: self.pausedUntil,
            epoch: self.epoch,
            checkInEpoch: self.checkInEpoch,
            nextDueAt: self.nextDueAt,
            updatedAt: self.updatedAt
        )
    }

    /// The profile with the switch as the rules left it.
    func with(_ state: SwitchState) -> ProfileRecord {
        var profile = self
        profile.thresholdHours = state.thresholdHours
        profile.timeZone = state.timeZone
        profile.reminderEnabled = state.reminderEnabled
        profile.reminderHour = state.reminderHour
        profile.reminderMinute = state.reminderMinute
        profile.periodStart = state.periodStart
        profile.lastCheckInAt = state.lastCheckInAt
        profile.snoozes = state.snoozes
        profile.snoozesInARow = state.snoozesInARow
        profile.pausedUntil = state.pausedUntil
        profile.epoch = state.epoch
        profile.checkInEpoch = state.checkInEpoch
        profile.nextDueAt = state.nextDueAt
        profile.updatedAt = state.updatedAt
        return profile
    }
}

struct ContactRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "contact"
    var id: String
    var userID: String
    var email: String
    var emailKey: String
    var name: String
    var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, email, name
        case userID = "user_id"
        case emailKey = "email_key"
        case createdAt = "created_at"
    }
}

extension ContactRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let id = Column(CodingKeys.id)
        static let userID = Column(CodingKeys.userID)
    }
}

extension DerivableRequest<ContactRecord> {
    /// One user's contacts.
    func of(user: String) -> Self { self.filter(ContactRecord.Columns.userID == user) }
}

/// One decided message: a warning push, an alert or all-clear email, or a test. The table is
/// the switch's outbox: a row is written in the transaction that decides it, then delivered
/// (and retried) until the server accepts it.
struct AlertRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "alert"

    typealias Kind = MessageKind

    enum Channel: String, Codable, Sendable, CaseIterable {
        case email, push
    }

    enum State: String, Codable, Sendable {
        case pending, sent, failed, cancelled
    }

    var id: String
    var userID: String
    var epoch: Int
    /// `warning_180`, `warning_60`, `warning_10`, `alert`, `all_clear` or `test`.
    var kind: String
    var channel: Channel
    /// The contact it goes to; empty for the user's own push or test.
    var contactID: String
    /// An email address or a push token.
    var address: String
    var subject: String
    var body: String
    var state: State
    /// Counts every attempt begun, including one under way (one that a killed process left
    /// without an outcome is taken back at the next start).
    var attempts: Int
    var lastError: String
    var nextAttemptAt: Date?
    var sentAt: Date?
    var createdAt: Date
    /// When the attempt under way began; nil when none is.
    var claimedAt: Date? = nil
    /// Whether an attempt that failed may have delivered it all the same (the answer to its
    /// content never came), or a killed process left one under way.
    var mayHaveArrived = false

    enum CodingKeys: String, CodingKey {
        case id, epoch, kind, channel, address, subject, body, state, attempts
        case userID = "user_id"
        case contactID = "contact_id"
        case lastError = "last_error"
        case nextAttemptAt = "next_attempt_at"
        case sentAt = "sent_at"
        case createdAt = "created_at"
        case claimedAt = "claimed_at"
        case mayHaveArrived = "may_have_arrived"
    }
}

enum SafetyMigrations {
    /// Named and append-only: a shipped migration is never edited.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: profiles, contacts, heartbeats, alerts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE profile (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        email TEXT NOT NULL,
                        threshold_hours INTEGER NOT NULL,
                        language TEXT NOT NULL,
                        time_zone TEXT NOT NULL,
                        reminder_enabled BOOLEAN NOT NULL,
                        reminder_hour INTEGER NOT NULL,
                        reminder_minute INTEGER NOT NULL,
                        push_token TEXT NOT NULL,
                        count_activity BOOLEAN NOT NULL,
                        period_start DATETIME NOT NULL,
                        last_check_in_at DATETIME,
                        snoozes INTEGER NOT NULL,
                        paused_until DATETIME,
                        epoch INTEGER NOT NULL,
                        check_in_epoch INTEGER NOT NULL,
                        next_due_at DATETIME,
                        created_at DATETIME NOT NULL,
                        updated_at DATETIME NOT NULL
                    );
                    CREATE INDEX profile_due ON profile(next_due_at) WHERE next_due_at IS NOT NULL;

                    CREATE TABLE contact (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        email TEXT NOT NULL,
                        email_key TEXT NOT NULL,
                        name TEXT NOT NULL,
                        created_at DATETIME NOT NULL,
                        UNIQUE (user_id, email_key)
                    );

                    CREATE TABLE heartbeat (
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        at DATETIME NOT NULL,
                        time_zone TEXT NOT NULL,
                        device_info TEXT NOT NULL,
                        source TEXT NOT NULL,
                        request_id TEXT NOT NULL,
                        PRIMARY KEY (user_id, request_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX heartbeat_time ON heartbeat(user_id, at);

                    CREATE TABLE alert (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        epoch INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        channel TEXT NOT NULL,
                        contact_id TEXT NOT NULL,
                        address TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        body TEXT NOT NULL,
                        state TEXT NOT NULL,
                        attempts INTEGER NOT NULL,
                        last_error TEXT NOT NULL,
                        next_attempt_at DATETIME,
                        sent_at DATETIME,
                        created_at DATETIME NOT NULL
                    );
                    CREATE UNIQUE INDEX alert_once ON alert(user_id, epoch, kind, contact_id) WHERE kind != 'test';
                    CREATE INDEX alert_due ON alert(next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_user ON alert(user_id, epoch);
                    """
            )
        }
        migrator.registerMigration("v2: attempts claimed before they begin") { db in
            // An alert tried before this version may have arrived (the rule of that version).
            try db.execute(
                sql: """
                    ALTER TABLE alert ADD COLUMN claimed_at DATETIME;
                    ALTER TABLE alert ADD COLUMN may_have_arrived BOOLEAN NOT NULL DEFAULT 0;
                    UPDATE alert SET may_have_arrived = 1 WHERE attempts > 0 AND state IN ('pending', 'cancelled');
                    DROP INDEX alert_due;
                    CREATE INDEX alert_due ON alert(channel, next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_claimed ON alert(claimed_at) WHERE claimed_at IS NOT NULL;
                    """
            )
        }
        migrator.registerMigration("v3: check-ins kept without counting") { db in
            // A check-in merged into the one before it, or over the rate limit, is kept too (not
            // counted), so that a retry of it is known however late it comes. The rate limit's
            // read of the last hour tells them apart from the index alone.
            try db.execute(
                sql: """
                    ALTER TABLE heartbeat ADD COLUMN counted BOOLEAN NOT NULL DEFAULT 1;
                    DROP INDEX heartbeat_time;
                    CREATE INDEX heartbeat_time ON heartbeat(user_id, at, counted);
                    """
            )
        }
        migrator.registerMigration("v4: the app's request ids apart from forwarded ones") { db in
            // Kept as the client sent them until now, an app's id could be a forwarded one
            // (`tasks:e1`) and make that activity a repeat, or the other way round. Ids are now
            // kept by source (`SafetyRules.HeartbeatID`); the app's move under `app:`. A row
            // whose new id is taken already (the app sent both `x` and `app:x` in the last 30
            // days) stays as it is: only a very late retry of it would count once more. The
            // server's own ids for check-ins sent without one (`server:UUID`, source `app` too)
            // move as well: a client could have sent one that looked the same.
            try db.execute(sql: "UPDATE OR IGNORE heartbeat SET request_id = 'app:' || request_id WHERE source = 'app'")
        }
        migrator.registerMigration("v5: snoozes in a row counted apart from the period's") { db in
            // A pause's end begins a period without snoozes (its deadline counts from there), and
            // the limit of three in a row used to start over with it: a pause and a resume gave
            // three more. The run now ends only at a check-in.
            try db.execute(
                sql: """
                    ALTER TABLE profile ADD COLUMN snoozes_in_a_row INTEGER NOT NULL DEFAULT 0;
                    UPDATE profile SET snoozes_in_a_row = snoozes;
                    """
            )
        }
        return migrator
    }
}

extension ContactRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.email = try row.decode(String.self, forColumn: "email")
        self.emailKey = try row.decode(String.self, forColumn: "email_key")
        self.name = try row.decode(String.self, forColumn: "name")
        self.createdAt = try row.decode(Date.self, forColumn: "created_at")
    }
}
