import Foundation
import GRDB
import HearthCore
import HearthStore

// Emergency contacts: invited by email, answering from the links in it, bounced. A contact joins
// the switch (``SwitchMachine/addContact(_:at:)``) when they confirm, and leaves it when they opt
// out or their address bounces, in the transaction that records it.
extension SafetyStore {
    enum ContactOutcome: Sendable {
        case added(ContactRecord)
        case noProfile
        case duplicate
        case full
        case refused(InvitationRefusal)
    }

    /// Adds a contact, invited: the invitation goes into the outbox in the same transaction.
    func addContact(_ user: String, email: String, name: String) async throws -> ContactOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard let profile = try Self.profile(user, in: db) else { return .noProfile }
            let key = SafetyRules.addressKey(email)
            let keys = try db.cachedStatement(sql: "SELECT email_key FROM contact WHERE user_id = ?")
                .fetchAll(binding: user) { try $0.value(0) as String }
            if keys.contains(key) { return .duplicate }
            guard keys.count < SafetyRules.maxContacts else { return .full }
            let history = try Self.addressHistory(user, key, in: db)
            let sentToday = try Self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), in: db)
            do throws(InvitationRefusal) {
                try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
            } catch {
                return .refused(error)
            }
            var contact = ContactRecord(
                id: UUID().uuidString.lowercased(),
                userID: user,
                email: email,
                emailKey: key,
                name: name,
                createdAt: now,
                state: ContactState.invited.rawValue,
                invitationsSent: (history?.invitations ?? 0) + 1
            )
            contact.consent = .invited(at: now)
            try contact.insert(db)
            try Self.queueInvitation(contact, of: profile, at: now, in: db)
            return .added(contact)
        }
    }

    enum ResendOutcome: Sendable {
        case sent(ContactRecord)
        case notFound
        case refused(InvitationRefusal)
    }

    /// A new invitation to an invited contact: new links, 7 more days. The one before, if still
    /// waiting to be sent, is not sent.
    func resendInvitation(_ user: String, id: String) async throws -> ResendOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard let profile = try Self.profile(user, in: db),
                var contact = try ContactRecord.all().of(user: user).filter(ContactRecord.Columns.id == id).fetchOne(db)
            else { return .notFound }
            let history = try Self.addressHistory(user, contact.emailKey, in: db)
            let sentToday = try Self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), in: db)
            var consent = contact.consent
            // Not invited, then the address's and the day's limits, then too soon: the lasting
            // reason first.
            do throws(InvitationRefusal) {
                guard consent.state == .invited else { throw .notInvited(consent.state) }
                try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
                try consent.invite(at: now)
            } catch {
                return .refused(error)
            }
            contact.consent = consent
            contact.invitationsSent = (history?.invitations ?? contact.invitationsSent) + 1
            try db.cachedStatement(
                sql: """
                    UPDATE alert SET state = 'cancelled', next_attempt_at = NULL
                    WHERE user_id = ? AND contact_id = ? AND kind = ? AND state = 'pending'
                    """
            ).execute(binding: user, contact.id, MessageKind.invitation)
            try contact.update(db)
            try Self.queueInvitation(contact, of: profile, at: now, in: db)
            return .sent(contact)
        }
    }

    /// Removes a contact; false when the user has none with that id. What the user's contacts at
    /// that address did stays (a refusal, the invitations counted).
    func removeContact(_ user: String, id: String) async throws -> Bool {
        let now = self.now
        return try await self.base.write { db in
            guard try ContactRecord.all().of(user: user).filter(ContactRecord.Columns.id == id).deleteAll(db) > 0 else {
                return false
            }
            if let profile = try Self.profile(user, in: db) {
                var machine = try Self.machine(profile, at: now, reading: [.decided, .reminders], in: db)
                machine.removeContact(id: id, at: now)
                try Self.commit(machine, of: profile, in: db)
            }
            return true
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

    /// At a start: contacts stored before contacts were invited (none sent yet) are invited now,
    /// and receive alarms while that invitation is open. Returns how many.
    func inviteContactsStoredBefore() throws -> Int {
        let now = self.now
        return try self.db.write { db in
            let contacts = try ContactRecord.fetchAll(
                db,
                sql: "SELECT * FROM contact WHERE state = 'invited' AND invitations_sent = 0"
            )
            for var contact in contacts {
                guard let profile = try Self.profile(contact.userID, in: db) else { continue }
                contact.consent = .invited(at: now)
                contact.alarmsUntil = contact.invitationExpiresAt
                contact.invitationsSent = 1
                try contact.update(db)
                try Self.queueInvitation(contact, of: profile, at: now, in: db)
            }
            return contacts.count
        }
    }

    // MARK: Links

    /// What a link from an email shows, or did.
    struct LinkView: Sendable, Equatable {
        var check: LinkCheck
        /// Unless not found: the user who added the contact, their language, the contact's state.
        var personName = ""
        var language = ""
        var state: ContactState?
    }

    /// What `token`'s link can do for `answer` (the page's GET): changes nothing.
    func link(_ token: LinkToken, for answer: ContactAnswer) throws -> LinkView {
        let now = self.now
        return try self.base.read { db in
            try Self.linkTarget(token, in: db)?.view(answer, at: now) ?? LinkView(check: .notFound)
        }
    }

    /// Does what `token`'s link says (the page's POST); `changed` when the contact's state moved.
    /// A link that cannot act is answered from a read: made-up tokens never take the writer.
    func answer(_ token: LinkToken, _ answer: ContactAnswer) async throws -> (view: LinkView, changed: Bool) {
        let seen = try self.link(token, for: answer)
        guard seen.check == .usable else { return (seen, false) }
        let now = self.now
        return try await self.base.write { db in
            guard let target = try Self.linkTarget(token, in: db) else { return (LinkView(check: .notFound), false) }
            var view = target.view(answer, at: now)
            guard view.check == .usable else { return (view, false) }
            guard var contact = target.contact, let profile = target.profile else {
                // Removed since: a refusal still holds for the address.
                if let refusal = view.state {
                    try Self.remember(refusal, of: target.userID, addressKey: target.addressKey, in: db)
                }
                return (view, false)
            }
            var consent = contact.consent
            guard let event = consent.answer(answer, at: now) else { return (view, false) }
            contact.consent = consent
            try Self.contact(contact, did: event, of: profile, at: now, in: db)
            view.state = consent.state
            return (view, true)
        }
    }

    /// The server refused `alert`'s address for good: its contact, if still invited or
    /// confirmed, is bounced.
    static func bounce(_ alert: AlertRecord, at now: Date, in db: Database) throws {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            var contact = try ContactRecord.fetchOne(db, key: alert.contactID),
            let profile = try Self.profile(alert.userID, in: db)
        else { return }
        var consent = contact.consent
        guard let event = consent.bounce(at: now) else { return }
        contact.consent = consent
        try Self.contact(contact, did: event, of: profile, at: now, in: db)
    }

    // MARK: Helpers

    /// Saves `contact` as `event` left it: a confirmed contact joins the switch (the first arms
    /// it), any other leaves it (their pending emails are not sent); a refusal is remembered for
    /// the address; the user hears of it by push.
    private static func contact(
        _ contact: ContactRecord,
        did event: ContactEvent,
        of profile: ProfileRecord,
        at now: Date,
        in db: Database
    ) throws {
        // The switch as it was: a contact who received alarms before (added before invitations
        // existed) and confirms now changes nothing in it.
        var machine = try Self.machine(profile, at: now, reading: [.decided, .reminders], in: db)
        try contact.update(db)
        switch event {
        case .confirmed:
            _ = machine.addContact(
                SwitchContact(id: contact.id, address: contact.email, key: contact.emailKey),
                at: now
            )
        case .declined, .optedOut, .bounced:
            machine.removeContact(id: contact.id, at: now)
        }
        let changed = try Self.commit(machine, of: profile, in: db)
        if let refusal = ContactState(rawValue: contact.state), event == .declined || event == .optedOut {
            try Self.remember(refusal, of: contact.userID, addressKey: contact.emailKey, in: db)
        }
        let push = changed.texts.contactPush(event, contact: contact.label)
        try AlertRecord.queued(
            userID: changed.userID,
            epoch: changed.epoch,
            kind: event.kind,
            channel: .push,
            // Not the contact's id: removing the contact must not cancel the user's news of it.
            contactID: "contact:\(contact.id)",
            address: changed.pushToken,
            subject: push.title,
            body: push.body,
            at: now
        ).insert(db, onConflict: .ignore)
    }

    /// A decline or opt-out, kept for the user and address past the contact and the account.
    private static func remember(_ refusal: ContactState, of user: String, addressKey: String, in db: Database)
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
    private static func queueInvitation(
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
        let text = profile.texts.invitationEmail(
            contactName: contact.name,
            thresholdHours: profile.thresholdHours,
            expiresAt: contact.invitationExpiresAt ?? now
        )
        try AlertRecord.queued(
            userID: profile.userID,
            epoch: profile.epoch,
            kind: MessageKind.invitation,
            channel: .email,
            contactID: contact.id,
            address: contact.email,
            subject: text.subject,
            body: text.body,
            at: now
        ).insert(db)
    }

    private static func addressHistory(_ user: String, _ key: String, in db: Database) throws -> AddressHistory? {
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
    private static func invitationsSent(by user: String, since start: Date, in db: Database) throws -> [Date] {
        try db.cachedStatement(sql: "SELECT at FROM invitation_sent WHERE user_id = ? AND at > ? ORDER BY at")
            .fetchAll(binding: user, start.stored) { try $0.date(0) }
    }

    /// A link's token: what it was made for, and its contact and user unless removed since.
    private struct LinkTarget {
        var userID: String
        var addressKey: String
        var purpose: LinkPurpose
        var expiresAt: Date?
        var contact: ContactRecord?
        var profile: ProfileRecord?

        func view(_ answer: ContactAnswer, at now: Date) -> LinkView {
            guard let contact = self.contact, let profile = self.profile else {
                let check = ContactConsent.checkRemoved(
                    answer,
                    purpose: self.purpose,
                    linkExpiresAt: self.expiresAt,
                    at: now
                )
                guard check != .notFound else { return LinkView(check: .notFound) }
                return LinkView(
                    check: check,
                    personName: self.profile?.name ?? "",
                    language: self.profile?.language ?? "",
                    state: answer == .decline ? .declined : .optedOut
                )
            }
            let consent = contact.consent
            let check = consent.check(answer, purpose: self.purpose, linkExpiresAt: self.expiresAt, at: now)
            guard check != .notFound else { return LinkView(check: .notFound) }
            return LinkView(check: check, personName: profile.name, language: profile.language, state: consent.state)
        }
    }

    private static func linkTarget(_ token: LinkToken, in db: Database) throws -> LinkTarget? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT contact_id, user_id, address_key, purpose, expires_at FROM contact_token WHERE hash = ?"
                ),
                arguments: [token.hash]
            ),
            let purpose = LinkPurpose(rawValue: row["purpose"] as String)
        else { return nil }
        let user: String = row["user_id"]
        let contact = try ContactRecord.fetchOne(db, key: row["contact_id"] as String)
        return LinkTarget(
            userID: user,
            addressKey: row["address_key"],
            purpose: purpose,
            expiresAt: row["expires_at"] as Date?,
            contact: contact,
            profile: try Self.profile(user, in: db)
        )
    }

    /// The links of an email claimed for sending to a contact: a new opt-out token each time,
    /// and for an invitation still open, a new token for its Confirm and Decline links. Nil for
    /// an email to no contact (a test to the user) or to one removed since.
    static func mintLinks(for alert: AlertRecord, at now: Date, in db: Database) throws -> ContactLinks? {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            let contact = try ContactRecord.fetchOne(db, key: alert.contactID),
            let profile = try Self.profile(alert.userID, in: db)
        else { return nil }
        let insert = { (token: LinkToken, purpose: LinkPurpose, expiresAt: Date?) in
            try db.cachedStatement(
                sql: """
                    INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(
                binding: token.hash,
                contact.id,
                contact.userID,
                contact.emailKey,
                purpose.rawValue,
                expiresAt?.stored,
                now.stored
            )
        }
        let optOut = LinkToken.make()
        try insert(optOut, .optOut, nil)
        var answer: LinkToken?
        if alert.kind == MessageKind.invitation, contact.consent.isAwaitingAnswer(at: now) {
            let token = LinkToken.make()
            try insert(token, .answer, contact.invitationExpiresAt)
            answer = token
        }
        return ContactLinks(answer: answer, optOut: optOut, language: profile.language, personName: profile.name)
    }
}
