import Foundation
import HearthPostgres
import PostgresNIO

// The switch's rules run in ``SwitchMachine``; here, inside a transaction that holds the
// user's lock, the store reads what a transition needs and applies what it decided.
extension PostgresSafetyStore {
    /// `profile`'s switch, with the facts `reads` names as they stand in this transaction.
    func machine(
        _ profile: ProfileRecord,
        at now: Date,
        reading reads: FactReads,
        on db: PostgresConnection
    ) async throws -> SwitchMachine {
        let user = profile.userID
        var facts = SwitchFacts(contacts: try await self.switchContacts(user, at: now, on: db))
        if reads.contains(.decided) {
            let kinds = Set(
                try await db.rows(
                    "SELECT DISTINCT kind FROM alert WHERE user_id = \(user) AND epoch = \(profile.epoch)"
                ) {
                    try $0.value(0, as: String.self)
                }
            )
            facts.decided = Set(SwitchClock.items.filter { kinds.contains($0.kind) })
        }
        if reads.contains(.period) { facts.period = try await self.periodMessages(profile, on: db) }
        if reads.contains(.reminders) {
            let rows = try await db.rows(
                """
                SELECT contact_id, state <> 'cancelled' FROM alert
                WHERE user_id = \(user) AND kind = \(MessageKind.reminder)
                    AND created_at > \(now.addingTimeInterval(-3 * 86_400).postgres)
                """
            ) { (try $0.value(0, as: String.self), try $0.value(1, as: Bool.self)) }
            facts.reminders = Dictionary(rows, uniquingKeysWith: { $0 || $1 })
        }
        if reads.contains(.alarm) {
            facts.alarmDecidedAt =
                try await db.first(
                    """
                    SELECT MAX(created_at) FROM alert
                    WHERE user_id = \(user) AND epoch >= \(profile.checkInEpoch) AND kind = \(MessageKind.alert)
                        AND (state = 'sent' OR may_have_arrived OR claimed_at IS NOT NULL)
                    """
                ) { try $0.optionalDate(0) } ?? nil
        }
        return SwitchMachine(state: profile.switchState, facts: facts)
    }

    /// Every message since the last check-in, in one read.
    private func periodMessages(_ profile: ProfileRecord, on db: PostgresConnection) async throws -> PeriodMessages {
        var period = PeriodMessages()
        let rows = try await db.rows(
            """
            SELECT kind, state, contact_id, may_have_arrived, address_key FROM alert
            WHERE user_id = \(profile.userID) AND epoch >= \(profile.checkInEpoch)
            """
        ) { columns in
            (
                kind: try columns.value(0, as: String.self), state: try columns.value(1, as: String.self),
                contact: try columns.value(2, as: String.self), mayHaveArrived: try columns.value(3, as: Bool.self),
                key: try columns.value(4, as: String.self)
            )
        }
        for row in rows {
            if row.state == AlertRecord.State.pending.rawValue, SafetyStore.cancellableKinds.contains(row.kind) {
                period.hasPending = true
            }
            // An alarm that reached its contact, or may have (``SafetyStore`` says why).
            if row.kind == MessageKind.alert, row.state == AlertRecord.State.sent.rawValue || row.mayHaveArrived {
                period.alerted.append(AlertedContact(contactID: row.contact, key: row.key))
            }
        }
        return period
    }

    /// The contacts an alarm at `now` emails (``ContactConsent/receivesAlarms(at:)``).
    func switchContacts(_ user: String, at now: Date, on db: PostgresConnection) async throws -> [SwitchContact] {
        try await db.rows(
            """
            SELECT id, email_key FROM contact
            WHERE user_id = \(user) AND (state = 'confirmed' OR (state = 'invited' AND alarms_until > \(now.postgres)))
            """
        ) { SwitchContact(id: try $0.value(0), key: try $0.value(1)) }
    }

    /// Where the user's invitations stand at `now`.
    func pendingInvitations(_ user: String, at now: Date, on db: PostgresConnection) async throws
        -> PendingInvitations
    {
        let open = try await db.rows(
            """
            SELECT COALESCE(invitation_expires_at > \(now.postgres), false) FROM contact
            WHERE user_id = \(user) AND state = 'invited'
            """
        ) { try $0.value(0, as: Bool.self) }
        return open.contains(true) ? .open : open.isEmpty ? .none : .expired
    }

    /// Applies `effects`, in order, for `profile` (which holds its state).
    func apply(_ effects: [SwitchEffect], of profile: ProfileRecord, on db: PostgresConnection) async throws {
        let user = profile.userID
        let cancel = "UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetPostgres)"
        for effect in effects {
            switch effect {
            case .cancelPending(.warnings):
                try await db.run(
                    "\(unescaped: cancel) WHERE user_id = \(user) AND state = 'pending' AND kind LIKE 'warning\\_%'"
                )
            case .cancelPending(.warningsAndAlarms):
                try await db.run(
                    """
                    \(unescaped: cancel) WHERE user_id = \(user) AND state = 'pending'
                        AND kind = ANY(\(SafetyStore.cancellableKinds.sorted()))
                    """
                )
            case .cancelPending(.reminders):
                try await db.run(
                    "\(unescaped: cancel) WHERE user_id = \(user) AND kind = \(MessageKind.reminder) AND state = 'pending'"
                )
            case .cancelPending(.contact(let id)):
                try await db.run(
                    "\(unescaped: cancel) WHERE user_id = \(user) AND contact_id = \(id) AND state = 'pending'"
                )
            case .record(let message):
                var contact = (address: "", name: "")
                if case .contact(let recipient) = message.recipient, message.sends {
                    contact =
                        try await db.first("SELECT email, name FROM contact WHERE id = \(recipient.id)") {
                            (
                                try self.keys.open($0.value(0), .contactEmail, row: recipient.id),
                                try self.keys.open($0.value(1), .contactName, row: recipient.id)
                            )
                        } ?? ("", "")
                }
                try await AlertRecord.decided(message, of: profile, product: self.product, contact: contact)
                    .insert(on: db, sealingWith: self.keys, ignoringConflict: true)
            case .forgetSkippedReminder(let key):
                try await db.run(
                    """
                    DELETE FROM alert WHERE user_id = \(user) AND kind = \(MessageKind.reminder)
                        AND contact_id = \(key) AND state = 'cancelled'
                    """
                )
            }
        }
    }

    /// Saves what `machine` decided for `profile`: its effects, then its state. Answers the
    /// profile as saved.
    @discardableResult
    func commit(_ machine: SwitchMachine, of profile: ProfileRecord, on db: PostgresConnection) async throws
        -> ProfileRecord
    {
        let changed = profile.with(machine.state)
        try await self.apply(machine.effects, of: changed, on: db)
        try await changed.saveSwitch(on: db)
        return changed
    }
}
