import Foundation

/// Where an emergency contact stands in agreeing to be one. Only a confirmed contact receives
/// alarms (and a contact added before invitations existed, while their first one is open).
enum ContactState: String, Sendable, Equatable, CaseIterable {
    case invited, confirmed, declined
    case optedOut = "opted_out"
    case bounced
}

/// What a contact does from a link in an email.
enum ContactAnswer: Sendable, Equatable {
    case confirm, decline, optOut
}

/// What a link's token was made for: an invitation's Confirm and Decline links share one, every
/// email to a contact carries an opt-out one.
enum LinkPurpose: String, Sendable, Equatable {
    case answer
    case optOut = "opt_out"
}

/// What a link can do now.
enum LinkCheck: Sendable, Equatable {
    case usable
    /// Not a link for that (or no such link): nothing else is said.
    case notFound
    /// An invitation whose 7 days passed.
    case expired
    /// An invitation answered already.
    case alreadyAnswered
}

/// Why an invitation is not sent.
enum InvitationRefusal: Error, Sendable, Equatable {
    /// The address declined or opted out for this user: never mailed again for them.
    case refusedBefore(ContactState)
    /// The address got ``ContactConsent/maxInvitationsPerAddress`` from this user already.
    case tooManyForAddress
    /// The user sent ``ContactConsent/maxInvitationsPerDay`` in the last 24 hours; the next may go
    /// after `retryAfter` seconds.
    case tooManyToday(retryAfter: TimeInterval)
    /// Only an invited contact is invited again.
    case notInvited(ContactState)
    /// Re-sent at most once in ``ContactConsent/minResendInterval``; the next may go after
    /// `retryAfter` seconds.
    case tooSoon(retryAfter: TimeInterval)
}

/// One contact's agreement, as its rules see it: no clock and no storage. The store keeps it in
/// the contact's row.
struct ContactConsent: Sendable, Equatable {
    /// How long an invitation's links work.
    static let invitationLifetime: TimeInterval = 7 * 86_400
    /// Invitations to one address from one user, ever (the first and three re-sends), whether
    /// re-sent or removed and added again: an invitation is email to someone who never asked.
    static let maxInvitationsPerAddress = 4
    /// Invitations one user may send in 24 hours, to anyone.
    static let maxInvitationsPerDay = 20
    /// An invitation is re-sent no sooner than this after the one before: time to read it.
    static let minResendInterval: TimeInterval = 86_400
    /// How long the opt-out links in the emails a removed contact got still work: time to act on
    /// an email read late (nothing more goes to them; added again, they get new links). Their
    /// Decline link works as long as their invitation would have.
    static let removedOptOutLifetime: TimeInterval = 30 * 86_400

    var state: ContactState
    /// When the latest invitation was queued, and until when its links work.
    var invitedAt: Date?
    var expiresAt: Date?
    var answeredAt: Date?
    /// A contact added before invitations existed receives alarms until then while invited (see
    /// the README: a switch armed before the change does not fall silent overnight).
    var alarmsUntil: Date?

    /// Whether an alarm at `now` emails this contact.
    func receivesAlarms(at now: Date) -> Bool {
        switch self.state {
        case .confirmed: true
        case .invited: self.alarmsUntil.map { $0 > now } ?? false
        case .declined, .optedOut, .bounced: false
        }
    }

    /// Invited, and the invitation's links still work.
    func isAwaitingAnswer(at now: Date) -> Bool {
        self.state == .invited && (self.expiresAt.map { $0 > now } ?? false)
    }

    /// What a link made for `purpose`, valid until `linkExpiresAt` (an invitation's; nil for an
    /// opt-out link, which works as long as the contact exists), can do for `answer` at `now`.
    func check(_ answer: ContactAnswer, purpose: LinkPurpose, linkExpiresAt: Date?, at now: Date) -> LinkCheck {
        switch answer {
        case .confirm, .decline:
            guard purpose == .answer else { return .notFound }
            guard self.state == .invited else { return .alreadyAnswered }
            if let linkExpiresAt, linkExpiresAt <= now { return .expired }
            return self.isAwaitingAnswer(at: now) ? .usable : .expired
        case .optOut:
            // Again, once opted out (or declined): the page says so, nothing changes.
            return purpose == .optOut ? .usable : .notFound
        }
    }

