import Foundation
import HearthCore
import HearthStore

/// A contact as a message to them names them: their address and name, opened. A name that
/// does not open is left out (the greeting is neutral); an address that does not open is kept
/// as the failure it is (``AlertRecord/decided(_:of:product:contact:)``).
struct MessageContact: Sendable {
    var address: Result<String, SealedValueUnreadable>
    var name: String

    /// For a message to no contact, or to one removed since.
    static let none = MessageContact(address: .success(""), name: "")

    init(address: Result<String, SealedValueUnreadable>, name: String) {
        self.address = address
        self.name = name
    }

    /// The contact `id`'s address and name as stored (sealed), opened with `keys`.
    init(email: Data, name: Data, id: String, keys: DataKeys) {
        self.address = Result { () throws(SealedValueUnreadable) in try keys.open(email, .contactEmail, row: id) }
        self.name = (try? keys.open(name, .contactName, row: id)) ?? ""
    }
}

// The outbox rows every store writes, and what an attempt's outcome does to one: built here
// once, so that the SQLite and PostgreSQL stores persist the same messages.
extension AlertRecord {
    /// The row of a message the switch decided, in the words of `profile` as the transition
    /// leaves it. `contact` is the address and name of a contact's message that is sent (read
    /// and opened only for those: the rules work with the address's keyed hash). A damaged value
    /// fails nothing else: a name is left out, an address fails its message alone.
    static func decided(
        _ message: SwitchMessage,
        of profile: ProfileRecord,
        product: String,
        contact: MessageContact
    ) -> AlertRecord {
        let (channel, contactID, addressKey): (Channel, String, String)
        var address = ""
        var unreadable: SealedValueUnreadable?
        switch message.recipient {
        case .user(let key):
            (channel, contactID, addressKey) = (.push, key, "")
            address = profile.pushToken
        case .contact(let recipient):
            (channel, contactID, addressKey) = (.email, recipient.id, recipient.key)
            do { address = try contact.address.get() } catch { unreadable = error }
        }
        let text = profile.texts(product: product).text(
            of: message.words,
            lastCheckIn: profile.lastCheckInAt,
            periodStart: profile.periodStart,
            contactName: contact.name,
            at: message.at
        )
        // A message whose address does not open can reach no one: it is failed at once, with
        // why, where the user's status shows it, and holds back nothing else.
        let goes = message.sends && unreadable == nil
        return AlertRecord(
            id: UUID().uuidString.lowercased(),
            userID: profile.userID,
            epoch: message.epoch,
            kind: message.kind,
            channel: channel,
            contactID: contactID,
            address: SealedText(address),
            addressKey: addressKey,
            subject: SealedText(text.subject),
            body: SealedText(text.body),
            state: goes ? .pending : message.sends ? .failed : .cancelled,
            attempts: 0,
            lastError: unreadable.map { "the contact's address cannot be read: \($0)" } ?? "",
            nextAttemptAt: goes ? message.at : nil,
            sentAt: nil,
            createdAt: message.at
        )
    }

    /// The invitation email to `contact`, queued now.
    static func invitation(to contact: ContactRecord, of profile: ProfileRecord, product: String, at now: Date)
        throws -> AlertRecord
    {
        // An invitation says who asks: without the name, none goes out (the call fails).
        _ = try profile.name.open()
        let text = profile.texts(product: product).invitationEmail(
            contactName: try contact.name.open(),
            thresholdHours: profile.thresholdHours,
            expiresAt: contact.invitationExpiresAt ?? now
        )
        return .queued(
            userID: profile.userID,
            epoch: profile.epoch,
            kind: MessageKind.invitation,
            channel: .email,
            contactID: contact.id,
            address: try contact.email.open(),
            addressKey: contact.emailKey,
            subject: text.subject,
            body: text.body,
            at: now
        )
    }

    /// The push telling the user what their contact did, queued now.
    static func contactNews(
        _ event: ContactEvent,
        of contact: ContactRecord,
        to profile: ProfileRecord,
        product: String,
        at now: Date
    )
        -> AlertRecord
    {
        let push = profile.texts(product: product).contactPush(event, contact: contact.label)
        return .queued(
            userID: profile.userID,
            epoch: profile.epoch,
            kind: event.kind,
            channel: .push,
            // Not the contact's id: removing the contact must not cancel the user's news of it.
            contactID: "contact:\(contact.id)",
            address: profile.pushToken,
            subject: push.title,
            body: push.body,
            at: now
        )
    }

    /// The push telling the user that `contact`'s grace ended unanswered, queued now.
    static func graceEnded(of contact: ContactRecord, to profile: ProfileRecord, product: String, at now: Date)
        -> AlertRecord
    {
        let push = profile.texts(product: product).graceEndedPush(contact: contact.label)
        return .queued(
            userID: profile.userID,
            epoch: profile.epoch,
            kind: MessageKind.graceEnded,
            channel: .push,
            // As a contact's news: removing the contact does not cancel it.
            contactID: "contact:\(contact.id)",
            address: profile.pushToken,
            subject: push.title,
            body: push.body,
            at: now
        )
    }
}

