import Foundation
import GRDB
import HearthCore
import HearthStore

// The links in emails to contacts: made when an email is claimed for sending (only their
// hashes are kept), shown by the contact page (GET) and acted on (POST).
extension SafetyStore {

    /// What `token`'s link can do for `answer` (the page's GET): changes nothing.
    func link(_ token: LinkToken, for answer: ContactAnswer) async throws -> LinkView {
        let now = self.now
        return try self.base.read { db in
            guard let target = try self.linkTarget(token, in: db) else { return LinkView(check: .notFound) }
            return try target.view(target.link.view(answer, at: now))
        }
    }

    /// Does what `token`'s link says (the page's POST); `changed` when the contact's state moved.
    /// A link that cannot act is answered from a read: made-up tokens never take the writer. The
    /// rules decide (``ConsentLink/answer(_:at:)``); this writes what they decided.
    func answer(_ token: LinkToken, _ answer: ContactAnswer) async throws -> (view: LinkView, changed: Bool) {
        let seen = try await self.link(token, for: answer)
        guard seen.check == .usable else { return (seen, false) }
        let now = self.now
        return try await self.base.write { db in
            guard let target = try self.linkTarget(token, in: db) else { return (LinkView(check: .notFound), false) }
            let decision = target.link.answer(answer, at: now)
            if let refusal = decision.refusal {
                let addressKey = target.contact?.emailKey ?? target.addressKey
                try self.remember(refusal, of: target.userID, addressKey: addressKey, in: db)
            }
            guard var contact = target.contact, let profile = target.profile,
                let consent = decision.consent, let event = decision.event
            else { return (try target.view(decision), false) }
            contact.consent = consent
            try self.contact(contact, did: event, of: profile, at: now, in: db)
            return (try target.view(decision), true)
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
        let profile = try self.profile(user, in: db)
        return LinkTarget(
            userID: user,
            addressKey: row["address_key"],
            link: ConsentLink(
                purpose: purpose,
                expiresAt: row["expires_at"] as Date?,
                // A contact goes with their user's profile: without it, removed.
                contact: profile == nil ? nil : contact?.consent
            ),
            contact: contact,
            profile: profile
        )
    }

    /// The links of an email claimed for sending to a contact: a new opt-out token each time,
    /// and for an invitation still open, a new token for its Confirm and Decline links. Nil for
    /// an email to no contact (a test to the user) or to one removed since.
    func mintLinks(for alert: AlertRecord, at now: Date, in db: Database) throws -> ContactLinks? {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            let minted = ContactLinks.mint(
                for: alert,
                contact: try self.contact(alert.contactID, in: db),
                profile: try self.profile(alert.userID, in: db),
                at: now
            )
        else { return nil }
        try Self.insert(minted.tokens, at: now, in: db)
        return minted.links
    }

    /// Stores the tokens of links minted at `now`.
    static func insert(_ tokens: [ContactLinks.NewToken], at now: Date, in db: Database) throws {
        for new in tokens {
            try db.cachedStatement(
                sql: """
                    INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(
                binding: new.token.hash,
                new.contactID,
                new.userID,
                new.addressKey,
                new.purpose.rawValue,
                new.expiresAt?.stored,
                now.stored
            )
        }
    }
}
