import Foundation
import HearthPostgres
import PostgresNIO

// Emergency contacts on PostgreSQL: the same consent rules (``ContactConsent``, ``ConsentLink``)
// and outbox rows as ``SafetyStore``; every change holds the user's lock.
extension PostgresSafetyStore {
    func addContact(_ user: String, email: String, name: String) async throws -> ContactOutcome {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            guard let profile = try await self.profile(user, on: db) else { return .noProfile }
            let key = self.keys.addressKey(email)
            let keys = try await db.rows("SELECT email_key FROM contact WHERE user_id = \(user)") {
                try $0.value(0, as: String.self)
            }
            if keys.contains(key) { return .duplicate }
            guard keys.count < SafetyRules.maxContacts else { return .full }
            let history = try await self.addressHistory(user, key, on: db)
            let sentToday = try await self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), on: db)
            do throws(InvitationRefusal) {
                try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
            } catch {
                return .refused(error)
            }
            let contact = ContactRecord.invited(by: user, email: email, key: key, name: name, history: history, at: now)
            try await contact.insert(on: db, sealingWith: self.keys)
            try await self.queueInvitation(contact, of: profile, at: now, on: db)
            return .added(contact)
        }
    }

    func resendInvitation(_ user: String, id: String) async throws -> ResendOutcome {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            guard let profile = try await self.profile(user, on: db),
                var contact = try await self.contact(id, on: db), contact.userID == user
            else { return .notFound }
            let history = try await self.addressHistory(user, contact.emailKey, on: db)
            let sentToday = try await self.invitationsSent(by: user, since: now.addingTimeInterval(-86_400), on: db)
            do throws(InvitationRefusal) {
                try contact.reinvite(history: history, sentToday: sentToday, at: now)
            } catch {
                return .refused(error)
            }
            try await db.run(
                """
                UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(unescaped: AlertRecord.forgetPostgres)
                WHERE user_id = \(user) AND contact_id = \(contact.id) AND kind = \(MessageKind.invitation)
                    AND \(unescaped: AlertRecord.pendingOfUsers)
                """
            )
            try await contact.updateConsent(on: db)
            try await self.queueInvitation(contact, of: profile, at: now, on: db)
            return .sent(contact)
        }
    }

    func removeContact(_ user: String, id: String) async throws -> Bool {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            guard try await db.count("DELETE FROM contact WHERE user_id = \(user) AND id = \(id) RETURNING 1") > 0
            else { return false }
            // The opt-out links in the emails they got work for a while yet, then go.
            try await db.run(
                """
                UPDATE contact_token SET expires_at = \(ContactConsent.optOutLinksEnd(removedAt: now).postgres)
                WHERE contact_id = \(id) AND purpose = \(LinkPurpose.optOut.rawValue) AND expires_at IS NULL
                """
            )
            if let profile = try await self.profile(user, on: db) {
                var machine = try await self.machine(profile, at: now, reading: [.decided, .reminders], on: db)
                machine.removeContact(id: id, at: now)
                try await self.commit(machine, of: profile, on: db)
            }
            return true
        }
    }

    func contacts(_ user: String) async throws -> [ContactRecord] {
        try await self.database.read { db in
            try await db.rows(
                "\(unescaped: ContactRecord.selection) FROM contact WHERE user_id = \(user) ORDER BY created_at, id"
            ) { try ContactRecord(columns: $0, keys: self.keys) }
        }
    }

    /// The server refused `alert`'s address for good: its contact, if still invited or
    /// confirmed, is bounced. The caller holds the user's lock.
    func bounce(_ alert: AlertRecord, at now: Date, on db: PostgresConnection) async throws {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            var contact = try await self.contact(alert.contactID, on: db),
            let profile = try await self.profile(alert.userID, on: db)
        else { return }
        var consent = contact.consent
        guard let event = consent.bounce(at: now) else { return }
        contact.consent = consent
        try await self.contact(contact, did: event, of: profile, at: now, on: db)
    }

    /// Saves `contact` as `event` left it (``SafetyStore/contact(_:did:of:at:in:)``).
    private func contact(
        _ contact: ContactRecord,
        did event: ContactEvent,
        of profile: ProfileRecord,
        at now: Date,
        on db: PostgresConnection
    ) async throws {
        var machine = try await self.machine(profile, at: now, reading: [.decided, .reminders], on: db)
        try await contact.updateConsent(on: db)
        switch event {
        case .confirmed:
            _ = machine.addContact(SwitchContact(id: contact.id, key: contact.emailKey), at: now)
        case .declined, .optedOut, .bounced:
            machine.removeContact(id: contact.id, at: now)
        }
        let changed = try await self.commit(machine, of: profile, on: db)
        try await AlertRecord.contactNews(event, of: contact, to: changed, product: self.product, at: now)
            .insert(on: db, sealingWith: self.keys, ignoringConflict: true)
    }

    /// Counts the invitation for its address and queues it.
    private func queueInvitation(
        _ contact: ContactRecord,
        of profile: ProfileRecord,
        at now: Date,
        on db: PostgresConnection
    ) async throws {
        try await db.run(
            """
            INSERT INTO contact_address (user_id, address_key, invitations, refused, last_invited_at)
            VALUES (\(contact.userID), \(contact.emailKey), 1, NULL, \(now.postgres))
            ON CONFLICT (user_id, address_key) DO UPDATE SET invitations = contact_address.invitations + 1,
                last_invited_at = excluded.last_invited_at
            """
        )
        try await db.run("INSERT INTO invitation_sent (user_id, at) VALUES (\(contact.userID), \(now.postgres))")
        try await AlertRecord.invitation(to: contact, of: profile, product: self.product, at: now)
            .insert(on: db, sealingWith: self.keys)
    }

    private func addressHistory(_ user: String, _ key: String, on db: PostgresConnection) async throws
        -> AddressHistory?
    {
        try await db.first(
            "SELECT invitations, refused FROM contact_address WHERE user_id = \(user) AND address_key = \(key)"
        ) {
            AddressHistory(
                invitations: try $0.value(0),
                refused: (try $0.value(1, as: String?.self)).flatMap(ContactState.init(rawValue:))
            )
        }
    }

    private func invitationsSent(by user: String, since start: Date, on db: PostgresConnection) async throws -> [Date] {
        try await db.rows(
            "SELECT at FROM invitation_sent WHERE user_id = \(user) AND at > \(start.postgres) ORDER BY at"
        ) { try $0.date(0) }
    }

    // MARK: The links in emails to contacts

    func link(_ token: LinkToken, for answer: ContactAnswer) async throws -> LinkView {
        let now = self.now
        return try await self.database.transaction { db in
            guard let target = try await self.linkTarget(token, on: db) else { return LinkView(check: .notFound) }
            return try target.view(target.link.view(answer, at: now))
        }
    }

    func answer(_ token: LinkToken, _ answer: ContactAnswer) async throws -> (view: LinkView, changed: Bool) {
        let seen = try await self.link(token, for: answer)
        guard seen.check == .usable else { return (seen, false) }
        let now = self.now
        return try await self.database.transaction { db in
            let owner = try await db.first("SELECT user_id FROM contact_token WHERE hash = \(token.hash)") {
                try $0.value(0, as: String.self)
            }
            guard let user = owner else { return (LinkView(check: .notFound), false) }
            try await db.lock(user)
            guard let target = try await self.linkTarget(token, on: db) else {
                return (LinkView(check: .notFound), false)
            }
            let decision = target.link.answer(answer, at: now)
            if let refusal = decision.refusal {
                try await db.run(
                    """
                    INSERT INTO contact_address (user_id, address_key, invitations, refused)
                    VALUES (\(target.userID), \(target.contact?.emailKey ?? target.addressKey), 0, \(refusal.rawValue))
                    ON CONFLICT (user_id, address_key) DO UPDATE SET refused = excluded.refused
                    """
                )
            }
            guard var contact = target.contact, let profile = target.profile,
                let consent = decision.consent, let event = decision.event
            else { return (try target.view(decision), false) }
            contact.consent = consent
            try await self.contact(contact, did: event, of: profile, at: now, on: db)
            return (try target.view(decision), true)
        }
    }

    private func linkTarget(_ token: LinkToken, on db: PostgresConnection) async throws -> LinkTarget? {
        let found = try await db.first(
            "SELECT contact_id, user_id, address_key, purpose, expires_at FROM contact_token WHERE hash = \(token.hash)"
        ) {
            (
                contact: try $0.value(0, as: String.self), user: try $0.value(1, as: String.self),
                key: try $0.value(2, as: String.self), purpose: try $0.value(3, as: String.self),
                expiresAt: try $0.optionalDate(4)
            )
        }
        guard let row = found, let purpose = LinkPurpose(rawValue: row.purpose) else { return nil }
        let contact = try await self.contact(row.contact, on: db)
        let profile = try await self.profile(row.user, on: db)
        return LinkTarget(
            userID: row.user,
            addressKey: row.key,
            link: ConsentLink(
                purpose: purpose,
                expiresAt: row.expiresAt,
                contact: profile == nil ? nil : contact?.consent
            ),
            contact: contact,
            profile: profile
        )
    }

    // MARK: Graces of contacts stored before invitations existed

    func nextGraceEnd() async throws -> Date? {
        try await self.database.read { db in
            try await db.first("SELECT MIN(alarms_until) FROM contact") { try $0.optionalDate(0) } ?? nil
        }
    }

    func endGraces(now: Date, limit: Int) async throws -> (ended: Int, told: Int) {
        try await self.database.transaction { db in
            let over = try await db.rows(
                """
                \(unescaped: ContactRecord.selection) FROM contact WHERE alarms_until <= \(now.postgres)
                ORDER BY alarms_until LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """
            ) { try ContactRecord(columns: $0, keys: self.keys) }
            var told = 0
            for var contact in over {
                // Never waited for: a call holding the user's lock may wait for this row.
                guard try await db.tryLock(contact.userID) else { continue }
                var consent = contact.consent
                let tell = consent.endGrace(at: now)
                contact.consent = consent
                try await contact.updateConsent(on: db)
                guard tell, let profile = try await self.profile(contact.userID, on: db) else { continue }
                try await AlertRecord.graceEnded(of: contact, to: profile, product: self.product, at: now)
                    .insert(on: db, sealingWith: self.keys, ignoringConflict: true)
                told += 1
            }
            return (over.count, told)
        }
    }
}