extension AlertRecord {
    /// The test message the user asked for on `channel`, queued now.
    static func test(
        of user: String,
        epoch: Int,
        channel: Channel,
        address: String,
        subject: String,
        body: String,
        at now: Date
    ) -> AlertRecord {
        .queued(
            userID: user,
            epoch: epoch,
            kind: MessageKind.test,
            channel: channel,
            contactID: "",
            address: address,
            subject: subject,
            body: body,
            at: now
        )
    }
}

extension ContactRecord {
    /// A new contact of `user`, invited now: the invitation counts with those the address had
    /// from them before (`history`).
    static func invited(
        by user: String,
        email: String,
        key: String,
        name: String,
        history: AddressHistory?,
        at now: Date
    ) -> ContactRecord {
        var contact = ContactRecord(
            id: UUID().uuidString.lowercased(),
            userID: user,
            email: SealedText(email),
            emailKey: key,
            name: SealedText(name),
            createdAt: now,
            state: ContactState.invited.rawValue,
            invitationsSent: (history?.invitations ?? 0) + 1
        )
        contact.consent = .invited(at: now)
        return contact
    }
}

extension ContactRecord {
    /// Invites the contact again, if the rules allow: still invited, then the address's and the
    /// day's limits, then not too soon (the lasting reason first). The invitation counts with
    /// those the address had from the user before (`history`).
    mutating func reinvite(history: AddressHistory?, sentToday: [Date], at now: Date) throws(InvitationRefusal) {
        var consent = self.consent
        guard consent.state == .invited else { throw .notInvited(consent.state) }
        try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
        try consent.invite(at: now)
        self.consent = consent
        self.invitationsSent = (history?.invitations ?? self.invitationsSent) + 1
    }
}

/// What an attempt's outcome asks of the store besides saving the message.
struct AttemptConsequences: Equatable {
    /// The server refused the contact's address for good: the contact bounces.
    var bounce = false
    /// The alarm reached its contact, or may have, after a check-in cancelled it: the contact
    /// may be owed an all-clear.
    var allClear = false
}

extension AlertRecord {
    /// Records what became of the attempt under way. A message cancelled meanwhile (a check-in,
    /// a pause) is not tried again; but one that went out all the same is recorded as sent.
    mutating func record(_ attempt: Result<String, DeliveryFailure>, at now: Date) -> AttemptConsequences {
        var consequences = AttemptConsequences()
        self.claimedAt = nil
        switch (attempt, self.state) {
        case (.success(let note), .pending), (.success(let note), .cancelled):
            self.state = .sent
            self.sentAt = now
            self.nextAttemptAt = nil
            self.lastError = note
        case (.success, _):
            break
        case (.failure(let failure), _):
            self.lastError = failure.message
            self.mayHaveArrived = self.mayHaveArrived || failure.mayHaveArrived
            consequences.bounce = failure.addressRefused && failure.isPermanent
            if self.state == .pending {
                if failure.isPermanent
                    || !DeliveryFailure.retriesForever(kind: self.kind, mayHaveArrived: self.mayHaveArrived)
                        && self.attempts >= DeliveryFailure.maxAttempts
                {
                    self.state = .failed
                    self.nextAttemptAt = nil
                } else {
                    self.nextAttemptAt = now.addingTimeInterval(DeliveryFailure.backoff(afterAttempts: self.attempts))
                }
            }
        }
        consequences.allClear = self.state == .sent || (self.state == .cancelled && self.mayHaveArrived)
        return consequences
    }

    /// Takes back an attempt that a process left under way without an outcome (killed, or its
    /// lease ran out): due again at once if still pending, and it may have arrived (the server
    /// may have taken it before the process died). It does not count toward giving up.
    mutating func releaseClaim() {
        if self.state == .pending { self.nextAttemptAt = self.claimedAt }
        self.attempts -= 1
        self.claimedAt = nil
        self.mayHaveArrived = true
    }
}

extension AlertRecord {
    /// Whether a due message must not go out any more, on either store: a warning left pending
    /// past its deadline (decided before a restart, or retrying while the webhook was down: "we'll
    /// email your contact in 10 minutes" while they are being emailed; the decider cancels such
    /// warnings when it decides the alert, but a sender may claim one first), or an invitation
    /// still retrying once its contact can no longer answer it (its 7 days passed, they answered,
    /// or a re-sent one replaced it: it would ask them to use links it has not). `profile` and
    /// `contact` are read only for those kinds; gone, the message is stale.
    func isStale(
        at now: Date,
        profile: () throws -> ProfileRecord?,
        contact: () throws -> ContactRecord?
    ) rethrows -> Bool {
        if self.kind != MessageKind.alert, SafetyStore.cancellableKinds.contains(self.kind) {
            guard let profile = try profile() else { return true }
            return SwitchMachine.isStale(warningOf: self.epoch, on: profile.switchState, at: now)
        }
        if self.kind == MessageKind.invitation {
            guard let contact = try contact() else { return true }
            return !contact.consent.isAwaitingAnswer(at: now)
        }
        return false
    }
}
