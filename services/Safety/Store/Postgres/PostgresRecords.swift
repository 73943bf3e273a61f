import Foundation
import HearthPostgres
import HearthStore
import PostgresNIO

// The records read and written on PostgreSQL: the same select lists as on SQLite (taken by
// position), bound through PostgresNIO's interpolation; sealed values are `bytea`.
extension ProfileRecord {
    /// Inserts the profile, or replaces every column of the one stored.
    func save(on connection: PostgresConnection, sealingWith keys: DataKeys) async throws {
        try await connection.run(
            """
            INSERT INTO profile (\(unescaped: Self.columnNames.joined(separator: ", ")))
            VALUES (\(self.userID), \(try keys.seal(self.name, .profileName, row: self.userID)),
                \(try keys.seal(self.email, .profileEmail, row: self.userID)), \(self.thresholdHours), \(self.language),
                \(self.timeZone), \(self.reminderEnabled), \(self.reminderHour), \(self.reminderMinute),
                \(self.pushToken), \(self.countActivity), \(self.periodStart.postgres), \(self.lastCheckInAt.postgres),
                \(self.snoozes), \(self.pausedUntil.postgres), \(self.epoch), \(self.checkInEpoch),
                \(self.nextDueAt.postgres), \(self.createdAt.postgres), \(self.updatedAt.postgres),
                \(self.snoozesInARow), \(self.isActive))
            ON CONFLICT (user_id) DO UPDATE SET \(unescaped: Self.upsertAssignments)
            """
        )
    }

    private static let upsertAssignments = columnNames.dropFirst().map { "\($0) = excluded.\($0)" }
        .joined(separator: ", ")

    /// Saves the switch's moving parts (what a check-in, snooze, pause or decision changes).
    func saveSwitch(on connection: PostgresConnection) async throws {
        try await connection.run(
            """
            UPDATE profile SET time_zone = \(self.timeZone), period_start = \(self.periodStart.postgres),
                last_check_in_at = \(self.lastCheckInAt.postgres), snoozes = \(self.snoozes),
                snoozes_in_a_row = \(self.snoozesInARow), paused_until = \(self.pausedUntil.postgres),
                epoch = \(self.epoch), check_in_epoch = \(self.checkInEpoch), next_due_at = \(self.nextDueAt.postgres),
                updated_at = \(self.updatedAt.postgres)
            WHERE user_id = \(self.userID)
            """
        )
    }
}

extension ProfileRecord {
    /// Saves the switches of `profiles` in one statement, each as ``saveSwitch(on:)`` saves one.
    static func saveSwitches(_ profiles: [ProfileRecord], on connection: PostgresConnection) async throws {
        guard !profiles.isEmpty else { return }
        try await connection.run(SwitchesSaved(profiles))
    }
}

/// The switches' states of many profiles (``ProfileRecord/saveSwitches(_:on:)``).
struct SwitchesSaved: PreparedSQL {
    static let sql = Self([]).query.sql
    let rows: BoundRows

    init(_ profiles: [ProfileRecord]) {
        var rows = BoundRows(
            columns: .text,
            .text,
            .timestamptz,
            .timestamptz,
            .int8,
            .int8,
            .timestamptz,
            .int8,
            .int8,
            .timestamptz,
            .timestamptz
        )
        for profile in profiles {
            rows.append { row in
                row.bind(profile.userID)
                row.bind(profile.timeZone)
                row.bind(profile.periodStart.postgres)
                row.bind(profile.lastCheckInAt.postgres)
                row.bind(profile.snoozes)
                row.bind(profile.snoozesInARow)
                row.bind(profile.pausedUntil.postgres)
                row.bind(profile.epoch)
                row.bind(profile.checkInEpoch)
                row.bind(profile.nextDueAt.postgres)
                row.bind(profile.updatedAt.postgres)
            }
        }
        self.rows = rows
    }

    var query: PostgresQuery {
        self.rows.query { values in
            """
            UPDATE profile SET time_zone = v.time_zone, period_start = v.period_start,
                last_check_in_at = v.last_check_in_at, snoozes = v.snoozes, snoozes_in_a_row = v.snoozes_in_a_row,
                paused_until = v.paused_until, epoch = v.epoch, check_in_epoch = v.check_in_epoch,
                next_due_at = v.next_due_at, updated_at = v.updated_at
            FROM (\(values)) AS v(user_id, time_zone, period_start, last_check_in_at, snoozes, snoozes_in_a_row,
                paused_until, epoch, check_in_epoch, next_due_at, updated_at)
            WHERE profile.user_id = v.user_id
            """
        }
    }
}

