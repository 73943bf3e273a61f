import Foundation
import HearthStore
import Testing

@testable import SafetyService

/// What answering a link from an email decides (``ConsentLink``), the end of a grace from before
/// invitations (``ContactConsent/endGrace(at:)``) and how long a removed contact's opt-out link
/// works: the rules alone, no store, no clock.
@Suite("Consent links: what an answer from a link decides, without a store")
struct ConsentLinkTests {
    /// 2026-01-01 00:00 UTC: the invitation is queued.
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)
    let t0 = Self.t0
    let hour: TimeInterval = 3600
    let day: TimeInterval = 86_400
    let week = ContactConsent.invitationLifetime

    /// A contact invited at t0, now in `state` (answered an hour later unless invited).
    static func contact(_ state: ContactState = .invited, alarmsUntil: Date? = nil) -> ContactConsent {
        var consent = ContactConsent.invited(at: Self.t0)
        consent.state = state
        if state != .invited { consent.answeredAt = Self.t0 + 3600 }
        consent.alarmsUntil = alarmsUntil
        return consent
    }

    /// The invitation's Confirm and Decline link of `contact` (nil: removed since).
    static func answerLink(_ contact: ContactConsent?) -> ConsentLink {
        ConsentLink(purpose: .answer, expiresAt: Self.t0 + ContactConsent.invitationLifetime, contact: contact)
    }

    /// An opt-out link of `contact` (nil: removed since, `end` the end its removal gave it).
    static func optOutLink(_ contact: ContactConsent?, end: Date? = nil) -> ConsentLink {
        ConsentLink(purpose: .optOut, expiresAt: end, contact: contact)
    }

    // MARK: A contact who is there

    @Test("confirming an open invitation: confirmed, the user told, no refusal; a grace ends with it")
    func confirm() {
        let at = self.t0 + self.hour
        let decision = Self.answerLink(Self.contact(alarmsUntil: self.t0 + self.week)).answer(.confirm, at: at)
        var expected = Self.contact()
        expected.state = .confirmed
        expected.answeredAt = at
        #expect(
            decision
                == LinkDecision(check: .usable, state: .confirmed, consent: expected, event: .confirmed, refusal: nil)
        )
        #expect(decision.consent?.alarmsUntil == nil)
    }

    @Test(
        "declining an open invitation, until its last millisecond: declined, the user told, the refusal kept"
    )
    func decline() {
        let at = self.t0 + self.week - 0.001
        let decision = Self.answerLink(Self.contact()).answer(.decline, at: at)
        #expect(decision.check == .usable && decision.state == .declined && decision.event == .declined)
        #expect(decision.refusal == .declined)
        #expect(decision.consent?.state == .declined && decision.consent?.answeredAt == at)
    }

    @Test("an invitation's link at its end or after: expired, and nothing changes")
    func expired() {
        for at in [self.t0 + self.week, self.t0 + 2 * self.week] {
            for answer in [ContactAnswer.confirm, .decline] {
                let decision = Self.answerLink(Self.contact()).answer(answer, at: at)
                #expect(decision == LinkDecision(check: .expired, state: .invited), "\(answer) at \(at)")
            }
        }
    }

    @Test(
        "an answered invitation's link, used or not: answered already, with where they stand; nothing changes",
        arguments: [ContactState.confirmed, .declined, .optedOut, .bounced]
    )
    func answeredAlready(state: ContactState) {
        for at in [self.t0 + self.day, self.t0 + 2 * self.week] {
            for answer in [ContactAnswer.confirm, .decline] {
                let decision = Self.answerLink(Self.contact(state)).answer(answer, at: at)
                #expect(decision == LinkDecision(check: .alreadyAnswered, state: state), "\(answer) at \(at)")
            }
        }
    }

    @Test(
        "opting out works in any state but a refusal (told, kept); again or after a decline it changes nothing",
        arguments: ContactState.allCases
    )
    func optOut(state: ContactState) {
        let at = self.t0 + 30 * self.day
        let decision = Self.optOutLink(Self.contact(state)).answer(.optOut, at: at)
        switch state {
        case .declined, .optedOut:
            #expect(decision == LinkDecision(check: .usable, state: state))
        case .invited, .confirmed, .bounced:
            #expect(decision.check == .usable && decision.state == .optedOut && decision.event == .optedOut)
            #expect(decision.refusal == .optedOut && decision.consent?.state == .optedOut)
            #expect(decision.consent?.answeredAt == at)
        }
    }

    @Test("a link for something else says nothing and does nothing", arguments: ContactState.allCases)
    func wrongPurpose(state: ContactState) {
        let at = self.t0 + self.hour
        let contact = Self.contact(state)
        #expect(Self.optOutLink(contact).answer(.confirm, at: at) == LinkDecision(check: .notFound))
        #expect(Self.optOutLink(contact).answer(.decline, at: at) == LinkDecision(check: .notFound))
        #expect(Self.answerLink(contact).answer(.optOut, at: at) == LinkDecision(check: .notFound))
    }

    @Test("the page's GET shows what the link can do and where the contact stands, and decides nothing")
    func view() {
        let at = self.t0 + self.hour
        #expect(Self.answerLink(Self.contact()).view(.confirm, at: at) == LinkDecision(check: .usable, state: .invited))
        #expect(
            Self.optOutLink(Self.contact(.confirmed)).view(.optOut, at: at)
                == LinkDecision(check: .usable, state: .confirmed)
        )
        #expect(Self.answerLink(nil).view(.decline, at: at) == LinkDecision(check: .usable, state: .declined))
        #expect(Self.optOutLink(nil).view(.optOut, at: at) == LinkDecision(check: .usable, state: .optedOut))
        #expect(Self.answerLink(nil).view(.confirm, at: at) == LinkDecision(check: .notFound))
    }

    // MARK: A contact removed since

    @Test("a removed contact's decline or opt-out is kept for the address, and no one is told")
    func removed() {
        let at = self.t0 + self.day
        #expect(
            Self.answerLink(nil).answer(.decline, at: at)
                == LinkDecision(check: .usable, state: .declined, refusal: .declined)
        )
        #expect(
            Self.optOutLink(nil).answer(.optOut, at: at)
                == LinkDecision(check: .usable, state: .optedOut, refusal: .optedOut)
        )
        #expect(
            Self.answerLink(nil).answer(.confirm, at: at) == LinkDecision(check: .notFound),
            "no one to confirm"
        )
        // Past the invitation's end the decline keeps nothing.
        #expect(
            Self.answerLink(nil).answer(.decline, at: self.t0 + self.week)
                == LinkDecision(check: .expired, state: .declined)
        )
    }

    @Test(
        "a removed contact's opt-out link works until 30 days after the removal, to the millisecond, then says nothing"
    )
    func removedOptOutEnds() {
        let removedAt = self.t0 + self.hour
        let end = ContactConsent.optOutLinksEnd(removedAt: removedAt)
        #expect(end == removedAt + 30 * self.day)
        let link = Self.optOutLink(nil, end: end)
        #expect(
            link.answer(.optOut, at: end - 0.001) == LinkDecision(check: .usable, state: .optedOut, refusal: .optedOut)
        )
        #expect(link.answer(.optOut, at: end) == LinkDecision(check: .notFound))
        #expect(link.view(.optOut, at: end + self.day) == LinkDecision(check: .notFound))
        // Without an end (removed before ends were kept, or by an older version): as before.
        #expect(Self.optOutLink(nil).answer(.optOut, at: end + 365 * self.day).check == .usable)
    }

    // MARK: Graces of contacts stored before invitations

    @Test("a grace ends at its time, to the millisecond: cleared, and the user is told once")
    func graceEnds() {
        let end = self.t0 + self.week
        var contact = Self.contact(alarmsUntil: end)
        var running = contact
        let early = running.endGrace(at: end - 0.001)
        #expect(!early)
        #expect(running == contact, "not over: unchanged")
        let told = contact.endGrace(at: end)
        #expect(told)
        #expect(contact.alarmsUntil == nil && contact.state == .invited && contact.answeredAt == nil)
        #expect(!contact.receivesAlarms(at: end))
        let again = contact.endGrace(at: end + self.day)
        #expect(!again, "once")
    }

    @Test(
        "a grace answered in time, or no grace at all, tells nothing",
        arguments: [ContactAnswer.confirm, .decline, .optOut]
    )
    func graceAnswered(answer: ContactAnswer) {
        let end = self.t0 + self.week
        var contact = Self.contact(alarmsUntil: end)
        _ = contact.answer(answer, at: end - self.day)
        let answered = contact
        let toldAnswered = contact.endGrace(at: end + self.day)
        #expect(!toldAnswered)
        #expect(contact == answered)
        var bounced = Self.contact(alarmsUntil: end)
        _ = bounced.bounce(at: end - self.day)
        let toldBounced = bounced.endGrace(at: end + self.day)
        #expect(!toldBounced)
        var invited = Self.contact()
        let toldInvited = invited.endGrace(at: end + self.day)
        #expect(!toldInvited, "a contact invited since invitations exist has no grace")
    }

    @Test(
        "an invitation re-sent during the grace leaves its end where it was: the user is told then all the same"
    )
    func graceWithResentInvitation() throws {
        let end = self.t0 + self.week
        var contact = Self.contact(alarmsUntil: end)
        try contact.invite(at: self.t0 + 2 * self.day)
        #expect(contact.alarmsUntil == end && contact.isAwaitingAnswer(at: end))
        let told = contact.endGrace(at: end)
        #expect(told)
        #expect(contact.isAwaitingAnswer(at: end), "the new invitation can still be confirmed")
    }

    @Test("a new link token: 256 random bits as 43 base64url characters, read back as a token, never repeated")
    func newTokens() {
        var seen: Set<String> = []
        var characters: Set<UInt8> = []
        for _ in 0..<2_000 {
            let token = LinkToken.make()
            #expect(token.text.utf8.count == 43)
            #expect(LinkToken(token.text) == token)
            #expect(Data(base64URLEncoded: token.text)?.count == 32)
            seen.insert(token.text)
            characters.formUnion(token.text.utf8)
        }
        #expect(seen.count == 2_000)
        // Every byte drawn: all 64 characters turn up (each missing from 2,000 tokens with odds
        // under 1e-1000).
        #expect(characters.count == 64)
    }
}
