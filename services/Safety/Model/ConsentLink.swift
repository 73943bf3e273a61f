import Foundation

/// A link from an email to a contact, as its rules see it: what it was made for, until when it
/// works, and its contact's agreement (nil once the contact was removed: the link outlives them).
/// No clock and no storage: the store reads the link and its contact, asks what an answer does,
/// and writes what comes out in one transaction.
struct ConsentLink: Sendable, Equatable {
    var purpose: LinkPurpose
    /// An invitation's end, for its Confirm and Decline links. For an opt-out link: nil while its
    /// contact exists, then the end of the time it still works after their removal
    /// (``ContactConsent/removedOptOutLifetime``).
    var expiresAt: Date?
    /// The contact's agreement; nil when they were removed since.
    var contact: ContactConsent?

    /// What the link can do for `answer` at `now`, and where its contact stands as the page shows
    /// it (for a removed contact: the refusal it would keep). The page's GET: nothing changes.
    func view(_ answer: ContactAnswer, at now: Date) -> LinkDecision {
        guard let contact = self.contact else {
            let check = ContactConsent.checkRemoved(
                answer,
                purpose: self.purpose,
                linkExpiresAt: self.expiresAt,
                at: now
            )
            guard check != .notFound else { return LinkDecision(check: .notFound) }
            // Nothing to confirm once removed (not found): a decline or an opt-out.
            return LinkDecision(check: check, state: answer == .decline ? .declined : .optedOut)
        }
        let check = contact.check(answer, purpose: self.purpose, linkExpiresAt: self.expiresAt, at: now)
        guard check != .notFound else { return LinkDecision(check: .notFound) }
        return LinkDecision(check: check, state: contact.state)
    }

    /// What `answer` from this link does at `now` (the page's POST): a link that cannot act
    /// (not found, expired, answered already) changes nothing; a removed contact's decline or
    /// opt-out is kept for the address; a contact's answer moves their state, the user hears of
    /// it and a refusal is kept; opting out again, or after a decline, changes nothing.
    func answer(_ answer: ContactAnswer, at now: Date) -> LinkDecision {
        var decision = self.view(answer, at: now)
        guard decision.check == .usable else { return decision }
        guard var consent = self.contact else {
            // Removed since: the refusal still holds for the address (and no one is told).
            decision.refusal = decision.state
            return decision
        }
        guard let event = consent.answer(answer, at: now) else { return decision }
        decision.state = consent.state
        decision.consent = consent
        decision.event = event
        if event == .declined || event == .optedOut { decision.refusal = consent.state }
        return decision
    }
}

/// What a link can do, or did: what the page says, and what the store writes for it.
struct LinkDecision: Sendable, Equatable {
    /// ``LinkCheck/usable``: the link can do (or did) what it was made for; else why not.
    var check: LinkCheck
    /// Where the contact stands, as the page shows it (after the answer); nil when not found.
    var state: ContactState?
    /// The contact's agreement as the answer left it, to be saved; nil when it did not change.
    var consent: ContactConsent?
    /// What the user hears of by push, and what the switch follows (a confirmed contact joins
    /// it, one who declined or opted out leaves it); nil when nothing changed.
    var event: ContactEvent?
    /// A decline or opt-out to keep for the user and the address, past the contact's removal
    /// and the account's deletion; nil when there is none to keep.
    var refusal: ContactState?
}