extension AlertRecord {
    /// What a message no longer pending stops keeping, as PostgreSQL's SQL.
    static let forgetPostgres = "address = ''::bytea, subject = ''::bytea, body = ''::bytea"

    /// Still pending, in a statement that looks for given users' messages. Named by the states
    /// it is not, so that the planner cannot read `alert_due` (every user's pending messages)
    /// and filter it: the statistics count few pending messages, but in an alarm storm the
    /// backlog is thousands, and cancelling a batch's warnings read it whole (21 ms a statement,
    /// 30% of PostgreSQL's statement time in a run that fell behind). It reads the users' own
    /// rows along `alert_user`.
    static let pendingOfUsers =
        "state NOT IN (\(State.allCases.filter { $0 != .pending }.map { "'\($0.rawValue)'" }.joined(separator: ", ")))"

    /// ``selection`` with the address and the words read as empty (nothing to open): for a
    /// status, and a write of a delivery's outcome, which keeps or forgets them in place
    /// (``updateDeliveries(_:leaseUntil:on:)``).
    static let postgresSelectionWithoutWords = selectionWithoutWords(empty: "''::bytea")

    /// Inserts the message; a pending one with its address and words sealed, another without
    /// them. With `ignoringConflict`, one already decided (`alert_once`) is left as it is.
    func insert(on connection: PostgresConnection, sealingWith keys: DataKeys, ignoringConflict: Bool = false)
        async throws
    {
        if ignoringConflict {
            try await connection.run(DecidedAlerts([self], sealingWith: keys))
        } else {
            try await connection.run(NewAlerts([self], sealingWith: keys))
        }
    }

    /// Saves what became of an attempt (emptying the address and words once no longer pending).
    /// Writes its delivery's state; `leaseUntil`: how long a claim it is under holds (nil: no
    /// claim, or it ended).
    func updateDelivery(on connection: PostgresConnection, leaseUntil: Date? = nil) async throws {
        try await connection.run(
            """
            UPDATE alert SET state = \(self.state.rawValue), attempts = \(self.attempts), last_error = \(self.lastError),
                next_attempt_at = \(self.nextAttemptAt.postgres), sent_at = \(self.sentAt.postgres),
                claimed_at = \(self.claimedAt.postgres), lease_until = \(leaseUntil.postgres),
                may_have_arrived = \(self.mayHaveArrived)
                \(unescaped: self.state == .pending ? "" : ", " + Self.forgetPostgres)
            WHERE id = \(self.id)
            """
        )
    }
}

extension AlertRecord {
    /// Saves what became of many attempts in one statement, each as
    /// ``updateDelivery(on:leaseUntil:)`` saves one.
    static func updateDeliveries(
        _ alerts: some Collection<AlertRecord>,
        leaseUntil: Date? = nil,
        on connection: PostgresConnection
    ) async throws {
        guard !alerts.isEmpty else { return }
        try await connection.run(DeliveryUpdates(alerts, leaseUntil: leaseUntil))
    }
}

/// What became of many attempts (``AlertRecord/updateDeliveries(_:leaseUntil:on:)``).
struct DeliveryUpdates: PreparedSQL {
    static let sql = Self([], leaseUntil: nil).query.sql

    /// The address and words stay while a message is pending, and are forgotten after.
    private static let keptWhilePending = ["address", "subject", "body"]
        .map { "\($0) = CASE WHEN v.state = 'pending' THEN alert.\($0) ELSE ''::bytea END" }
        .joined(separator: ", ")

    let rows: BoundRows

    init(_ alerts: some Collection<AlertRecord>, leaseUntil: Date?) {
        var rows = BoundRows(
            columns: .text,
            .text,
            .int8,
            .text,
            .timestamptz,
            .timestamptz,
            .timestamptz,
            .timestamptz,
            .bool
        )
        for alert in alerts {
            rows.append { row in
                row.bind(alert.id)
                row.bind(alert.state.rawValue)
                row.bind(alert.attempts)
                row.bind(alert.lastError)
                row.bind(alert.nextAttemptAt.postgres)
                row.bind(alert.sentAt.postgres)
                row.bind(alert.claimedAt.postgres)
                row.bind(leaseUntil.postgres)
                row.bind(alert.mayHaveArrived)
            }
        }
        self.rows = rows
    }

    var query: PostgresQuery {
        self.rows.query { values in
            """
            UPDATE alert SET state = v.state, attempts = v.attempts, last_error = v.last_error,
                next_attempt_at = v.next_attempt_at, sent_at = v.sent_at, claimed_at = v.claimed_at,
                lease_until = v.lease_until, may_have_arrived = v.may_have_arrived,
                \(Self.keptWhilePending)
            FROM (\(values)) AS v(id, state, attempts, last_error, next_attempt_at, sent_at, claimed_at, lease_until,
                may_have_arrived)
            WHERE alert.id = v.id
            """
        }
    }
}

