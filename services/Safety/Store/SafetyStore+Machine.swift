import Foundation
import GRDB
import HearthCore
import HearthStore

// The switch's rules run in ``SwitchMachine``; here, inside a write transaction, the store
// reads what a transition needs and applies what it decided.
extension SafetyStore {
    /// `profile`'s switch, with the facts `reads` names as they stand in this transaction.
    func machine(
        _ profile: ProfileRecord,
        at now: Date,
        reading reads: FactReads,
        in db: Database
    ) throws -> SwitchMachine {
        var facts = SwitchFacts(contacts: try self.switchContacts(profile.userID, at: now, in: db))
        if reads.contains(.decided) { facts.decided = try self.decidedItems(profile, in: db) }
        if reads.contains(.period) { facts.period = try self.periodMessages(profile, in: db) }
        if reads.contains(.reminders) { facts.reminders = try self.reminders(profile.userID, at: now, in: db) }
        if reads.contains(.alarm) { facts.alarmDecidedAt = try self.alarmDecidedAt(profile, in: db) }
        return SwitchMachine(state: profile.switchState, facts: facts)
    }

    /// Applies `machine`'s effects, in order, for `profile` (which holds its state).
    func apply(_ effects: [SwitchEffect], of profile: ProfileRecord, in db: Database) throws {
        var claims = DecidedClaims.none(at: self.now)
        try self.apply(effects, of: profile, claiming: &claims, in: db)
    }

