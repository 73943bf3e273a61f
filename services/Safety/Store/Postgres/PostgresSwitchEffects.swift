import Foundation
import HearthPostgres
import PostgresNIO

/// What switch transitions decided (``SwitchEffect``), applied for many users at once. Each
/// user's effects run in their order; different users' touch different rows, so they are taken
/// in rounds: the first effect of every user, then the second, and so on, each round a statement
/// per kind of effect in it. A due batch of hundreds of switches is a handful of statements.
enum SwitchEffects {
    /// Applies `changes`; `claims` claims the messages recorded that its room allows.
    static func apply(
        _ changes: [(profile: ProfileRecord, effects: [SwitchEffect])],
        for store: PostgresSafetyStore,
        claiming claims: inout DecidedClaims,
        on db: PostgresConnection
    ) async throws {
        let rounds = changes.map(\.effects.count).max() ?? 0
        for round in 0..<rounds {
            // The users of each scope cancelled.
            var cancels: [SwitchEffect.CancelScope: [String]] = [:]
            var contactCancels: [(user: String, contact: String)] = []
            var records: [(profile: ProfileRecord, message: SwitchMessage, claimable: Bool)] = []
            var forgotten: [(user: String, key: String)] = []
            for (profile, effects) in changes where round < effects.count {
                switch effects[round] {
                case .cancelPending(.contact(let id)): contactCancels.append((profile.userID, id))
                case .cancelPending(let scope): cancels[scope, default: []].append(profile.userID)
                case .record(let message):
                    let claimable = claims.hasRoom && DecidedClaims.mayClaim(effectAt: round, of: effects)
                    records.append((profile, message, claimable))
                case .forgetSkippedReminder(let key): forgotten.append((profile.userID, key))
                }
            }
            for (scope, users) in cancels {
                try await db.run(PendingCancels(users: users, scope: scope))
            }
            if !contactCancels.isEmpty {
                try await db.run(
                    ContactCancels(contacts: contactCancels.map(\.contact), users: contactCancels.map(\.user))
                )
            }
            try await self.record(records, for: store, claiming: &claims, on: db)
            if !forgotten.isEmpty {
                try await db.run(
                    """
                    DELETE FROM alert a USING unnest(\(forgotten.map(\.user))::text[], \(forgotten.map(\.key))::text[])
                        AS f(user_id, contact_id)
                    WHERE a.user_id = f.user_id AND a.contact_id = f.contact_id AND a.kind = \(MessageKind.reminder)
                        AND a.state = 'cancelled'
                    """
                )
            }
        }
    }

    /// Records the messages decided, each once (`alert_once`): a contact's address and name,
    /// for the ones sent to a contact, read in one statement. Those claimed are inserted under
    /// their claims, and their links' tokens after them.
    private static func record(
        _ records: [(profile: ProfileRecord, message: SwitchMessage, claimable: Bool)],
        for store: PostgresSafetyStore,
        claiming claims: inout DecidedClaims,
        on db: PostgresConnection
    ) async throws {
        guard !records.isEmpty else { return }
        let recipients = records.compactMap { record -> String? in
            guard case .contact(let recipient) = record.message.recipient, record.message.sends else { return nil }
            return recipient.id
        }
        var contacts: [String: MessageContact] = [:]
        if !recipients.isEmpty {
            let rows = try await db.rows(ContactAddresses(ids: recipients)) {
                let id: String = try $0.value(0)
                return (id, MessageContact(email: try $0.value(1), name: try $0.value(2), id: id, keys: store.keys))
            }
            for (id, contact) in rows { contacts[id] = contact }
        }
        var alerts: [AlertRecord] = []
        alerts.reserveCapacity(records.count)
        for (profile, message, claimable) in records {
            var contact = MessageContact.none
            if case .contact(let recipient) = message.recipient, message.sends {
                contact = contacts[recipient.id] ?? contact
            }
            var alert = AlertRecord.decided(message, of: profile, product: store.product, contact: contact)
            if claimable { claims.claim(&alert, of: profile) }
            alerts.append(alert)
        }
        let inserted = Set(
            try await db.rows(DecidedAlerts(alerts, sealingWith: store.keys)) { try $0.value(0, as: String.self) }
        )
        for alert in alerts where !inserted.contains(alert.id) { claims.drop(alert.id) }
    }
}
