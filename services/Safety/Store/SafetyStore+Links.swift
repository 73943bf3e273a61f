import Foundation
import GRDB
import HearthCore
import HearthStore

// The links in emails to contacts: made when an email is claimed for sending (only their
// hashes are kept), shown by the contact page (GET) and acted on (POST).
extension SafetyStore {
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
            try self.linkTarget(token, in: db)?.view(answer, at: now) ?? LinkView(check: .notFound)
        }
    }

    /// Does what `token`'s link says (the page's POST); `changed` when the contact's state moved.
    /// A link that cannot act is answered from a read: made-up tokens never take the writer.
    func answer(_ token: LinkToken, _ answer: ContactAnswer) async throws -> (view: LinkView, changed: Bool) {
        let seen = try self.link(token, for: answer)
        guard seen.check == .usable else { return (seen, false) }
        let now = self.now
        return try await self.base.write { db in
            guard let target = try self.linkTarget(token, in: db) else { return (LinkView(check: .notFound), false) }
            var view = target.view(answer, at: now)
            guard view.check == .usable else { return (view, false) }
            guard var contact = target.contact, let profile = target.profile else {
                // Removed since: a refusal still holds for the address.
                if let refusal = view.state {
                    try self.remember(refusal, of: target.userID, addressKey: target.addressKey, in: db)
                }
                return (view, false)
            }
            var consent = contact.consent
            guard let event = consent.answer(answer, at: now) else { return (view, false) }
            contact.consent = consent
            try self.contact(contact, did: event, of: profile, at: now, in: db)
            view.state = consent.state
            return (view, true)
        }
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

    private func linkTarget(_ token: LinkToken, in db: Database) throws -> LinkTarget? {
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
        let contact = try self.contact(row["contact_id"] as String, in: db)
        return LinkTarget(
            userID: user,
            addressKey: row["address_key"],
            purpose: purpose,
            expiresAt: row["expires_at"] as Date?,
            contact: contact,
            profile: try self.profile(user, in: db)
        )
    }

    /// The links of an email claimed for sending to a contact: a new opt-out token each time,
    /// and for an invitation still open, a new token for its Confirm and Decline links. Nil for
    /// an email to no contact (a test to the user) or to one removed since.
    func mintLinks(for alert: AlertRecord, at now: Date, in db: Database) throws -> ContactLinks? {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            let contact = try self.contact(alert.contactID, in: db),
            let profile = try self.profile(alert.userID, in: db)
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
