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

extension AlertRecord {
    /// A message queued now for its first attempt: a test, an invitation, a contact's news.
    static func queued(
        userID: String,
        epoch: Int,
        kind: String,
        channel: Channel,
        contactID: String,
        address: String,
        subject: String,
        body: String,
        at now: Date
    ) -> AlertRecord {
        AlertRecord(
            id: UUID().uuidString.lowercased(),
            userID: userID,
            epoch: epoch,
            kind: kind,
            channel: channel,
            contactID: contactID,
            address: address,
            subject: subject,
            body: body,
            state: .pending,
            attempts: 0,
            lastError: "",
            nextAttemptAt: now,
            sentAt: nil,
            createdAt: now
        )
    }
}