/// Messages inserted in one statement: a pending one with its address and words sealed, another
/// without them.
struct NewAlerts: PreparedSQL {
    static let sql = Self(rows: Self.columns).query.sql
    fileprivate static let columns = BoundRows(
        columns: .text,
        .text,
        .int8,
        .text,
        .text,
        .text,
        .bytea,
        .text,
        .bytea,
        .bytea,
        .text,
        .int8,
        .text,
        .timestamptz,
        .timestamptz,
        .timestamptz,
        .timestamptz,
        .bool
    )
    let rows: BoundRows

    private init(rows: BoundRows) {
        self.rows = rows
    }

    init(_ alerts: [AlertRecord], sealingWith keys: DataKeys) throws {
        self.rows = try Self.rows(alerts, sealingWith: keys)
    }

    /// The rows of `alerts`, sealed with `keys`.
    fileprivate static func rows(_ alerts: [AlertRecord], sealingWith keys: DataKeys) throws -> BoundRows {
        var rows = Self.columns
        for alert in alerts {
            let keeps = alert.state == .pending
            let sealed = { (text: SealedText, field: SealedField) in
                ByteBuffer(bytes: keeps ? try keys.seal(text, field, row: alert.id) : Data())
            }
            let (address, subject, body) = (
                try sealed(alert.address, .alertAddress), try sealed(alert.subject, .alertSubject),
                try sealed(alert.body, .alertBody)
            )
            rows.append { row in
                row.bind(alert.id)
                row.bind(alert.userID)
                row.bind(alert.epoch)
                row.bind(alert.kind)
                row.bind(alert.channel.rawValue)
                row.bind(alert.contactID)
                row.bind(address)
                row.bind(alert.addressKey)
                row.bind(subject)
                row.bind(body)
                row.bind(alert.state.rawValue)
                row.bind(alert.attempts)
                row.bind(alert.lastError)
                row.bind(alert.nextAttemptAt.postgres)
                row.bind(alert.sentAt.postgres)
                row.bind(alert.createdAt.postgres)
                row.bind(alert.claimedAt.postgres)
                row.bind(alert.mayHaveArrived)
            }
        }
        return rows
    }

    /// The insert of `values`, the rows.
    fileprivate static func insert(_ values: String) -> String {
        """
        INSERT INTO alert (id, user_id, epoch, kind, channel, contact_id, address, address_key, subject, body,
            state, attempts, last_error, next_attempt_at, sent_at, created_at, claimed_at, may_have_arrived)
        \(values)
        """
    }

    var query: PostgresQuery { self.rows.query(Self.insert) }
}

/// Messages decided, inserted as ``NewAlerts`` inserts them, and each once: one already decided
/// (`alert_once`) is left as it is. Answers the ids inserted.
struct DecidedAlerts: PreparedSQL {
    static let sql = Self(rows: NewAlerts.columns).query.sql
    let rows: BoundRows

    private init(rows: BoundRows) {
        self.rows = rows
    }

    init(_ alerts: [AlertRecord], sealingWith keys: DataKeys) throws {
        self.rows = try NewAlerts.rows(alerts, sealingWith: keys)
    }

    var query: PostgresQuery { self.rows.query { NewAlerts.insert($0) + " ON CONFLICT DO NOTHING RETURNING id" } }
}

extension ContactRecord {
    func insert(on connection: PostgresConnection, sealingWith keys: DataKeys) async throws {
        try await connection.run(
            """
            INSERT INTO contact (id, user_id, email, email_key, name, created_at, state, invited_at,
                invitation_expires_at, invitations_sent, answered_at, alarms_until)
            VALUES (\(self.id), \(self.userID), \(try keys.seal(self.email, .contactEmail, row: self.id)),
                \(self.emailKey), \(try keys.seal(self.name, .contactName, row: self.id)), \(self.createdAt.postgres), \(self.state),
                \(self.invitedAt.postgres), \(self.invitationExpiresAt.postgres), \(self.invitationsSent),
                \(self.answeredAt.postgres), \(self.alarmsUntil.postgres))
            """
        )
    }

    /// Saves where the contact stands (its address and name never change).
    func updateConsent(on connection: PostgresConnection) async throws {
        try await connection.run(
            """
            UPDATE contact SET state = \(self.state), invited_at = \(self.invitedAt.postgres),
                invitation_expires_at = \(self.invitationExpiresAt.postgres), invitations_sent = \(self.invitationsSent),
                answered_at = \(self.answeredAt.postgres), alarms_until = \(self.alarmsUntil.postgres)
            WHERE id = \(self.id)
            """
        )
    }
}
