import Foundation
import HearthPostgres
import PostgresNIO

// The switch's rules run in ``SwitchMachine``; here, inside a transaction that holds the users'
// locks, the store reads what the transitions need and applies what they decided. Both are
// done for many switches at once, in a statement per kind of fact or effect whatever their
// number (a due batch is hundreds of switches); one switch's event is a batch of one.
extension PostgresSafetyStore {
    /// `profile`'s switch, with the facts `reads` names as they stand in this transaction.
    func machine(
        _ profile: ProfileRecord,
        at now: Date,
        reading reads: FactReads,
        on db: PostgresConnection
    ) async throws -> SwitchMachine {
        try await self.machines([profile], at: now, on: db) { _ in reads }[0]
    }

    /// The switches of `profiles` (one each), in their order, each with the facts `reads`
    /// names for it.
    func machines(
        _ profiles: [ProfileRecord],
        at now: Date,
        on db: PostgresConnection,
        reading reads: (ProfileRecord) -> FactReads
    ) async throws -> [SwitchMachine] {
        guard !profiles.isEmpty else { return [] }
        let reading = profiles.map { ($0, reads($0)) }
        let users = profiles.map(\.userID)
        var facts: [String: SwitchFacts] = [:]
        for (user, contacts) in try await self.switchContacts(of: users, at: now, on: db) {
            facts[user] = SwitchFacts(contacts: contacts)
        }
        let (decided, period, reminders, alarm) = (
            reading.filter { $0.1.contains(.decided) }.map(\.0), reading.filter { $0.1.contains(.period) }.map(\.0),
            reading.filter { $0.1.contains(.reminders) }.map(\.0), reading.filter { $0.1.contains(.alarm) }.map(\.0)
        )
        if !decided.isEmpty {
            for profile in decided { facts[profile.userID, default: SwitchFacts(contacts: [])].decided = [] }
            let rows = try await db.rows(DecidedKinds(users: decided.map(\.userID), epochs: decided.map(\.epoch))) {
                (try $0.value(0, as: String.self), try $0.value(1, as: String.self))
            }
            for (user, kind) in rows {
                if let item = SwitchClock.items.first(where: { $0.kind == kind }) {
                    facts[user, default: SwitchFacts(contacts: [])].decided?.insert(item)
                }
            }
        }
        if !period.isEmpty {
            for (user, messages) in try await self.periodMessages(of: period, on: db) {
                facts[user, default: SwitchFacts(contacts: [])].period = messages
            }
        }
        if !reminders.isEmpty {
            for profile in reminders { facts[profile.userID, default: SwitchFacts(contacts: [])].reminders = [:] }
            let rows = try await db.rows(
                RemindersDecided(users: reminders.map(\.userID), since: now.addingTimeInterval(-3 * 86_400))
            ) { (try $0.value(0, as: String.self), try $0.value(1, as: String.self), try $0.value(2, as: Bool.self)) }
            for (user, key, sends) in rows where sends || facts[user]?.reminders?[key] == nil {
                facts[user, default: SwitchFacts(contacts: [])].reminders?[key] = sends
            }
        }
        if !alarm.isEmpty {
            let rows = try await db.rows(
                LatestAlarms(users: alarm.map(\.userID), checkInEpochs: alarm.map(\.checkInEpoch))
            ) { (try $0.value(0, as: String.self), try $0.optionalDate(1)) }
            for (user, at) in rows { facts[user, default: SwitchFacts(contacts: [])].alarmDecidedAt = at }
        }
        return profiles.map {
            SwitchMachine(state: $0.switchState, facts: facts[$0.userID] ?? SwitchFacts(contacts: []))
        }
    }

    /// Every message since each user's last check-in, by user, in one read.
    private func periodMessages(of profiles: [ProfileRecord], on db: PostgresConnection) async throws
        -> [String: PeriodMessages]
    {
        var periods = Dictionary(
            profiles.map { ($0.userID, PeriodMessages()) },
            uniquingKeysWith: { first, _ in first }
        )
        let rows = try await db.rows(
            PeriodMessageRows(users: profiles.map(\.userID), checkInEpochs: profiles.map(\.checkInEpoch))
        ) { columns in
            (
                user: try columns.value(0, as: String.self), kind: try columns.value(1, as: String.self),
                state: try columns.value(2, as: String.self), contact: try columns.value(3, as: String.self),
                mayHaveArrived: try columns.value(4, as: Bool.self), key: try columns.value(5, as: String.self)
            )
        }
        for row in rows {
            if row.state == AlertRecord.State.pending.rawValue, SafetyStore.cancellableKinds.contains(row.kind) {
                periods[row.user]?.hasPending = true
            }
            // An alarm that reached its contact, or may have (``SafetyStore`` says why).
            if row.kind == MessageKind.alert, row.state == AlertRecord.State.sent.rawValue || row.mayHaveArrived {
                periods[row.user]?.alerted.append(AlertedContact(contactID: row.contact, key: row.key))
            }
        }
        return periods
    }

    /// The contacts an alarm at `now` emails (``ContactConsent/receivesAlarms(at:)``).
    func switchContacts(_ user: String, at now: Date, on db: PostgresConnection) async throws -> [SwitchContact] {
        try await self.switchContacts(of: [user], at: now, on: db)[user] ?? []
    }

    private func switchContacts(of users: [String], at now: Date, on db: PostgresConnection) async throws
        -> [String: [SwitchContact]]
    {
        let rows = try await db.rows(AlarmContactsOfUsers(users: users, now: now)) {
            (try $0.value(0, as: String.self), SwitchContact(id: try $0.value(1), key: try $0.value(2)))
        }
        return Dictionary(grouping: rows, by: \.0).mapValues { $0.map(\.1) }
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
        var claims = DecidedClaims.none(at: self.now)
        try await SwitchEffects.apply([(profile, effects)], for: self, claiming: &claims, on: db)
    }

    /// Saves what `machine` decided for `profile`: its effects, then its state. Answers the
    /// profile as saved.
    @discardableResult
    func commit(_ machine: SwitchMachine, of profile: ProfileRecord, on db: PostgresConnection) async throws
        -> ProfileRecord
    {
        try await self.commit([(machine, profile)], on: db)[0]
    }

    /// Saves what each machine decided for its profile: the effects, then the states. Answers
    /// the profiles as saved.
    @discardableResult
    func commit(_ decisions: [(SwitchMachine, ProfileRecord)], on db: PostgresConnection) async throws
        -> [ProfileRecord]
    {
        var claims = DecidedClaims.none(at: self.now)
        return try await self.commit(decisions, claiming: &claims, on: db)
    }

    /// Saves what each machine decided, as ``commit(_:on:)`` does; `claims` claims the messages
    /// recorded that its room allows.
    @discardableResult
    func commit(
        _ decisions: [(SwitchMachine, ProfileRecord)],
        claiming claims: inout DecidedClaims,
        on db: PostgresConnection
    ) async throws -> [ProfileRecord] {
        let changed = decisions.map { machine, profile in (profile.with(machine.state), machine.effects) }
        try await SwitchEffects.apply(changed, for: self, claiming: &claims, on: db)
        try await ProfileRecord.saveSwitches(changed.map(\.0), on: db)
        return changed.map(\.0)
    }
}
