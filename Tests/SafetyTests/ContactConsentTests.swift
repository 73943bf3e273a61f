import Foundation
import Testing

@testable import SafetyService

/// An emergency contact's agreement as its rules see it: what a link can do, what an answer or a
/// bounce changes, when an invitation may go. No store, no clock.
@Suite("Contact consent: invitations, links and answers, without a store")
struct ContactConsentTests {
    /// 2026-01-01 00:00 UTC: the invitation is queued.
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86_400
    static let week = ContactConsent.invitationLifetime
    let t0 = Self.t0
    let hour = Self.hour
    let day = Self.day
    let week = Self.week

    /// A contact invited at t0 (its links work until t0 + 7 days), now in `state` (answered an
    /// hour later unless invited).
    static func consent(_ state: ContactState = .invited, alarmsUntil: Date? = nil) -> ContactConsent {
        var consent = ContactConsent.invited(at: Self.t0)
        consent.state = state
        if state != .invited { consent.answeredAt = Self.t0 + Self.hour }
        consent.alarmsUntil = alarmsUntil
        return consent
    }

    /// Why ``ContactConsent/mayInvite(history:sentToday:at:)`` refuses; nil when it allows.
    static func refusal(history: AddressHistory?, sentToday: [Date] = [], at now: Date = ContactConsentTests.t0)
        -> InvitationRefusal?
    {
        do throws(InvitationRefusal) {
            try ContactConsent.mayInvite(history: history, sentToday: sentToday, at: now)
            return nil
        } catch {
            return error
        }
    }

    /// Why ``ContactConsent/invite(at:)`` refuses; nil when it invited.
    static func invite(_ consent: inout ContactConsent, at now: Date) -> InvitationRefusal? {
        do throws(InvitationRefusal) {
            try consent.invite(at: now)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Links

    @Test("an invitation's link confirms or declines until its 7 days end: expired at exactly 7 days")
    func invitationLinkExpiry() {
        let consent = Self.consent()
        for answer in [ContactAnswer.confirm, .decline] {
            let linkEnd = self.t0 + self.week
            let check = { (now: Date) in consent.check(answer, purpose: .answer, linkExpiresAt: linkEnd, at: now) }
            #expect(check(self.t0) == .usable)
            #expect(check(self.t0 + self.week - 1) == .usable)
            #expect(check(self.t0 + self.week) == .expired, "linkExpiresAt <= now")
            #expect(check(self.t0 + self.week + 1) == .expired)
        }
    }

    @Test(
        "a re-sent invitation's new links work; the old ones stay expired; a link without an end follows the invitation"
    )
    func resentInvitationLinks() {
        var consent = Self.consent()
        let refusal = Self.invite(&consent, at: self.t0 + self.day)
        #expect(refusal == nil)
        let now = self.t0 + self.week
        #expect(consent.check(.confirm, purpose: .answer, linkExpiresAt: self.t0 + self.week, at: now) == .expired)
        let newEnd = self.t0 + self.day + self.week
        #expect(consent.check(.confirm, purpose: .answer, linkExpiresAt: newEnd, at: now) == .usable)
        // A link stored without an end works as long as the invitation does.
        #expect(consent.check(.decline, purpose: .answer, linkExpiresAt: nil, at: now) == .usable)
        #expect(consent.check(.decline, purpose: .answer, linkExpiresAt: nil, at: newEnd) == .expired)
    }

    @Test(
        "an answered invitation's link says so, at any time",
        arguments: [ContactState.confirmed, .declined, .optedOut, .bounced]
    )
    func answeredInvitationLink(state: ContactState) {
        let consent = Self.consent(state)
        for answer in [ContactAnswer.confirm, .decline] {
            for now in [self.t0 + self.hour, self.t0 + 2 * self.week] {
                let check = consent.check(answer, purpose: .answer, linkExpiresAt: self.t0 + self.week, at: now)
                #expect(check == .alreadyAnswered)
            }
        }
    }

    @Test(
        "Confirm and Decline take only an invitation's link, opting out only an opt-out link, which works in any state",
        arguments: ContactState.allCases
    )
    func linkPurposes(state: ContactState) {
        let consent = Self.consent(state)
        let now = self.t0 + self.hour
        #expect(consent.check(.confirm, purpose: .optOut, linkExpiresAt: nil, at: now) == .notFound)
        #expect(consent.check(.decline, purpose: .optOut, linkExpiresAt: nil, at: now) == .notFound)
        #expect(consent.check(.optOut, purpose: .answer, linkExpiresAt: self.t0 + self.week, at: now) == .notFound)
        #expect(consent.check(.optOut, purpose: .optOut, linkExpiresAt: nil, at: now) == .usable)
        // Long after any invitation ended.
        #expect(consent.check(.optOut, purpose: .optOut, linkExpiresAt: nil, at: self.t0 + 30 * self.day) == .usable)
    }

    // MARK: Answers

    @Test("confirming or declining records when and what; a grace from before invitations ends with the answer")
    func confirmAndDecline() {
        let at = self.t0 + self.hour
        var confirmed = Self.consent()
        let confirmation = confirmed.answer(.confirm, at: at)
        #expect(confirmation == .confirmed)
        #expect(
            confirmed
                == ContactConsent(
                    state: .confirmed,
                    invitedAt: self.t0,
                    expiresAt: self.t0 + self.week,
                    answeredAt: at,
                    alarmsUntil: nil
                )
        )
        var declined = Self.consent()
        let declination = declined.answer(.decline, at: at)
        #expect(declination == .declined)
        #expect(declined.state == .declined && declined.answeredAt == at)

        // A contact stored before invitations existed, in their grace.
        var graceConfirmed = Self.consent(alarmsUntil: self.t0 + self.week)
        let graceConfirmation = graceConfirmed.answer(.confirm, at: at)
        #expect(graceConfirmation == .confirmed)
        #expect(graceConfirmed.alarmsUntil == nil)
        #expect(graceConfirmed.receivesAlarms(at: self.t0 + 2 * self.week), "confirmed: for good")
        var graceDeclined = Self.consent(alarmsUntil: self.t0 + self.week)
        let graceDeclination = graceDeclined.answer(.decline, at: at)
        #expect(graceDeclination == .declined)
        #expect(!graceDeclined.receivesAlarms(at: at), "declined: at once")
    }

    @Test(
        "opting out works once from any state but a refusal; again, or after a decline, it answers nil and changes nothing",
        arguments: ContactState.allCases
    )
    func optOut(state: ContactState) {
        let at = self.t0 + self.day
        var consent = Self.consent(state, alarmsUntil: state == .invited ? self.t0 + self.week : nil)
        let before = consent
        let event = consent.answer(.optOut, at: at)
        if state == .optedOut || state == .declined {
            #expect(event == nil)
            #expect(consent == before)
        } else {
            #expect(event == .optedOut)
            #expect(consent.state == .optedOut && consent.answeredAt == at && consent.alarmsUntil == nil)
            #expect(!consent.receivesAlarms(at: at))
        }
    }

    @Test("opting out twice: the second time gives nil and keeps the first one's time")
    func optOutTwice() {
        var consent = Self.consent(.confirmed)
        let first = consent.answer(.optOut, at: self.t0 + self.day)
        #expect(first == .optedOut)
        let once = consent
        let second = consent.answer(.optOut, at: self.t0 + 2 * self.day)
        #expect(second == nil)
        #expect(consent == once)
        #expect(consent.answeredAt == self.t0 + self.day)
    }

    @Test("only an invited or confirmed contact bounces; a refusal stays a refusal", arguments: ContactState.allCases)
    func bounce(state: ContactState) {
        let at = self.t0 + self.day
        var consent = Self.consent(state, alarmsUntil: state == .invited ? self.t0 + self.week : nil)
        let before = consent
        let event = consent.bounce(at: at)
        switch state {
        case .invited, .confirmed:
            #expect(event == .bounced)
            #expect(consent.state == .bounced && consent.answeredAt == at && consent.alarmsUntil == nil)
            #expect(!consent.receivesAlarms(at: at))
        case .declined, .optedOut, .bounced:
            #expect(event == nil)
            #expect(consent == before)
        }
    }

    @Test("the push kinds of what contacts do")
    func eventKinds() {
        #expect(
            ContactEvent.allCases.map(\.kind) == [
                "contact_confirmed", "contact_declined", "contact_opted_out", "contact_bounced",
            ]
        )
    }