    /// What a link can do once its contact was removed (its token outlives them): a decline (while
    /// the invitation would have been open) or an opt-out (for ``removedOptOutLifetime`` after the
    /// removal, the end the link then holds) is still remembered for the address, a confirmation
    /// finds no one.
    static func checkRemoved(_ answer: ContactAnswer, purpose: LinkPurpose, linkExpiresAt: Date?, at now: Date)
        -> LinkCheck
    {
        switch answer {
        case .confirm:
            return .notFound
        case .decline:
            guard purpose == .answer else { return .notFound }
            if let linkExpiresAt, linkExpiresAt <= now { return .expired }
            return .usable
        case .optOut:
            guard purpose == .optOut else { return .notFound }
            // Its end was set at the removal (``removedOptOutLifetime``); after it, nothing is said.
            if let linkExpiresAt, linkExpiresAt <= now { return .notFound }
            return .usable
        }
    }

    /// Until when the opt-out links of a contact removed at `now` still work.
    static func optOutLinksEnd(removedAt now: Date) -> Date {
        now.addingTimeInterval(Self.removedOptOutLifetime)
    }

    /// The contact's answer from a usable link: what the user hears of, nil when nothing changed
    /// (an opt-out again).
    mutating func answer(_ answer: ContactAnswer, at now: Date) -> ContactEvent? {
        let event: ContactEvent
        switch answer {
        case .confirm:
            self.state = .confirmed
            event = .confirmed
        case .decline:
            self.state = .declined
            event = .declined
        case .optOut:
            // A refusal stands as it is: nothing more to stop.
            guard self.state != .optedOut, self.state != .declined else { return nil }
            self.state = .optedOut
            event = .optedOut
        }
        self.answeredAt = now
        self.alarmsUntil = nil
        return event
    }

    /// The mail server refused the address for good: nothing more goes to it. Nil when that
    /// changes nothing (a contact who declined or opted out stays so).
    mutating func bounce(at now: Date) -> ContactEvent? {
        guard self.state == .invited || self.state == .confirmed else { return nil }
        self.state = .bounced
        self.answeredAt = now
        self.alarmsUntil = nil
        return .bounced
    }

    /// The end of a grace (``alarmsUntil``, a contact stored before invitations existed) that is
    /// over at `now`: it is cleared, and true when the user is to be told (still invited: the
    /// contact did not confirm in it, and receives no alarm until they do). False while it runs
    /// or when there is none (an answer or a bounce ended it already).
    mutating func endGrace(at now: Date) -> Bool {
        guard let until = self.alarmsUntil, until <= now else { return false }
        self.alarmsUntil = nil
        return self.state == .invited
    }

    /// A new invitation, at `now`: new links, for 7 days. Only an invited contact is invited
    /// again (re-sent), a day after the invitation before at the soonest.
    mutating func invite(at now: Date) throws(InvitationRefusal) {
        guard self.state == .invited else { throw .notInvited(self.state) }
        if let last = self.invitedAt, last.addingTimeInterval(Self.minResendInterval) > now {
            throw .tooSoon(retryAfter: last.addingTimeInterval(Self.minResendInterval).timeIntervalSince(now))
        }
        self.invitedAt = now
        self.expiresAt = now.addingTimeInterval(Self.invitationLifetime)
    }

    /// A new contact's: invited at `now`.
    static func invited(at now: Date) -> ContactConsent {
        ContactConsent(state: .invited, invitedAt: now, expiresAt: now.addingTimeInterval(Self.invitationLifetime))
    }

    /// Whether one more invitation may go to an address from a user: `history`, what the user's
    /// earlier contacts at that address did (nil: never invited); `sentToday`, when the user's
    /// invitations of the last 24 hours were sent, oldest first.
    static func mayInvite(history: AddressHistory?, sentToday: [Date], at now: Date) throws(InvitationRefusal) {
        if let refused = history?.refused { throw .refusedBefore(refused) }
        if (history?.invitations ?? 0) >= Self.maxInvitationsPerAddress { throw .tooManyForAddress }
        if sentToday.count >= Self.maxInvitationsPerDay, let oldest = sentToday.first {
            throw .tooManyToday(retryAfter: oldest.addingTimeInterval(86_400).timeIntervalSince(now))
        }
    }
}

/// What one user's contacts at one address did, kept when a contact is removed and when the
/// account is deleted: a declined or opted-out address is never mailed again for that user, and
/// invitations are counted.
struct AddressHistory: Sendable, Equatable {
    var invitations: Int
    /// Declined or opted out; nil otherwise.
    var refused: ContactState?
}

/// Where a user's invitations stand, for a switch not armed.
enum PendingInvitations: Sendable, Equatable {
    /// No contact is invited.
    case none
    /// One at least can still be answered.
    case open
    /// Every invited contact's invitation expired: one must be re-sent.
    case expired
}
