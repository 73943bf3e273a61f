import Foundation
import GRDB
import HearthStore

struct ProfileRecord: TableRecord, Equatable, Sendable {
    static let databaseTableName = "profile"
    var userID: String
    /// Sealed at rest; opened only where a text or an answer needs it.
    var name: SealedText
    var email: SealedText
    var thresholdHours: Int
    var language: String
    var timeZone: String
    var reminderEnabled: Bool
    var reminderHour: Int
    var reminderMinute: Int
    var pushToken: String
    var countActivity: Bool
    /// False: kept, but nothing fires.
    var isActive: Bool
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
        "snoozes_in_a_row", "is_active",
    ]

    /// `SELECT` this, then `FROM profile ...`, to fetch profiles.
    static let selection = "SELECT " + columnNames.joined(separator: ", ")

    /// A row of ``selection``, on either store; the name and email are opened with `keys` when
    /// asked for.
    init(columns: some StoredColumns, keys: DataKeys) throws {
        self.userID = try columns.string(0)
        self.name = try keys.read(columns.bytes(1), .profileName, row: self.userID)
        self.email = try keys.read(columns.bytes(2), .profileEmail, row: self.userID)
        self.thresholdHours = try columns.int(3)
        self.language = try columns.string(4)
        self.timeZone = try columns.string(5)
        self.reminderEnabled = try columns.bool(6)
        self.reminderHour = try columns.int(7)
        self.reminderMinute = try columns.int(8)
        self.pushToken = try columns.string(9)
        self.countActivity = try columns.bool(10)
        self.periodStart = try columns.date(11)
        self.lastCheckInAt = try columns.optionalDate(12)
        self.snoozes = try columns.int(13)
        self.pausedUntil = try columns.optionalDate(14)
        self.epoch = try columns.int(15)
        self.checkInEpoch = try columns.int(16)
        self.nextDueAt = try columns.optionalDate(17)
        self.createdAt = try columns.date(18)
        self.updatedAt = try columns.date(19)
        self.snoozesInARow = try columns.int(20)
        self.isActive = try columns.bool(21)
    }

    /// The values of ``columnNames``, in their order, the name and email sealed with `keys`.
    func columnValues(sealingWith keys: DataKeys) throws -> [(any DatabaseValueConvertible)?] {
        [
            self.userID, try keys.seal(self.name, .profileName, row: self.userID),
            try keys.seal(self.email, .profileEmail, row: self.userID), self.thresholdHours, self.language,
            self.timeZone,
            self.reminderEnabled, self.reminderHour, self.reminderMinute, self.pushToken, self.countActivity,
            self.periodStart.stored, self.lastCheckInAt?.stored, self.snoozes, self.pausedUntil?.stored, self.epoch,
            self.checkInEpoch, self.nextDueAt?.stored, self.createdAt.stored, self.updatedAt.stored,
            self.snoozesInARow, self.isActive,
        ]
    }

    /// Inserts the profile, or replaces every column of the one stored.
    func save(in db: Database, sealingWith keys: DataKeys) throws {
        try db.cachedStatement(sql: Self.upsertSQL).execute(
            arguments: StatementArguments(try self.columnValues(sealingWith: keys))
        )
    }

    private static let upsertSQL =
        "INSERT INTO profile (\(columnNames.joined(separator: ", "))) VALUES ("
        + Array(repeating: "?", count: columnNames.count).joined(separator: ", ")
        + ") ON CONFLICT (user_id) DO UPDATE SET "
        + columnNames.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")

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
            isActive: self.isActive,
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
        profile.isActive = state.isActive
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
struct AlertRecord: TableRecord, Equatable, Sendable {
    static let databaseTableName = "alert"

    typealias Kind = MessageKind

    enum Channel: String, Sendable, CaseIterable {
        case email, push
    }

    enum State: String, Sendable, CaseIterable {
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
    /// An email address or a push token; sealed at rest while pending, emptied after. Read
    /// sealed and opened only where it is sent (``SealedText``): a claim never fails on it.
    var address: SealedText
    /// The keyed hash of a contact's address (``DataKeys/addressKey(_:)``), kept after the
    /// address is emptied: an all-clear finds the alarm's contact by it, if added again.
    var addressKey: String = ""
    /// Sealed at rest while pending, emptied after, as `address` is.
    var subject: SealedText
    var body: SealedText
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
}

// Read and written column by column: the address and words are sealed (``SealedField``) while
// the message is pending, and emptied once it is sent, failed or cancelled.
extension AlertRecord {
    /// The columns reads select, in the order `init(columns:keys:)` takes them.
    static let selection = selection(address: "address", subject: "subject", body: "body")

    /// ``selection`` with the address and the words read as `empty` (the engine's empty bytes:
    /// nothing to open), for reads that need neither: a status, a delivery's outcome (which
    /// keeps or forgets them in place).
    static func selectionWithoutWords(empty: String) -> String {
        selection(address: empty, subject: empty, body: empty)
    }