    // MARK: Invitations

    @Test("a new contact is invited now, for 7 days, with no answer and no grace")
    func newInvitation() {
        let consent = ContactConsent.invited(at: self.t0)
        #expect(consent == ContactConsent(state: .invited, invitedAt: self.t0, expiresAt: self.t0 + self.week))
        #expect(consent.answeredAt == nil && consent.alarmsUntil == nil)
        #expect(!consent.receivesAlarms(at: self.t0))
        #expect(consent.isAwaitingAnswer(at: self.t0 + self.week - 1))
        #expect(!consent.isAwaitingAnswer(at: self.t0 + self.week))
    }

    @Test("a re-sent invitation: new 7 days from now, the first invitation's grace unchanged")
    func reinvite() {
        var consent = Self.consent(alarmsUntil: self.t0 + self.week)
        let at = self.t0 + self.week + self.day  // after the first one expired
        #expect(!consent.isAwaitingAnswer(at: at))
        let refusal = Self.invite(&consent, at: at)
        #expect(refusal == nil)
        #expect(consent.state == .invited && consent.invitedAt == at && consent.expiresAt == at + self.week)
        #expect(consent.alarmsUntil == self.t0 + self.week)
        #expect(consent.answeredAt == nil)
        #expect(consent.isAwaitingAnswer(at: at))
    }

    @Test("a re-send comes a day after the invitation before at the soonest")
    func resendTooSoon() {
        var consent = Self.consent()
        let last = Self.t0
        #expect(Self.invite(&consent, at: last + self.day - 1) == .tooSoon(retryAfter: 1))
        #expect(Self.invite(&consent, at: last + self.day) == nil)
    }