    /// Applies `machine`'s effects, in order, for `profile` (which holds its state); `claims`
    /// claims the messages recorded that its room allows.
    func apply(
        _ effects: [SwitchEffect],
        of profile: ProfileRecord,
        claiming claims: inout DecidedClaims,
        in db: Database
    ) throws {
        for (index, effect) in effects.enumerated() {
            switch effect {
            case .cancelPending(.warnings):
                try db.cachedStatement(sql: Self.cancelPendingWarningsSQL).execute(binding: profile.userID)
            case .cancelPending(.warningsAndAlarms):
                try db.cachedStatement(sql: Self.cancelPendingSQL).execute(binding: profile.userID)
            case .cancelPending(.reminders):
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetText)
                        WHERE user_id = ? AND kind = ? AND state = 'pending'
                        """
                ).execute(binding: profile.userID, MessageKind.reminder)
            case .cancelPending(.contact(let id)):
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetText)
                        WHERE user_id = ? AND contact_id = ? AND state = 'pending'
                        """
                ).execute(binding: profile.userID, id)
            case .record(let message):
                var alert = try self.alert(message, of: profile, in: db)
                if claims.hasRoom, DecidedClaims.mayClaim(effectAt: index, of: effects) {
                    claims.claim(&alert, of: profile)
                }
                try alert.insert(in: db, sealingWith: self.keys, ignoringConflict: true)
                if db.changesCount == 0 { claims.drop(alert.id) }
            case .forgetSkippedReminder(let key):
                try db.cachedStatement(
                    sql: "DELETE FROM alert WHERE user_id = ? AND kind = ? AND contact_id = ? AND state = 'cancelled'"
                ).execute(binding: profile.userID, MessageKind.reminder, key)
            }
        }
    }

    /// Saves what `machine` decided for `profile`: its state in the profile's switch columns,
    /// then its effects, in this transaction. Answers the profile as saved.
    @discardableResult
    func commit(_ machine: SwitchMachine, of profile: ProfileRecord, in db: Database) throws -> ProfileRecord {
        var claims = DecidedClaims.none(at: self.now)
        return try self.commit(machine, of: profile, claiming: &claims, in: db)
    }

    /// Saves what `machine` decided, as ``commit(_:of:in:)`` does; `claims` claims the messages
    /// recorded that its room allows.
    @discardableResult
    func commit(
        _ machine: SwitchMachine,
        of profile: ProfileRecord,
        claiming claims: inout DecidedClaims,
        in db: Database
    ) throws -> ProfileRecord {
        let changed = profile.with(machine.state)
        try self.apply(machine.effects, of: changed, claiming: &claims, in: db)
        try changed.saveSwitch(in: db)
        return changed
    }

    /// The outbox row of a decided message (``AlertRecord/decided(_:of:product:contact:)``): a
    /// contact's address and name are read (and opened) only for a message that is sent.
    private func alert(_ message: SwitchMessage, of profile: ProfileRecord, in db: Database) throws -> AlertRecord {
        var contact = MessageContact.none
        if case .contact(let recipient) = message.recipient, message.sends {
            contact = try self.messageContact(recipient.id, in: db)
        }
        return .decided(message, of: profile, product: self.product, contact: contact)
    }

    /// The kinds a check-in or resume cancels while pending: the due items'.
    static let cancellableKinds = Set(SwitchClock.items.map(\.kind))

    private static let cancelPendingSQL = """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetText)
        WHERE user_id = ? AND state = 'pending' AND kind IN (\(cancellableKinds.sorted().map { "'\($0)'" }.joined(separator: ", ")))
        """
    private static let cancelPendingWarningsSQL = """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetText)
        WHERE user_id = ? AND state = 'pending' AND kind LIKE 'warning_%'
        """

    // MARK: Facts

    func profile(_ user: String, in db: Database) throws -> ProfileRecord? {
        try db.cachedStatement(sql: "\(ProfileRecord.selection) FROM profile WHERE user_id = ?")
            .fetchOne(binding: user) { try ProfileRecord(columns: $0, keys: self.keys) }
    }

    /// A contact's address and name, as a message to them names them; ``MessageContact/none``
    /// for a contact removed since.
    func messageContact(_ id: String, in db: Database) throws -> MessageContact {
        try db.cachedStatement(sql: "SELECT email, name FROM contact WHERE id = ?").fetchOne(binding: id) {
            MessageContact(email: try $0.value(0), name: try $0.value(1), id: id, keys: self.keys)
        } ?? .none
    }

    /// The contacts an alarm at `now` emails (``ContactConsent/receivesAlarms(at:)``).
    func switchContacts(_ user: String, at now: Date, in db: Database) throws -> [SwitchContact] {
        try db.cachedStatement(
            sql: """
                SELECT id, email_key FROM contact
                WHERE user_id = ? AND (state = 'confirmed' OR (state = 'invited' AND alarms_until > ?))
                """
        )
        .fetchAll(binding: user, now.stored) { columns in
            SwitchContact(id: try columns.value(0), key: try columns.value(1))
        }
    }

    /// Where the user's invitations stand at `now`.
    func pendingInvitations(_ user: String, at now: Date, in db: Database) throws -> PendingInvitations {
        var pending = PendingInvitations.none
        try db.cachedStatement(
            sql: "SELECT invitation_expires_at > ? FROM contact WHERE user_id = ? AND state = 'invited'"
        )
        .forEachRow(binding: now.stored, user) { columns in
            if try columns.value(0) as Bool { pending = .open } else if pending == .none { pending = .expired }
        }
        return pending
    }

    func decidedItems(_ profile: ProfileRecord, in db: Database) throws -> Set<DueItem> {
        let kinds = try db.cachedStatement(sql: "SELECT DISTINCT kind FROM alert WHERE user_id = ? AND epoch = ?")
            .fetchAll(binding: profile.userID, profile.epoch) { try $0.value(0) as String }
        return Set(SwitchClock.items.filter { kinds.contains($0.kind) })
    }

    /// Every message since the last check-in, in one read.
    private func periodMessages(_ profile: ProfileRecord, in db: Database) throws -> PeriodMessages {
        var period = PeriodMessages()
        try db.cachedStatement(
            sql:
                "SELECT kind, state, contact_id, may_have_arrived, address_key FROM alert WHERE user_id = ? AND epoch >= ?"
        )
        .forEachRow(binding: profile.userID, profile.checkInEpoch) { columns in
            let kind: String = try columns.value(0)
            let state: String = try columns.value(1)
            if state == AlertRecord.State.pending.rawValue, Self.cancellableKinds.contains(kind) {
                period.hasPending = true
            }
            // An alarm whose attempt ended without an answer to its content may have reached
            // its contact, whatever became of it since (a pause cancelled it, it failed later).
            // One under way gets the all-clear when its outcome is known.
            let mayHaveArrived: Bool = try columns.value(3)
            if kind == MessageKind.alert, state == AlertRecord.State.sent.rawValue || mayHaveArrived {
                period.alerted.append(AlertedContact(contactID: try columns.value(2), key: try columns.value(4)))
            }
        }
        return period
    }

    /// The daily reminders recorded in the 3 days before `now`.
    private func reminders(_ user: String, at now: Date, in db: Database) throws -> [String: Bool] {
        var reminders: [String: Bool] = [:]
        try db.cachedStatement(
            sql: "SELECT contact_id, state FROM alert WHERE user_id = ? AND kind = ? AND created_at > ?"
        )
        .forEachRow(binding: user, MessageKind.reminder, now.addingTimeInterval(-3 * 86_400).stored) { columns in
            let sends = try columns.value(1) as String != AlertRecord.State.cancelled.rawValue
            reminders[try columns.value(0), default: false] = reminders[try columns.value(0), default: false] || sends
        }
        return reminders
    }

    /// When the latest alarm since the last check-in was decided, of those that may have
    /// reached a contact (sent, tried, or under way); nil when none.
    private func alarmDecidedAt(_ profile: ProfileRecord, in db: Database) throws -> Date? {
        try db.cachedStatement(
            sql: """
                SELECT MAX(created_at) FROM alert WHERE user_id = ? AND epoch >= ? AND kind = ?
                    AND (state = 'sent' OR may_have_arrived OR claimed_at IS NOT NULL)
                """
        ).fetchOne(binding: profile.userID, profile.checkInEpoch, MessageKind.alert) { try $0.optionalDate(0) }
            ?? nil
    }
}