    private static func selection(address: String, subject: String, body: String) -> String {
        """
        SELECT id, user_id, epoch, kind, channel, contact_id, \(address), address_key, \(subject), \(body), state,
            attempts, last_error, next_attempt_at, sent_at, created_at, claimed_at, may_have_arrived
        """
    }

    /// A row of ``selection``, on either store, opened with `keys`.
    init(columns: some StoredColumns, keys: DataKeys) throws {
        self.id = try columns.string(0)
        self.userID = try columns.string(1)
        self.epoch = try columns.int(2)
        self.kind = try columns.string(3)
        let channel = try columns.string(4)
        guard let known = Channel(rawValue: channel) else {
            throw StoredValueError(message: "alert \(self.id) has channel \(channel)")
        }
        self.channel = known
        self.contactID = try columns.string(5)
        self.address = try keys.read(columns.bytes(6), .alertAddress, row: self.id)
        self.addressKey = try columns.string(7)
        self.subject = try keys.read(columns.bytes(8), .alertSubject, row: self.id)
        self.body = try keys.read(columns.bytes(9), .alertBody, row: self.id)
        let state = try columns.string(10)
        guard let stored = State(rawValue: state) else {
            throw StoredValueError(message: "alert \(self.id) has state \(state)")
        }
        self.state = stored
        self.attempts = try columns.int(11)
        self.lastError = try columns.string(12)
        self.nextAttemptAt = try columns.optionalDate(13)
        self.sentAt = try columns.optionalDate(14)
        self.createdAt = try columns.date(15)
        self.claimedAt = try columns.optionalDate(16)
        self.mayHaveArrived = try columns.bool(17)
    }

    /// The messages `sql` (after ``selection``) finds with `values` bound.
    static func fetchAll<each Value: StatementBinding>(
        _ db: Database,
        keys: DataKeys,
        selecting selection: String = Self.selection,
        _ sql: String,
        binding values: repeat each Value
    ) throws -> [AlertRecord] {
        try db.cachedStatement(sql: "\(selection) FROM alert \(sql)")
            .fetchAll(binding: repeat each values) { try AlertRecord(columns: $0, keys: keys) }
    }

    /// Inserts the message; a pending one with its address and words sealed, another without
    /// them. With `ignoringConflict`, one already decided (``alert_once``) is left as it is.
    func insert(in db: Database, sealingWith keys: DataKeys, ignoringConflict: Bool = false) throws {
        let keeps = self.state == .pending
        try db.cachedStatement(sql: ignoringConflict ? Self.insertOrIgnoreSQL : Self.insertSQL).execute(
            binding: self.id,
            self.userID,
            self.epoch,
            self.kind,
            self.channel.rawValue,
            self.contactID,
            keeps ? try keys.seal(self.address, .alertAddress, row: self.id) : Data(),
            self.addressKey,
            keeps ? try keys.seal(self.subject, .alertSubject, row: self.id) : Data(),
            keeps ? try keys.seal(self.body, .alertBody, row: self.id) : Data(),
            self.state.rawValue,
            self.attempts,
            self.lastError,
            self.nextAttemptAt?.stored,
            self.sentAt?.stored,
            self.createdAt.stored,
            self.claimedAt?.stored,
            self.mayHaveArrived
        )
    }

    private static let insertColumns = """
        (id, user_id, epoch, kind, channel, contact_id, address, address_key, subject, body, state, attempts,
            last_error, next_attempt_at, sent_at, created_at, claimed_at, may_have_arrived)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    private static let insertSQL = "INSERT INTO alert \(insertColumns)"
    private static let insertOrIgnoreSQL = "INSERT OR IGNORE INTO alert \(insertColumns)"

    /// Saves what became of an attempt (the address and words never change; once the message
    /// is no longer pending, they are emptied).
    func updateDelivery(in db: Database) throws {
        try db.cachedStatement(sql: self.state == .pending ? Self.updateSQL : Self.updateForgettingSQL).execute(
            binding: self.state.rawValue,
            self.attempts,
            self.lastError,
            self.nextAttemptAt?.stored,
            self.sentAt?.stored,
            self.claimedAt?.stored,
            self.mayHaveArrived,
            self.id
        )
    }

    /// What a message no longer pending stops keeping, as SQL: `UPDATE alert SET state = ...,`
    /// then this.
    static let forgetText = "address = x'', subject = x'', body = x''"

    private static let updateColumns = """
        state = ?, attempts = ?, last_error = ?, next_attempt_at = ?, sent_at = ?, claimed_at = ?, may_have_arrived = ?
        """
    private static let updateSQL = "UPDATE alert SET \(updateColumns) WHERE id = ?"
    private static let updateForgettingSQL = "UPDATE alert SET \(updateColumns), \(forgetText) WHERE id = ?"
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
        addressKey: String = "",
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
            address: SealedText(address),
            addressKey: addressKey,
            subject: SealedText(subject),
            body: SealedText(body),
            state: .pending,
            attempts: 0,
            lastError: "",
            nextAttemptAt: now,
            sentAt: nil,
            createdAt: now
        )
    }
}
