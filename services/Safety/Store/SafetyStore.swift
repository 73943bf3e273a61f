import Foundation
import GRDB
import HearthCore
import HearthStore

/// The safety service's SQLite store. Deciding what fires and recording it in the alert
/// outbox happen in one write transaction, so a decision is never lost or taken twice.
struct SafetyStore: Sendable {
    let base: Store
    /// Heartbeats arriving together are committed together (group commit).
    let heartbeats: WriteBatcher
    /// So are the outcomes of deliveries made at the same time.
    let outcomes: WriteBatcher

    init(location: StoreLocation, clock: any WallClock = SystemClock()) throws {
        self.base = try Store(location: location, migrator: SafetyMigrations.migrator, clock: clock)
        self.heartbeats = WriteBatcher(writer: self.base.writer)
        self.outcomes = WriteBatcher(writer: self.base.writer)
    }

    /// At a process start: attempts that a killed process left under way are due again at
    /// once, and each may have arrived (the process may have died after the server took it).
    /// Such an attempt, without an outcome, does not count toward giving up. One that a
    /// check-in cancelled meanwhile earns its contact the all-clear.
    func releaseClaims(allClear: (ProfileRecord, Date) -> (subject: String, body: String)) throws {
        let now = self.now
        try self.db.write { db in
            let claimed = try AlertRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM alert WHERE claimed_at IS NOT NULL")
            )
            for var alert in claimed {
                if alert.state == .pending { alert.nextAttemptAt = alert.claimedAt }
                alert.attempts -= 1
                alert.claimedAt = nil
                alert.mayHaveArrived = true
                try alert.update(db)
                if alert.state == .cancelled {
                    try Self.allClearIfCheckedInSince(alert, at: now, allClear, in: db)
                }
            }
        }
    }

    /// To the millisecond, as dates are stored: an answer built from it reads back equal.
    var now: Date { self.base.now }
    private var db: any DatabaseWriter { self.base.writer }

    // MARK: Profile and contacts

    /// Creates or updates the profile; a new profile starts its first period now. Changing
    /// the threshold moves the deadline (it counts from the last check-in).
    func upsertProfile(_ user: String, _ apply: @Sendable @escaping (inout ProfileRecord) -> Void) async throws
        -> ProfileRecord
    {
        let now = self.now
        return try await self.base.write { db in
            var profile =
                try Self.profile(user, in: db)
                ?? ProfileRecord(
                    userID: user,
                    name: "",
                    email: "",
                    thresholdHours: 24,
                    language: "en",
                    timeZone: "UTC",
                    reminderEnabled: false,
                    reminderHour: 9,
                    reminderMinute: 0,
                    pushToken: "",
                    countActivity: false,
                    periodStart: now,
                    lastCheckInAt: nil,
                    snoozes: 0,
                    snoozesInARow: 0,
                    pausedUntil: nil,
                    epoch: 1,
                    checkInEpoch: 1,
                    nextDueAt: nil,
                    createdAt: now,
                    updatedAt: now
                )
            let threshold = profile.thresholdHours
            let reminder = (profile.reminderEnabled, profile.reminderHour, profile.reminderMinute)
            let zone = profile.timeZone
            apply(&profile)
            profile.updatedAt = now
            if profile.thresholdHours != threshold {
                if try Self.decidedItems(profile, in: db).contains(.alert) {
                    // The alarm went out this period: only a check-in arms the switch again,
                    // whatever the new deadline (never the alarm twice in a period).
                    try Self.cancelPending(profile, onlyWarnings: true, in: db)
                } else {
                    // A new deadline: warnings decided for the old one do not stand for it.
                    try Self.newEpoch(&profile, at: now, in: db)
                }
            }
            try profile.save(db)
            // A new zone moves the reminder as much as a new time does.
            if profile.reminderEnabled,
                reminder != (true, profile.reminderHour, profile.reminderMinute) || profile.timeZone != zone
            {
                try Self.reconsiderTodaysReminder(profile, at: now, in: db)
            }
            return try Self.reschedule(profile, at: now, in: db)
        }
    }

    func profile(_ user: String) async throws -> ProfileRecord? {
        try self.base.read { db in
            try Self.profile(user, in: db)
        }
    }

    enum ContactOutcome: Sendable {
        case added(ContactRecord)
        case noProfile
        case duplicate
        case full
    }

    func addContact(_ user: String, email: String, name: String) async throws -> ContactOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard
                var profile = try Self.profile(user, in: db)
            else { return .noProfile }
            let key = email.lowercased()
            let existing = try ContactRecord.filter(Column("user_id") == user).fetchAll(db)
            if existing.contains(where: { $0.emailKey == key }) { return .duplicate }
            guard existing.count < SafetyRules.maxContacts else { return .full }
            let contact = ContactRecord(
                id: UUID().uuidString.lowercased(),
                userID: user,
                email: email,
                emailKey: key,
                name: name,
                createdAt: now
            )
            try contact.insert(db)
            if existing.isEmpty, profile.periodStart < now {
                // The switch is armed now: its period counts from now, not from when the profile
                // was made (that deadline may be long past: an alarm as the first email). Snoozes
                // stay, so the deadline only moves later.
                try Self.newEpoch(&profile, at: now, in: db)
                profile.periodStart = now
            }
            // Reminders begin with the switch: armed after today's time, the first is tomorrow's.
            if existing.isEmpty, profile.reminderEnabled { try Self.reconsiderTodaysReminder(profile, at: now, in: db) }
            _ = try Self.reschedule(profile, at: now, in: db)
            return .added(contact)
        }
    }

    /// Removes a contact; false when the user has none with that id.
    func removeContact(_ user: String, id: String) async throws -> Bool {
        let now = self.now
        return try await self.base.write { db in
            let deleted = try ContactRecord.filter(Column("user_id") == user && Column("id") == id).deleteAll(db) > 0
            if deleted {
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL
                        WHERE user_id = ? AND contact_id = ? AND state = 'pending'
                        """
                ).execute(arguments: [user, id])
            }
            if deleted,
                let profile = try Self.profile(user, in: db)
            {
                _ = try Self.reschedule(profile, at: now, in: db)
            }
            return deleted
        }
    }

    func contacts(_ user: String) async throws -> [ContactRecord] {
        try self.base.read { db in
            try ContactRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM contact WHERE user_id = ? ORDER BY created_at, id"),
                arguments: [user]
            )
        }
    }

    /// Removes the profile, contacts, heartbeats and every alert for good.
    func deleteAccount(_ user: String) async throws {
        _ = try await self.base.write { db in try ProfileRecord.deleteOne(db, key: user) }
    }

    // MARK: Check-ins

    enum HeartbeatOutcome: Sendable {
        /// Counted: a new period began.
        case recorded
        /// The same request id, or within 5 s of the previous heartbeat (or a forwarded activity
        /// from before the period began): nothing changed.
        case repeated
        /// Over 120 counted in the last hour: the switch was reset, the heartbeat kept uncounted.
        case rateLimited(retryAfter: TimeInterval)
        case noProfile
    }

    /// A check-in: a new period starts, every pending warning and alert of the old one is
    /// cancelled, and contacts who were alerted get an all-clear email.
    func recordHeartbeat(
        _ user: String,
        timeZone: String?,
        deviceInfo: String,
        requestID: String,
        source: String,
        occurredAt: Date? = nil,
        allClear: @Sendable @escaping (ProfileRecord, Date) -> (subject: String, body: String)
    ) async throws -> HeartbeatResult {
        // A forwarded activity counts from when it happened (never from the future).
        let clockNow = self.now
        let now = occurredAt.map { min(Store.asStored($0), clockNow) } ?? clockNow
        return try await self.heartbeats.write { db in
            var result = HeartbeatResult(outcome: .noProfile, status: nil, enqueued: false, dueSooner: false)
            (result.outcome, result.status) = try Self.heartbeat(
                user,
                at: now,
                receivedAt: clockNow,
                forwarded: occurredAt != nil,
                timeZone: timeZone,
                deviceInfo: deviceInfo,
                requestID: requestID,
                source: source,
                allClear: allClear,
                result: &result,
                in: db
            )
            return result
        }
    }

    struct HeartbeatResult: Sendable {
        var outcome: HeartbeatOutcome
        /// The status right after it, read in the same transaction.
        var status: StatusSnapshot?
        /// Whether it put something in the outbox (all-clear emails): the senders must look.
        var enqueued: Bool
        /// Whether the switch is now due sooner than before (a check-in after a snooze ends
        /// the snooze; a new zone moves the daily reminder): the scheduler must look again.
        var dueSooner: Bool
    }

    /// `forwarded`: an activity elsewhere, at `now` (when it happened), which may be some time
    /// ago.
    private static func heartbeat(
        _ user: String,
        at now: Date,
        receivedAt: Date,
        forwarded: Bool,
        timeZone: String?,
        deviceInfo: String,
        requestID: String,
        source: String,
        allClear: @Sendable @escaping (ProfileRecord, Date) -> (subject: String, body: String),
        result: inout HeartbeatResult,
        in db: Database
    ) throws -> (HeartbeatOutcome, StatusSnapshot?) {
        guard
            var profile = try Self.profile(user, in: db)
        else { return (.noProfile, nil) }
        // A repeat changes nothing and answers the status as it stands.
        let repeated = { (HeartbeatOutcome.repeated, try Self.snapshot(profile, in: db) as StatusSnapshot?) }
        // An activity at or before the last check-in, or from before the period began (a
        // forward delayed past a resume, or past the first contact arming the switch), says
        // nothing about this period: starting one from it would move the deadline back, to a
        // false alarm. A retry of it comes with the same time, so it is answered the same.
        if forwarded, now <= (profile.lastCheckInAt ?? .distantPast) || now < profile.periodStart {
            return try repeated()
        }
        // An activity from before an alarm that may have reached the contacts, delayed on its
        // way here, ends it only if the period it would start has time left (see the rule).
        if forwarded, let alarmed = try Self.alarmDecidedAt(profile, in: db),
            !SafetyRules.lateActivityEndsAlarm(
                activityAt: now,
                alarmDecidedAt: alarmed,
                thresholdHours: profile.thresholdHours,
                receivedAt: receivedAt
            )
        {
            return try repeated()
        }
        let dueBefore = profile.nextDueAt
        // The last hour's heartbeats: the counted ones for the rate limit, how many were kept
        // uncounted, and whether one of them is this request again; an older one with its id is
        // found by the insert below.
        var counted: [Date] = []
        var uncounted = 0
        var sentBefore = false
        try db.cachedStatement(
            sql: "SELECT at, counted, request_id = ? FROM heartbeat WHERE user_id = ? AND at > ? ORDER BY at"
        )
        .forEachRow(binding: requestID, user, now.addingTimeInterval(-3600).stored) { columns in
            if try columns.value(1) as Bool { counted.append(try columns.date(0)) } else { uncounted += 1 }
            if try columns.value(2) as Bool { sentBefore = true }
        }
        if sentBefore { return try repeated() }
        let insert = { (counted: Bool) in
            try db.cachedStatement(
                sql: """
                    INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id, counted)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, request_id) DO NOTHING
                    """
            ).execute(binding: user, now.stored, timeZone ?? profile.timeZone, deviceInfo, source, requestID, counted)
        }
        // Check-ins that do not count toward the rate limit are kept too (uncounted), so that a
        // late retry of one is known as that check-in: those from the app, at most 64 an hour.
        // (A forwarded activity's retry comes with its own time, which the checks above answer
        // as they did the first time.)
        let keepsUncounted = !forwarded && uncounted < SafetyRules.maxUncountedHeartbeatsPerHour
        // Within 5 s of the last check-in (not the last row: one over the rate limit resets the
        // timer too), or at a time not after it: merged into it.
        if let last = profile.lastCheckInAt, now.timeIntervalSince(last) < SafetyRules.coalesceWindow {
            if keepsUncounted { try insert(false) }
            return try repeated()
        }
        // Over the rate limit it still resets the timer.
        let limited = counted.count >= SafetyRules.maxHeartbeatsPerHour
        if !limited || keepsUncounted {
            try insert(!limited)
            // Nothing inserted: this request id was recorded more than an hour ago.
            if db.changesCount == 0 { return try repeated() }
        } else if try db.cachedStatement(sql: "SELECT 1 FROM heartbeat WHERE user_id = ? AND request_id = ?")
            .fetchOne(binding: user, requestID, read: { _ in true }) != nil
        {
            // Not kept, so no conflict tells an older repeat: asked (rare, and cheap by key).
            return try repeated()
        }
        if let timeZone { profile.timeZone = timeZone }
        result.enqueued = try Self.startPeriod(&profile, at: now, checkIn: true, allClear: allClear, in: db) > 0
        let clock: SwitchClock
        // The period began just now: nothing in it is decided yet, and its only messages are
        // the all-clears just enqueued, if any.
        (profile, clock) = try Self.rescheduled(profile, at: now, decided: [], in: db)
        if let due = profile.nextDueAt { result.dueSooner = dueBefore.map { due < $0 } ?? true }
        let status = StatusSnapshot(
            profile: profile,
            clock: clock,
            alerts: result.enqueued ? try Self.periodAlerts(profile, in: db) : []
        )
        if limited, let oldest = counted.first {
            return (.rateLimited(retryAfter: oldest.addingTimeInterval(3600).timeIntervalSince(now)), status)
        }
        return (.recorded, status)
    }

    enum SwitchChange: Sendable {
        case changed(ProfileRecord)
        case noProfile
        case refused(String)
    }

    /// Moves the deadline 24 h later, at most three times without a check-in, never after it passed
    /// (nor once the alarm was decided: a snooze that read its time before the decider took the
    /// writer, or a clock stepped back, would start a period that alarms again).
    func snooze(_ user: String) async throws -> SwitchChange {
        try await self.base.write { [store = self] db in
            let now = store.now
            guard
                var profile = try Self.profile(user, in: db)
            else { return .noProfile }
            // A pause that ran out before the decider saw it: the snooze moves the period it began.
            try Self.endPauseIfOver(&profile, at: now, in: db)
            let clock = try Self.switchClock(profile, in: db)
            if let pausedUntil = profile.pausedUntil, clock.isPaused(at: now) {
                // Its end starts a new period, snoozes gone: a snooze now would change nothing.
                return .refused("the switch is paused until \(pausedUntil.formatted(.iso8601)); nothing fires before")
            }
            guard profile.snoozesInARow < SafetyRules.maxSnoozesInARow else {
                return .refused("at most \(SafetyRules.maxSnoozesInARow) snoozes in a row; check in instead")
            }
            guard clock.deadline > now else { return .refused("the deadline has passed; check in instead") }
            guard try !Self.decidedItems(profile, in: db).contains(.alert) else {
                return .refused("your emergency contacts were emailed this period; check in instead")
            }
            profile.snoozes += 1
            profile.snoozesInARow += 1
            try Self.newEpoch(&profile, at: now, in: db)
            return .changed(try Self.reschedule(profile, at: now, in: db))
        }
    }

    /// Nothing fires until `until` (or a resume); then a new period starts.
    func pause(_ user: String, until: Date) async throws -> SwitchChange {
        let now = self.now
        return try await self.base.write { db in
            guard
                var profile = try Self.profile(user, in: db)
            else { return .noProfile }
            profile.pausedUntil = until
            // Pausing is a sign of life: nothing decided before it goes out, alerts included.
            try Self.cancelPending(profile, onlyWarnings: false, in: db)
            return .changed(try Self.reschedule(profile, at: now, in: db))
        }
    }

    func resume(_ user: String) async throws -> SwitchChange {
        let now = self.now
        return try await self.base.write { db in
            guard
                var profile = try Self.profile(user, in: db)
            else { return .noProfile }
            guard profile.pausedUntil.map({ $0 > now }) == true else { return .refused("the switch is not paused") }
            profile.pausedUntil = nil
            try Self.startPeriod(&profile, at: now, checkIn: false, allClear: nil, in: db)
            return .changed(try Self.reschedule(profile, at: now, in: db))
        }
    }

    // MARK: Status

    struct StatusSnapshot: Sendable {
        var profile: ProfileRecord
        var clock: SwitchClock
        var alerts: [AlertRecord]
    }

    /// The profile, its switch, and the messages of this period (since the last check-in).
    func status(_ user: String) async throws -> StatusSnapshot? {
        try self.base.read { db in try Self.snapshot(user, in: db) }
    }

    private static func snapshot(_ user: String, in db: Database) throws -> StatusSnapshot? {
        try Self.profile(user, in: db).map { try Self.snapshot($0, in: db) }
    }

    /// The status of `profile` as it stands in this transaction.
    private static func snapshot(_ profile: ProfileRecord, in db: Database) throws -> StatusSnapshot {
        StatusSnapshot(
            profile: profile,
            clock: try Self.switchClock(profile, in: db),
            alerts: try Self.periodAlerts(profile, in: db)
        )
    }

    /// The messages of `profile`'s period (since its last check-in), test messages aside.
    private static func periodAlerts(_ profile: ProfileRecord, in db: Database) throws -> [AlertRecord] {
        try AlertRecord.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM alert WHERE user_id = ? AND epoch >= ? AND kind != 'test' ORDER BY created_at, id"
            ),
            arguments: [profile.userID, profile.checkInEpoch]
        )
    }

    /// Records a test message for delivery, unless the user asked for ``SafetyRules/maxTestsPerHour``
    /// on this channel in the last hour: then nil, or how long until the next may be asked for.
    func enqueueTest(_ user: String, channel: AlertRecord.Channel, address: String, subject: String, body: String)
        async throws -> TimeInterval?
    {
        let now = self.now
        return try await self.base.write { db in
            let lastHour = try Date.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT created_at FROM alert WHERE user_id = ? AND kind = ? AND channel = ? AND created_at > ?
                        ORDER BY created_at
                        """
                ),
                arguments: [user, AlertRecord.Kind.test, channel.rawValue, now.addingTimeInterval(-3600)]
            )
            if lastHour.count >= SafetyRules.maxTestsPerHour, let oldest = lastHour.first {
                return oldest.addingTimeInterval(3600).timeIntervalSince(now)
            }
            let epoch =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT epoch FROM profile WHERE user_id = ?"),
                    arguments: [user]
                ) ?? 0
            try AlertRecord(
                id: UUID().uuidString.lowercased(),
                userID: user,
                epoch: epoch,
                kind: AlertRecord.Kind.test,
                channel: channel,
                contactID: "",
                address: address,
                subject: subject,
                body: body,
                state: .pending,
                attempts: 0,
                lastError: "",
                nextAttemptAt: now,
                sentAt: nil,
                createdAt: now
            ).insert(db)
            return nil
        }
    }

    // MARK: History

    /// How long heartbeats are kept: the rate limit reads the last hour; a request id older
    /// than this is no longer recognised as a repeat.
    static let heartbeatRetention: TimeInterval = 30 * 86_400
    /// How long alerts of periods before the last check-in are kept (nothing reads them; they
    /// are there to look at).
    static let alertRetention: TimeInterval = 90 * 86_400

    /// Deletes history no rule reads any more: heartbeats older than ``heartbeatRetention``,
    /// and alerts older than ``alertRetention`` of periods before the user's last check-in (an
    /// all-clear reads every alert since it; the current period's stay whatever their age),
    /// never one pending or under way. Users in batches, a bounded number of rows a
    /// transaction (``UserBatches``). Returns how many rows of each went.
    func pruneHistory(
        now: Date,
        usersPerBatch: Int = 500,
        rowsPerTransaction: Int = 5000
    ) async throws -> (heartbeats: Int, alerts: Int) {
        let heartbeatsBefore = StoredDate(now.addingTimeInterval(-Self.heartbeatRetention))
        let alertsBefore = StoredDate(now.addingTimeInterval(-Self.alertRetention))
        let deleted = try await UserBatches.prune(
            writer: self.db,
            usersPerBatch: usersPerBatch,
            rowsPerTransaction: rowsPerTransaction,
            users: { db, after, limit in
                // Through the primary key, with the epoch of each user's last check-in.
                try Row.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT user_id, check_in_epoch FROM profile WHERE user_id > ? ORDER BY user_id LIMIT ?"
                    ),
                    arguments: [after, limit]
                ).map { (user: $0["user_id"] as String, checkInEpoch: $0["check_in_epoch"] as Int) }
            },
            id: \.user,
            delete: { db, profile, budget in
                try db.cachedStatement(
                    sql: """
                        DELETE FROM heartbeat WHERE user_id = ? AND request_id IN (
                            SELECT request_id FROM heartbeat WHERE user_id = ? AND at < ? LIMIT ?)
                        """
                ).execute(arguments: [profile.user, profile.user, heartbeatsBefore, budget])
                let heartbeats = db.changesCount
                guard heartbeats < budget else { return ["heartbeats": heartbeats] }
                try db.cachedStatement(
                    sql: """
                        DELETE FROM alert WHERE rowid IN (
                            SELECT rowid FROM alert WHERE user_id = ? AND epoch < ? AND created_at < ?
                                AND state != 'pending' AND claimed_at IS NULL
                            LIMIT ?)
                        """
                ).execute(arguments: [profile.user, profile.checkInEpoch, alertsBefore, budget - heartbeats])
                return ["heartbeats": heartbeats, "alerts": db.changesCount]
            }
        )
        return (deleted["heartbeats", default: 0], deleted["alerts", default: 0])
    }

    // MARK: The scheduler's side

    /// The earliest time a switch is due to be looked at.
    func nextDecisionTime() async throws -> Date? {
        try self.base.read { db in
            try Date.fetchOne(
                db.cachedStatement(sql: "SELECT MIN(next_due_at) FROM profile WHERE next_due_at IS NOT NULL")
            )
        }
    }

    /// The earliest time a message of `channel` is due to be (re)sent, leaving out `excluded`.
    func nextAttemptTime(_ channel: AlertRecord.Channel, excluding excluded: Set<String>) async throws -> Date? {
        try self.base.read { db in
            var next: Date?
            try db.cachedStatement(
                sql: """
                    SELECT id, next_attempt_at FROM alert WHERE state = 'pending' AND channel = ?
                    ORDER BY next_attempt_at LIMIT ?
                    """
            ).forEachRow(binding: channel.rawValue, excluded.count + 1) { columns in
                let id: String = try columns.value(0)
                if next == nil, !excluded.contains(id) { next = try columns.date(1) }
            }
            return next
        }
    }

    /// Decides what is due for up to `limit` switches, in one transaction: warnings while the
    /// deadline is ahead, the alert (one row per contact) once it passed. Answers how many
    /// switches it looked at.
    func decideDue(
        now: Date,
        limit: Int,
        texts: @Sendable @escaping (ProfileRecord, DueItem, Date) -> (subject: String, body: String),
        reminderText: @Sendable @escaping (ProfileRecord) -> (subject: String, body: String)
    ) async throws -> Int {
        // Most passes find nothing: look with a read before taking the writer.
        let anyDue = try self.base.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM profile WHERE next_due_at <= ? LIMIT 1"),
                arguments: [now.stored]
            )
                ?? false
        }
        guard anyDue else { return 0 }
        return try await self.base.write { db in
            let due = try db.cachedStatement(
                sql: "\(ProfileRecord.selection) FROM profile WHERE next_due_at <= ? ORDER BY next_due_at LIMIT ?"
            ).fetchAll(binding: now.stored, limit, read: ProfileRecord.init(columns:))
            for var profile in due {
                try Self.endPauseIfOver(&profile, at: now, in: db)
                let clock = try Self.switchClock(profile, in: db)
                let decided = try Self.decidedItems(profile, in: db)
                let items = clock.itemsDue(at: now, decided: decided)
                if !items.send.isEmpty {
                    // A warning still retrying is stale once a later one (or the alert) is decided.
                    try Self.cancelPending(profile, onlyWarnings: true, in: db)
                }
                // Earlier warnings that fell due with a later one: decided, never sent.
                for item in items.skip {
                    try Self.enqueueWarning(profile, item, text: ("", ""), at: now, state: .cancelled, in: db)
                }
                for item in items.send {
                    let text = texts(profile, item, now)
                    switch item {
                    case .warning:
                        try Self.enqueueWarning(profile, item, text: text, at: now, in: db)
                    case .alert:
                        for contact in try ContactRecord.filter(Column("user_id") == profile.userID).fetchAll(db) {
                            try Self.enqueueEmail(profile, item.kind, to: contact, text: text, at: now, in: db)
                        }
                    }
                }
                if let reminder = try Self.reminderDue(profile, clock, at: now, in: db), reminder.time <= now {
                    try Self.enqueue(
                        profile,
                        kind: AlertRecord.Kind.reminder,
                        channel: .push,
                        contactID: "\(AlertRecord.Kind.reminder):\(reminder.date)",
                        address: profile.pushToken,
                        text: reminderText(profile),
                        at: now,
                        in: db
                    )
                }
                _ = try Self.reschedule(profile, at: now, in: db)
            }
            return due.count
        }
    }

    /// Claims up to `limit` messages of `channel` due by `now` (oldest first, leaving out
    /// `excluded`) for an attempt, in one write: the attempt is counted, and the message is not
    /// due again until `lease` has passed, so no other pass takes it meanwhile, and one whose
    /// outcome cannot be written (a full disk) does not go out pass after pass.
    func claimDue(
        _ channel: AlertRecord.Channel,
        now: Date,
        limit: Int,
        lease: TimeInterval,
        excluding excluded: Set<String> = []
    ) async throws -> [AlertRecord] {
        // Most passes find nothing: look with a read before taking the writer. A message under
        // way (excluded) is usually not due (its lease is ahead), but may be (a send longer
        // than its lease): only a due message not under way counts.
        let anyDue = try self.base.read { db in
            try db.cachedStatement(
                sql: "SELECT id FROM alert WHERE state = 'pending' AND channel = ? AND next_attempt_at <= ? LIMIT ?"
            )
            .fetchAll(binding: channel.rawValue, now.stored, excluded.count + 1) { try $0.value(0) as String }
            .contains { !excluded.contains($0) }
        }
        guard anyDue else { return [] }
        let claimedAt = self.now
        let retryAt = claimedAt.addingTimeInterval(lease)
        return try await self.base.write { db in
            let due = try AlertRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM alert WHERE state = 'pending' AND channel = ? AND next_attempt_at <= ?
                        ORDER BY next_attempt_at LIMIT ?
                        """
                ),
                arguments: [channel.rawValue, now.stored, limit + excluded.count]
            )
            var claimed: [AlertRecord] = []
            for var alert in due where !excluded.contains(alert.id) && claimed.count < limit {
                if try Self.isStaleWarning(alert, at: now, in: db) {
                    try db.cachedStatement(
                        sql:
                            "UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, claimed_at = NULL WHERE id = ?"
                    ).execute(binding: alert.id)
                    continue
                }
                alert.attempts += 1
                alert.claimedAt = claimedAt
                alert.nextAttemptAt = retryAt
                try db.cachedStatement(
                    sql: "UPDATE alert SET attempts = ?, claimed_at = ?, next_attempt_at = ? WHERE id = ?"
                ).execute(binding: alert.attempts, claimedAt.stored, retryAt.stored, alert.id)
                claimed.append(alert)
            }
            return claimed
        }
    }

    /// A warning left pending past its deadline (decided before a restart, or retrying while
    /// the webhook was down): "we'll email your contact in 10 minutes" while they are being
    /// emailed. The decider cancels such warnings when it decides the alert, but a sender may
    /// claim one first (both start at once after a restart).
    private static func isStaleWarning(_ alert: AlertRecord, at now: Date, in db: Database) throws -> Bool {
        guard alert.kind != AlertRecord.Kind.alert, Self.cancellableKinds.contains(alert.kind) else { return false }
        guard let profile = try Self.profile(alert.userID, in: db), profile.epoch == alert.epoch else { return true }
        return try Self.switchClock(profile, in: db).deadline <= now
    }

    /// What became of a claimed attempt. A message cancelled meanwhile (a check-in, a pause) is
    /// not tried again; but one that went out all the same is recorded as sent, and an alert
    /// that went out or may have (no answer came to its content) earns its contact the
    /// all-clear when a check-in cancelled it (`allClear`'s words).
    func record(
        _ id: String,
        attempt: Result<String, DeliveryFailure>,
        now: Date,
        allClear: @Sendable @escaping (ProfileRecord, Date) -> (subject: String, body: String)
    ) async throws {
        try await self.outcomes.write { db in
            if case .success(let note) = attempt {
                // The common case, in one prepared statement.
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET state = 'sent', sent_at = ?, next_attempt_at = NULL, claimed_at = NULL,
                          last_error = ?
                        WHERE id = ? AND state = 'pending'
                        """
                ).execute(binding: now.stored, note, id)
                if db.changesCount > 0 { return }
            }
            guard var alert = try AlertRecord.fetchOne(db, cachedKey: id) else { return }
            alert.claimedAt = nil
            switch (attempt, alert.state) {
            case (.success(let note), .cancelled):
                alert.state = .sent
                alert.sentAt = now
                alert.nextAttemptAt = nil
                alert.lastError = note
            case (.success, _):
                break
            case (.failure(let failure), _):
                alert.lastError = failure.message
                alert.mayHaveArrived = alert.mayHaveArrived || failure.mayHaveArrived
                if alert.state == .pending {
                    if failure.isPermanent
                        || !DeliveryFailure.retriesForever(alert) && alert.attempts >= DeliveryFailure.maxAttempts
                    {
                        alert.state = .failed
                        alert.nextAttemptAt = nil
                    } else {
                        alert.nextAttemptAt = now.addingTimeInterval(
                            DeliveryFailure.backoff(afterAttempts: alert.attempts)
                        )
                    }
                }
            }
            try alert.update(db)
            if alert.state == .sent || (alert.state == .cancelled && alert.mayHaveArrived) {
                try Self.allClearIfCheckedInSince(alert, at: now, allClear, in: db)
            }
        }
    }

    // MARK: Inside a transaction

    /// An alert that reached its contact, or may have, after a check-in cancelled it while it
    /// was under way: its contact now holds an alarm that is over, and is sent the all-clear
    /// (once per contact and period, as any all-clear).
    private static func allClearIfCheckedInSince(
        _ alert: AlertRecord,
        at now: Date,
        _ allClear: (ProfileRecord, Date) -> (subject: String, body: String),
        in db: Database
    ) throws {
        guard alert.kind == AlertRecord.Kind.alert, let profile = try Self.profile(alert.userID, in: db),
            profile.checkInEpoch > alert.epoch,
            let contact = try Self.contacts(alert.userID, alerted: [(alert.contactID, alert.address)], in: db).first,
            // A check-in since may have sent it one already (the attempt was known then).
            try db.cachedStatement(
                sql: "SELECT 1 FROM alert WHERE user_id = ? AND kind = ? AND contact_id = ? AND epoch > ? LIMIT 1"
            ).fetchOne(binding: alert.userID, AlertRecord.Kind.allClear, contact.id, alert.epoch, read: { _ in true })
                == nil
        else { return }
        try Self.enqueueEmail(
            profile,
            AlertRecord.Kind.allClear,
            to: contact,
            text: allClear(profile, profile.lastCheckInAt ?? now),
            at: now,
            in: db
        )
    }

    /// The user's contacts now that `alerted` names: by id, or by address (case aside) for one
    /// removed and added again since, who still holds the alarm. One removed and not added
    /// again gets nothing more: the user took them off the list.
    private static func contacts(
        _ user: String,
        alerted: [(contactID: String, address: String)],
        in db: Database
    ) throws -> [ContactRecord] {
        let ids = Set(alerted.map(\.contactID))
        let keys = Set(alerted.map { $0.address.lowercased() })
        return try ContactRecord.filter(Column("user_id") == user).fetchAll(db)
            .filter { ids.contains($0.id) || keys.contains($0.emailKey) }
    }

    private static func profile(_ user: String, in db: Database) throws -> ProfileRecord? {
        try db.cachedStatement(sql: "\(ProfileRecord.selection) FROM profile WHERE user_id = ?")
            .fetchOne(binding: user, read: ProfileRecord.init(columns:))
    }

    private static func switchClock(_ profile: ProfileRecord, in db: Database) throws -> SwitchClock {
        let contacts =
            try db.cachedStatement(sql: "SELECT COUNT(*) FROM contact WHERE user_id = ?")
            .fetchOne(binding: profile.userID) { try $0.value(0) as Int } ?? 0
        return SwitchClock(
            periodStart: profile.periodStart,
            thresholdHours: profile.thresholdHours,
            snoozes: profile.snoozes,
            pausedUntil: profile.pausedUntil,
            armed: contacts > 0
        )
    }

    /// When the latest alarm since the last check-in was decided, of those that may have
    /// reached a contact (sent, tried, or under way); nil when none.
    private static func alarmDecidedAt(_ profile: ProfileRecord, in db: Database) throws -> Date? {
        try db.cachedStatement(
            sql: """
                SELECT MAX(created_at) FROM alert WHERE user_id = ? AND epoch >= ? AND kind = ?
                    AND (state = 'sent' OR may_have_arrived OR claimed_at IS NOT NULL)
                """
        ).fetchOne(binding: profile.userID, profile.checkInEpoch, AlertRecord.Kind.alert) { try $0.optionalDate(0) }
            ?? nil
    }

    private static func decidedItems(_ profile: ProfileRecord, in db: Database) throws -> Set<DueItem> {
        let kinds = try db.cachedStatement(sql: "SELECT DISTINCT kind FROM alert WHERE user_id = ? AND epoch = ?")
            .fetchAll(binding: profile.userID, profile.epoch) { try $0.value(0) as String }
        return Set(SwitchClock.items.filter { kinds.contains($0.kind) })
    }

    /// Sets when the scheduler looks at this switch next, and saves the profile.
    @discardableResult
    private static func reschedule(_ profile: ProfileRecord, at now: Date, in db: Database) throws -> ProfileRecord {
        try Self.rescheduled(profile, at: now, decided: Self.decidedItems(profile, in: db), in: db).profile
    }

    /// ``reschedule(_:at:in:)`` for a caller that knows which items of the current epoch are
    /// `decided` already, also answering the switch's clock it read.
    private static func rescheduled(
        _ profile: ProfileRecord,
        at now: Date,
        decided: Set<DueItem>,
        in db: Database
    ) throws -> (profile: ProfileRecord, clock: SwitchClock) {
        var profile = profile
        let clock = try Self.switchClock(profile, in: db)
        let next = clock.nextDue(after: now, decided: decided)
        let reminder = try Self.reminderDue(profile, clock, at: now, in: db).map { max($0.time, now) }
        profile.nextDueAt = [next, reminder].compactMap { $0 }.min()
        try profile.saveSwitch(in: db)
        return (profile, clock)
    }

    /// The next daily reminder (nil when off, paused or not armed: nothing is scheduled for a
    /// switch without contacts): a day needs none once the user checked in that day or was
    /// reminded.
    private static func reminderDue(_ profile: ProfileRecord, _ clock: SwitchClock, at now: Date, in db: Database)
        throws -> (date: LocalDate, time: Date)?
    {
        guard profile.reminderEnabled, clock.armed, !clock.isPaused(at: now) else { return nil }
        let zone = TimeZone(iana: profile.timeZone) ?? .gmt
        let rule = DailyReminderRule(hour: profile.reminderHour, minute: profile.reminderMinute, zone: zone)
        let sent = Set(
            try db.cachedStatement(
                sql: "SELECT contact_id FROM alert WHERE user_id = ? AND kind = ? AND created_at > ?"
            )
            .fetchAll(binding: profile.userID, AlertRecord.Kind.reminder, now.addingTimeInterval(-3 * 86_400).stored) {
                try $0.value(0) as String
            }
        )
        let checkedIn = profile.lastCheckInAt.map { LocalDate($0, in: zone) }
        return rule.next(at: now) { date in
            date == checkedIn || sent.contains("\(AlertRecord.Kind.reminder):\(date)")
        }
    }

    /// A reminder turned on (or moved) after today's time has passed starts tomorrow: today's
    /// is recorded as decided, not sent at once. Moved to a time still ahead today, it comes
    /// today after all (unless it came already).
    private static func reconsiderTodaysReminder(_ profile: ProfileRecord, at now: Date, in db: Database) throws {
        let zone = TimeZone(iana: profile.timeZone) ?? .gmt
        let today = LocalDate(now, in: zone)
        let contactID = "\(AlertRecord.Kind.reminder):\(today)"
        guard today.instant(hour: profile.reminderHour, minute: profile.reminderMinute, in: zone) <= now else {
            try db.cachedStatement(
                sql: "DELETE FROM alert WHERE user_id = ? AND kind = ? AND contact_id = ? AND state = 'cancelled'"
            ).execute(arguments: [profile.userID, AlertRecord.Kind.reminder, contactID])
            return
        }
        try Self.enqueue(
            profile,
            kind: AlertRecord.Kind.reminder,
            channel: .push,
            contactID: contactID,
            address: profile.pushToken,
            text: (subject: "", body: ""),
            at: now,
            state: .cancelled,
            in: db
        )
    }

    private static func newEpoch(_ profile: inout ProfileRecord, at now: Date, in db: Database) throws {
        try Self.cancelPending(profile, onlyWarnings: true, in: db)
        profile.epoch += 1
        profile.updatedAt = now
    }

    /// A pause that ran out: a new period starts when it ended, unless a check-in since began a
    /// later one (never moved back to the pause's end: an early alarm).
    private static func endPauseIfOver(_ profile: inout ProfileRecord, at now: Date, in db: Database) throws {
        guard let pausedUntil = profile.pausedUntil, pausedUntil <= now else { return }
        profile.pausedUntil = nil
        if profile.periodStart < pausedUntil {
            try Self.startPeriod(&profile, at: pausedUntil, checkIn: false, allClear: nil, in: db)
        }
    }

    /// A new period from `start`: a check-in (cancels what is pending, sends all-clears) or
    /// the end of a pause.
    @discardableResult
    private static func startPeriod(
        _ profile: inout ProfileRecord,
        at start: Date,
        checkIn: Bool,
        allClear: (@Sendable (ProfileRecord, Date) -> (subject: String, body: String))?,
        in db: Database
    ) throws -> Int {
        // Every alert since the last check-in, in one read: whether any is pending, and which
        // contacts were alerted. (Pending warnings and alerts are never older than the last
        // check-in: each check-in cancels them all.)
        var hasPending = false
        var alerted: [(contactID: String, address: String)] = []
        try db.cachedStatement(
            sql: "SELECT kind, state, contact_id, may_have_arrived, address FROM alert WHERE user_id = ? AND epoch >= ?"
        )
        .forEachRow(binding: profile.userID, profile.checkInEpoch) { columns in
            let kind: String = try columns.value(0)
            let state: String = try columns.value(1)
            let pending = state == AlertRecord.State.pending.rawValue
            if pending, Self.cancellableKinds.contains(kind) {
                hasPending = true
            }
            // An alert whose attempt ended without an answer to its content may have reached
            // its contact, whatever became of it since (a pause cancelled it, it failed later):
            // it gets the all-clear too. One under way gets it when its outcome is known.
            let mayHaveArrived: Bool = try columns.value(3)
            if kind == AlertRecord.Kind.alert, state == AlertRecord.State.sent.rawValue || mayHaveArrived {
                alerted.append((try columns.value(2), try columns.value(4)))
            }
        }
        if hasPending { try Self.cancelPending(profile, onlyWarnings: false, in: db) }
        profile.epoch += 1
        profile.periodStart = start
        profile.snoozes = 0
        profile.updatedAt = start
        guard checkIn else { return 0 }
        profile.snoozesInARow = 0
        profile.lastCheckInAt = start
        profile.checkInEpoch = profile.epoch
        if let allClear {
            guard !alerted.isEmpty else { return 0 }
            let text = allClear(profile, start)
            let contacts = try Self.contacts(profile.userID, alerted: alerted, in: db)
            for contact in contacts {
                try Self.enqueueEmail(profile, AlertRecord.Kind.allClear, to: contact, text: text, at: start, in: db)
            }
            return contacts.count
        }
        return 0
    }

    /// The kinds a check-in or resume cancels while pending: the due items'.
    private static let cancellableKinds = Set(SwitchClock.items.map(\.kind))

    private static let cancelPendingSQL = """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL
        WHERE user_id = ? AND state = 'pending' AND kind IN (\(cancellableKinds.sorted().map { "'\($0)'" }.joined(separator: ", ")))
        """
    private static let cancelPendingWarningsSQL = """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL
        WHERE user_id = ? AND state = 'pending' AND kind LIKE 'warning_%'
        """

    private static func cancelPending(_ profile: ProfileRecord, onlyWarnings: Bool, in db: Database) throws {
        try db.cachedStatement(sql: onlyWarnings ? Self.cancelPendingWarningsSQL : Self.cancelPendingSQL)
            .execute(binding: profile.userID)
    }

    /// An email of `kind` (the alert, an all-clear) to a contact, once per epoch.
    private static func enqueueEmail(
        _ profile: ProfileRecord,
        _ kind: String,
        to contact: ContactRecord,
        text: (subject: String, body: String),
        at now: Date,
        in db: Database
    ) throws {
        try Self.enqueue(
            profile,
            kind: kind,
            channel: .email,
            contactID: contact.id,
            address: contact.email,
            text: text,
            at: now,
            in: db
        )
    }

    private static func enqueueWarning(
        _ profile: ProfileRecord,
        _ item: DueItem,
        text: (subject: String, body: String),
        at now: Date,
        state: AlertRecord.State = .pending,
        in db: Database
    ) throws {
        try Self.enqueue(
            profile,
            kind: item.kind,
            channel: .push,
            contactID: "",
            address: profile.pushToken,
            text: text,
            at: now,
            state: state,
            in: db
        )
    }

    private static func enqueue(
        _ profile: ProfileRecord,
        kind: String,
        channel: AlertRecord.Channel,
        contactID: String,
        address: String,
        text: (subject: String, body: String),
        at now: Date,
        state: AlertRecord.State = .pending,
        in db: Database
    ) throws {
        try AlertRecord(
            id: UUID().uuidString.lowercased(),
            userID: profile.userID,
            epoch: profile.epoch,
            kind: kind,
            channel: channel,
            contactID: contactID,
            address: address,
            subject: text.subject,
            body: text.body,
            state: state,
            attempts: 0,
            lastError: "",
            nextAttemptAt: state == .pending ? now : nil,
            sentAt: nil,
            createdAt: now
        ).insert(db, onConflict: .ignore)
    }
}

/// Why an attempt failed, and whether to try again.
struct DeliveryFailure: Error, Sendable {
    /// Attempts after which a message that keeps failing for a reason that may pass is given
    /// up, but an alarm.
    static let maxAttempts = 12

    /// An alarm email is tried again until its contact's server answers for good (a 5xx) or a
    /// check-in cancels it: an SMTP relay down for a night must delay it, not lose it. Not
    /// one that may have arrived already (an attempt lost its answer): repeated for ever, an
    /// alarm that did arrive would come every hour.
    static func retriesForever(_ alert: AlertRecord) -> Bool {
        alert.kind == AlertRecord.Kind.alert && !alert.mayHaveArrived
    }

    var message: String
    var isPermanent: Bool
    /// The attempt may have delivered it all the same (no answer came to its content).
    var mayHaveArrived: Bool

    /// 30 s, 1 min, 2 min, ... at most 1 h.
    static func backoff(afterAttempts attempts: Int) -> TimeInterval {
        min(30 * pow(2, Double(max(attempts - 1, 0))), 3600)
    }
}