    @Test("a link whose contact was removed still declines or opts out, and confirms no one")
    func removedContactLinks() {
        let now = self.t0 + self.day
        #expect(ContactConsent.checkRemoved(.confirm, purpose: .answer, linkExpiresAt: now + 1, at: now) == .notFound)
        #expect(ContactConsent.checkRemoved(.decline, purpose: .answer, linkExpiresAt: now + 1, at: now) == .usable)
        #expect(ContactConsent.checkRemoved(.decline, purpose: .answer, linkExpiresAt: now, at: now) == .expired)
        #expect(ContactConsent.checkRemoved(.decline, purpose: .optOut, linkExpiresAt: nil, at: now) == .notFound)
        #expect(ContactConsent.checkRemoved(.optOut, purpose: .optOut, linkExpiresAt: nil, at: now) == .usable)
        #expect(ContactConsent.checkRemoved(.optOut, purpose: .answer, linkExpiresAt: nil, at: now) == .notFound)
    }

    @Test(
        "only an invited contact is invited again",
        arguments: [ContactState.confirmed, .declined, .optedOut, .bounced]
    )
    func reinviteRefused(state: ContactState) {
        var consent = Self.consent(state)
        let before = consent
        let refusal = Self.invite(&consent, at: self.t0 + self.day)
        #expect(refusal == .notInvited(state))
        #expect(consent == before)
    }

    @Test("an address gets at most 4 invitations from one user: after 3 one more, after 4 none")
    func perAddress() {
        #expect(Self.refusal(history: nil) == nil)
        #expect(Self.refusal(history: AddressHistory(invitations: 1, refused: nil)) == nil)
        #expect(Self.refusal(history: AddressHistory(invitations: 3, refused: nil)) == nil)
        #expect(Self.refusal(history: AddressHistory(invitations: 4, refused: nil)) == .tooManyForAddress)
        #expect(Self.refusal(history: AddressHistory(invitations: 5, refused: nil)) == .tooManyForAddress)
    }

    @Test("a user sends at most 20 invitations in 24 hours; the next when the oldest of them is a day old")
    func perDay() {
        let now = self.t0
        // The oldest 23 h ago, the others since, a minute apart.
        let sent = (0..<20).map { now - 23 * self.hour + Double($0) * 60 }
        #expect(Self.refusal(history: nil, sentToday: Array(sent.prefix(19)), at: now) == nil)
        #expect(Self.refusal(history: nil, sentToday: sent, at: now) == .tooManyToday(retryAfter: self.hour))
        // Oldest + 24 h - now, whatever the others.
        let older = [now - self.day + 90] + Array(sent.dropFirst())
        #expect(Self.refusal(history: nil, sentToday: older, at: now) == .tooManyToday(retryAfter: 90))
        // An hour later the oldest left the day (the store no longer passes it): 19.
        #expect(Self.refusal(history: nil, sentToday: Array(sent.dropFirst()), at: now + self.hour) == nil)
    }

    @Test("an address that declined or opted out is never invited again by that user, before any other limit")
    func refusedBefore() {
        // 20 in the last hour, oldest first.
        let full = (0..<20).map { self.t0 - self.hour + Double($0) * 60 }
        for refused in [ContactState.declined, .optedOut] {
            #expect(Self.refusal(history: AddressHistory(invitations: 1, refused: refused)) == .refusedBefore(refused))
            #expect(
                Self.refusal(history: AddressHistory(invitations: 4, refused: refused), sentToday: full)
                    == .refusedBefore(refused)
            )
        }
        // For good before for today: 4 invitations and 20 today tells of the address.
        let both = Self.refusal(history: AddressHistory(invitations: 4, refused: nil), sentToday: full)
        #expect(both == .tooManyForAddress)
    }

    // MARK: Alarms

    @Test("who receives alarms: a confirmed contact; an invited one only in a grace still running")
    func receivesAlarms() {
        let now = self.t0 + self.day
        #expect(Self.consent(.confirmed).receivesAlarms(at: now))
        #expect(Self.consent(.invited, alarmsUntil: now + 1).receivesAlarms(at: now))
        #expect(!Self.consent(.invited, alarmsUntil: now).receivesAlarms(at: now), "ends at alarmsUntil")
        #expect(!Self.consent(.invited, alarmsUntil: now - 1).receivesAlarms(at: now))
        #expect(!Self.consent(.invited, alarmsUntil: nil).receivesAlarms(at: now))
        for state in [ContactState.declined, .optedOut, .bounced] {
            #expect(!Self.consent(state, alarmsUntil: now + self.day).receivesAlarms(at: now), "\(state)")
        }
    }

    @Test("awaiting an answer: invited, and the invitation still open")
    func awaitingAnswer() {
        #expect(Self.consent().isAwaitingAnswer(at: self.t0 + self.week - 1))
        #expect(!Self.consent().isAwaitingAnswer(at: self.t0 + self.week))
        for state in [ContactState.confirmed, .declined, .optedOut, .bounced] {
            #expect(!Self.consent(state).isAwaitingAnswer(at: self.t0 + self.hour), "\(state)")
        }
    }
}
