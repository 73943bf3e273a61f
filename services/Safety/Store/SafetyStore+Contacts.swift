import Foundation
import GRDB
import HearthCore
import HearthStore

// Emergency contacts: invited by email, answering from the links in it, bounced. A contact joins
// the switch (``SwitchMachine/addContact(_:at:)``) when they confirm, and leaves it when they opt
// out or their address bounces, in the transaction that records it.
extension SafetyStore {

    /// Adds a contact, invited: the invitation goes into the outbox in the same transaction.
    func addContact(_ user: String, email: String, name: String) async throws -> ContactOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard let profile = try self.profile(user, in: db) else { return .noProfile }
            let key = self.keys.addressKey(email)
            let keys = try db.cachedStatement(sql: "SELECT email_key FROM contact WHERE user_id = ?")
                .fetchAll(binding: user) { try $0.value(0) as String }
            if keys.contains(key) { return .duplicate }
            guard keys.count < SafetyRules.maxContacts else { return .full }
            let history = try self.addressHistory(user, key, in: db)
            let sentToday = try self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), in: db)
            do throws(InvitationRefusal) {
                try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
            } catch {
                return .refused(error)
            }
            let contact = ContactRecord.invited(by: user, email: email, key: key, name: name, history: history, at: now)
            try contact.insert(in: db, sealingWith: self.keys)
            try self.queueInvitation(contact, of: profile, at: now, in: db)
            return .added(contact)
        }
    }

    /// A new invitation to an invited contact: new links, 7 more days. The one before, if still
    /// waiting to be sent, is not sent.
    func resendInvitation(_ user: String, id: String) async throws -> ResendOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard let profile = try self.profile(user, in: db),
                var contact = try self.contact(id, in: db), contact.userID == user
            else { return .notFound }
            let history = try self.addressHistory(user, contact.emailKey, in: db)
            let sentToday = try self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), in: db)
            do throws(InvitationRefusal) {
                try contact.reinvite(history: history, sentToday: sentToday, at: now)
            } catch {
                return .refused(error)
            }
            try db.cachedStatement(
                sql: """
                    UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(AlertRecord.forgetText)
                    WHERE user_id = ? AND contact_id = ? AND kind = ? AND state = 'pending'
                    """
            ).execute(binding: user, contact.id, MessageKind.invitation)
            try contact.updateConsent(in: db)
            try self.queueInvitation(contact, of: profile, at: now, in: db)
            return .sent(contact)
        }
    }

    /// Removes a contact; false when the user has none with that id. What the user's contacts at
    /// that address did stays (a refusal, the invitations counted), and so do the links they hold:
    /// a Decline while the invitation would have been open, an opt-out for 30 days.
    func removeContact(_ user: String, id: String) async throws -> Bool {
        let now = self.now
        return try await self.base.write { db in
            guard
                try ContactRecord.filter(ContactRecord.Columns.userID == user && ContactRecord.Columns.id == id)
                    .deleteAll(db) > 0
            else {
                return false
            }
            // The opt-out links in the emails they got work for a while yet, then go
            // (``ContactConsent/removedOptOutLifetime``, ``pruneContactLinks(now:rowsPerTransaction:)``).
            try db.cachedStatement(
                sql: """
                    UPDATE contact_token SET expires_at = ?
                    WHERE contact_id = ? AND purpose = ? AND expires_at IS NULL
                    """
            ).execute(binding: ContactConsent.optOutLinksEnd(removedAt: now).stored, id, LinkPurpose.optOut.rawValue)
            if let profile = try self.profile(user, in: db) {
                var machine = try self.machine(profile, at: now, reading: [.decided, .reminders], in: db)
                machine.removeContact(id: id, at: now)
                try self.commit(machine, of: profile, in: db)
            }
            return true
        }
    }

    func contacts(_ user: String) async throws -> [ContactRecord] {
        try self.base.read { db in
            try self.contacts("WHERE user_id = ? ORDER BY created_at, id", binding: user, in: db)
        }
    }

    /// At a start: contacts stored before contacts were invited (none sent yet) are invited now,
    /// and receive alarms while that invitation is open. Returns how many.
    func inviteContactsStoredBefore() throws -> Int {
        let now = self.now
        return try self.db.write { db in
            let contacts = try self.contacts("WHERE state = 'invited' AND invitations_sent = 0", in: db)
            for var contact in contacts {
                guard let profile = try self.profile(contact.userID, in: db) else { continue }
                contact.consent = .invited(at: now)
                contact.alarmsUntil = contact.invitationExpiresAt
                contact.invitationsSent = 1
                try contact.updateConsent(in: db)
                try self.queueInvitation(contact, of: profile, at: now, in: db)
            }
            return contacts.count
        }
    }

    /// The server refused `alert`'s address for good: its contact, if still invited or
    /// confirmed, is bounced.
    func bounce(_ alert: AlertRecord, at now: Date, in db: Database) throws {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            var contact = try self.contact(alert.contactID, in: db),
            let profile = try self.profile(alert.userID, in: db)
        else { return }
        var consent = contact.consent
        guard let event = consent.bounce(at: now) else { return }
        contact.consent = consent
        try self.contact(contact, did: event, of: profile, at: now, in: db)
    }

    // MARK: Helpers

    /// The contact with `id`, opened; nil when there is none.
    func contact(_ id: String, in db: Database) throws -> ContactRecord? {
        try db.cachedStatement(sql: "\(ContactRecord.selection) FROM contact WHERE id = ?")
            .fetchOne(binding: id) { try ContactRecord(columns: $0, keys: self.keys) }
    }

    /// The contacts `sql` (after ``ContactRecord/selection``) finds with `values` bound, opened.
    func contacts<each Value: StatementBinding>(
        _ sql: String,
        binding values: repeat each Value,
        in db: Database
    ) throws -> [ContactRecord] {
        try db.cachedStatement(sql: "\(ContactRecord.selection) FROM contact \(sql)")
            .fetchAll(binding: repeat each values) { try ContactRecord(columns: $0, keys: self.keys) }
    }

    /// Saves `contact` as `event` left it: a confirmed contact joins the switch (the first arms
    /// it), any other leaves it (their pending emails are not sent); the user hears of it by push.
    /// (A refusal is remembered for the address by the caller, as the rules decided:
    /// ``LinkDecision/refusal``.)
    func contact(
        _ contact: ContactRecord,
        did event: ContactEvent,
        of profile: ProfileRecord,
        at now: Date,
        in db: Database
    ) throws {
        // The switch as it was: a contact who received alarms before (added before invitations
        // existed) and confirms now changes nothing in it.
        var machine = try self.machine(profile, at: now, reading: [.decided, .reminders], in: db)
        try contact.updateConsent(in: db)
        switch event {
        case .confirmed:
            _ = machine.addContact(SwitchContact(id: contact.id, key: contact.emailKey), at: now)
        case .declined, .optedOut, .bounced:
            machine.removeContact(id: contact.id, at: now)
        }
        let changed = try self.commit(machine, of: profile, in: db)
        try AlertRecord.contactNews(event, of: contact, to: changed, product: self.product, at: now)
            .insert(in: db, sealingWith: self.keys, ignoringConflict: true)
    }

    /// A decline or opt-out, kept for the user and address past the contact and the account.
    func remember(_ refusal: ContactState, of user: String, addressKey: String, in db: Database)
        throws
    {
        try db.cachedStatement(
            sql: """
                INSERT INTO contact_address (user_id, address_key, invitations, refused) VALUES (?, ?, 0, ?)
                ON CONFLICT (user_id, address_key) DO UPDATE SET refused = excluded.refused
                """
        ).execute(binding: user, addressKey, refusal.rawValue)
    }

    /// Counts the invitation for its address and queues it.
    private func queueInvitation(
        _ contact: ContactRecord,
        of profile: ProfileRecord,
        at now: Date,
        in db: Database
    ) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO contact_address (user_id, address_key, invitations, refused, last_invited_at)
                VALUES (?, ?, 1, NULL, ?)
                ON CONFLICT (user_id, address_key) DO UPDATE SET invitations = invitations + 1,
                    last_invited_at = excluded.last_invited_at
                """
        ).execute(binding: contact.userID, contact.emailKey, now.stored)
        try db.cachedStatement(sql: "INSERT INTO invitation_sent (user_id, at) VALUES (?, ?)")
            .execute(binding: contact.userID, now.stored)
        try AlertRecord.invitation(to: contact, of: profile, product: self.product, at: now)
            .insert(in: db, sealingWith: self.keys)
    }

    private func addressHistory(_ user: String, _ key: String, in db: Database) throws -> AddressHistory? {
        try db.cachedStatement(
            sql: "SELECT invitations, refused FROM contact_address WHERE user_id = ? AND address_key = ?"
        )
        .fetchOne(binding: user, key) { columns in
            AddressHistory(
                invitations: try columns.value(0),
                refused: (try columns.value(1) as String?).flatMap(ContactState.init(rawValue:))
            )
        }
    }

    /// When the user's invitations since `start` were queued, oldest first.
    private func invitationsSent(by user: String, since start: Date, in db: Database) throws -> [Date] {
        try db.cachedStatement(sql: "SELECT at FROM invitation_sent WHERE user_id = ? AND at > ? ORDER BY at")
            .fetchAll(binding: user, start.stored) { try $0.date(0) }
    }
}
