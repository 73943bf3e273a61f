import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Invitations through the service, with a real SMTP server: their 7 days and re-sends, the
/// daily limit, links that say nothing, addresses that bounce, and contacts stored before
/// invitations existed.
@Suite("Contact invitations: limits, links and upgrades", .timeLimit(.minutes(2)), .serialized)
struct ContactInvitationLimitTests {
    let hour: TimeInterval = 3600
    let week = ContactConsent.invitationLifetime

    @Test(
        "an invitation expires after 7 days; it can be re-sent three times, a day apart at least",
        arguments: StoreKind.allCases
    )
    func expiryAndResend(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            let t0 = system.clock.now()
            let added = try await system.inviteContact("brother@example.com")
            try await system.settle()
            try await eventually("the invitation") { try system.invitationTokens().count == 1 }
            let first = try system.invitationTokens()[0]
            func resend(_ id: String) async throws -> Hearth_Safety_V1_Contact {
                try await system.service.resendInvitation(.with { $0.contactID = id }, callContext("mei"))
            }

            try await system.advance(to: t0 + self.week - 1)
            #expect(try await system.contactLink(first, .confirm).outcome == .linkOk)
            #expect(try await system.contactLink(first, .decline).outcome == .linkOk)
            #expect(try await system.status().notArmedReason == .awaitingConfirmation)
            try await system.advance(to: t0 + self.week)
            let expired = try await system.contactLink(first, .confirm)
            #expect(expired.outcome == .linkExpired && expired.state == .invited && expired.personName == "Mei Chen")
            #expect(try await system.answerLink(first, .confirm).outcome == .linkExpired, "and confirms nothing")
            #expect(try await system.answerLink(first, .decline).outcome == .linkExpired, "nor declines")
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .invitationExpired)
            let waiting = try #require(try await system.contacts().first)
            #expect(waiting.state == .invited && !waiting.receivesAlarms)

            // Three re-sends: new links, 7 more days each, an email each; each a day after the one
            // before at the soonest.
            for sent in 2...4 {
                system.clock.advance(by: sent == 2 ? self.hour : 24 * self.hour - 1)
                if sent > 2 {
                    await expectCode(.resourceExhausted) { _ = try await resend(added.id) }
                    system.clock.advance(by: 1)
                }
                let now = system.clock.now()
                let resent = try await resend(added.id)
                #expect(resent.state == .invited && resent.invitationsSent == UInt32(sent))
                #expect(resent.invitedAt.date == now && resent.invitationExpiresAt.date == now + self.week)
                try await system.settle()
                try await eventually("invitation \(sent)") { try system.invitationTokens().count == sent }
            }
            let latest = try #require(try system.invitationTokens().last)
            #expect(latest != first)
            #expect(try await system.contactLink(first, .confirm).outcome == .linkExpired, "the old link stays expired")
            #expect(try await system.contactLink(latest, .confirm).outcome == .linkOk)
            #expect(try await system.status().notArmedReason == .awaitingConfirmation)
            await expectCode(.failedPrecondition) { _ = try await resend(added.id) }
            #expect(try await system.contacts().first?.invitationsSent == 4)
            try await system.settle()
            #expect(try system.invitationTokens().count == 4, "no fifth email")

            // Confirmed: nothing to re-send. Unknown or missing ids.
            #expect(try await system.answerLink(latest, .confirm).state == .confirmed)
            await expectCode(.failedPrecondition) { _ = try await resend(added.id) }
            await expectCode(.notFound) { _ = try await resend("no-such-contact") }
            #expect(await violatedFields { _ = try await resend("") } == ["contact_id"])
            // Removed and added again counts on: the address had its 4.
            _ = try await system.service.removeContact(.with { $0.contactID = added.id }, callContext("mei"))
            await expectCode(.failedPrecondition) { _ = try await system.inviteContact("brother@example.com") }
        }
    }

    @Test("at most 20 invitations a day", arguments: StoreKind.allCases)
    func dailyLimit(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            let t0 = system.clock.now()
            var ids: [String] = []
            for index in 1...10 { ids.append(try await system.inviteContact("c\(index)@example.com").id) }
            for id in ids {
                _ = try await system.service.removeContact(.with { $0.contactID = id }, callContext("mei"))
            }
            system.clock.set(t0 + 2 * self.hour)
            var later: [String] = []
            for index in 11...20 { later.append(try await system.inviteContact("c\(index)@example.com").id) }
            // Room for one more contact, not for one more invitation.
            _ = try await system.service.removeContact(.with { $0.contactID = later[0] }, callContext("mei"))
            func refusedFor() async -> Duration? {
                do {
                    _ = try await system.inviteContact("c21@example.com")
                    Issue.record("the 21st invitation in a day was sent")
                    return nil
                } catch {
                    let answer = RPCError(answering: error)
                    #expect(answer.code == .resourceExhausted, "\(answer)")
                    return answer.retryAfter
                }
            }
            system.clock.set(t0 + 3 * self.hour)
            #expect(await refusedFor() == .seconds(21 * 3600), "until the first ten are a day old")
            system.clock.set(t0 + 24 * self.hour - 1)
            #expect(await refusedFor() == .seconds(1))
            // A re-send counts too.
            await expectCode(.resourceExhausted) {
                _ = try await system.service.resendInvitation(.with { $0.contactID = later[1] }, callContext("mei"))
            }
            system.clock.set(t0 + 24 * self.hour)
            let allowed = try await system.inviteContact("c21@example.com")
            #expect(allowed.state == .invited && allowed.invitationsSent == 1)
        }
    }

    @Test("a bad or unknown link says nothing", arguments: StoreKind.allCases)
    func badLinks(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            _ = try await system.inviteContact("brother@example.com")
            try await system.settle()
            try await eventually("the invitation") { try system.mails(to: "brother@example.com").count == 1 }
            let body = try system.mails(to: "brother@example.com")[0].body
            let confirm = try #require(SafetySystem.token(in: body, path: "/contact/confirm?t="))
            let optOut = try #require(SafetySystem.token(in: body, path: "/contact/opt-out?t="))
            let nothing = Hearth_Safety_V1_ContactLink.with { $0.outcome = .linkNotFound }

            // Not a token: too short, too long, a character base64url has not.
            let malformed = [
                "", "abc", confirm + "A", String(confirm.dropLast()) + "+", String(repeating: "=", count: 43),
            ]
            for token in malformed {
                #expect(try await system.contactLink(token, .confirm) == nothing, "\(token)")
                #expect(try await system.answerLink(token, .confirm) == nothing, "\(token)")
            }
            // Well formed, and nobody's.
            let random = LinkToken.make().text
            #expect(random.count == 43)
            for action in [Hearth_Safety_V1_ContactAction.confirm, .decline, .optOut] {
                #expect(try await system.contactLink(random, action) == nothing)
                #expect(try await system.answerLink(random, action) == nothing)
            }
            // A link for something else: an invitation's to opt out, an opt-out link to answer.
            #expect(try await system.contactLink(confirm, .optOut) == nothing)
            #expect(try await system.answerLink(confirm, .optOut) == nothing)
            #expect(try await system.contactLink(optOut, .confirm) == nothing)
            #expect(try await system.answerLink(optOut, .decline) == nothing)
            // No action.
            #expect(await violatedFields { _ = try await system.contactLink(confirm, .unspecified) } == ["action"])
            #expect(await violatedFields { _ = try await system.answerLink(confirm, .unspecified) } == ["action"])

            // None of it changed anything; the real link still works.
            #expect(try await system.contacts().map(\.state) == [.invited])
            let shown = try await system.contactLink(confirm, .confirm)
            #expect(shown.outcome == .linkOk && shown.personName == "Mei Chen" && shown.language == "en")
            #expect(shown.state == .invited)
            try await system.settle()
            #expect(try system.contactPushes().isEmpty)
        }
    }

    @Test("an address the mail server refuses for good is BOUNCED and the user told")
    func bounced() async throws {
        let rejecting = try await SMTPSink(arguments: ["--reject-rcpt"])
        try await withSafetySystem(smtpPort: rejecting.port) { system in
            try await system.profile(contacts: [])
            let added = try await system.inviteContact("nobody@example.com")
            try await system.settle()
            try await eventually("the contact is bounced") {
                try await system.contacts().first?.state == .bounced
            }
            // The user's push was queued as the outcome was recorded: the senders look again.
            try await system.settle()
            try await eventually("the user hears of it") { try system.contactPushes() == ["safety.contact_bounced"] }
            let contact = try #require(try await system.contacts().first)
            #expect(!contact.receivesAlarms && contact.answeredAt.date == system.clock.now())
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .noContact)
            await expectCode(.failedPrecondition) {
                _ = try await system.service.resendInvitation(.with { $0.contactID = added.id }, callContext("mei"))
            }
            #expect(try rejecting.messages().isEmpty)
        }
        rejecting.stop()
    }

    @Test(
        "contacts stored before invitations existed are invited at the next start and keep receiving alarms while that invitation is open"
    )
    func storedBeforeInvitations() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            // Two users with a contact each, armed; then the rows as version 5 left them: a
            // contact without a state, never invited, nothing remembered of it.
            try await system.profile("mei", contacts: ["brother@example.com"], confirmedByEmail: false)
            try await system.profile("kai", name: "Kai Lin", contacts: ["friend@example.com"], confirmedByEmail: false)
            try await system.storeContactsAsBeforeInvitations()
            let invitationsBefore = try system.invitationTokens().count
            let startedAt = t0 + self.hour
            try await system.restart { system.clock.set(startedAt) }
            try await system.settle()

            for user in ["mei", "kai"] {
                let contact = try #require(try await system.contacts(user).first)
                #expect(contact.state == .invited && contact.receivesAlarms && contact.invitationsSent == 1)
                #expect(contact.invitedAt.date == startedAt)
                #expect(contact.invitationExpiresAt.date == startedAt + self.week)
                let status = try await system.status(user)
                #expect(status.state == .normal && status.deadline.date == t0 + 24 * self.hour, "armed as before")
            }
            try await eventually("an invitation to each") {
                try system.invitationTokens().count == invitationsBefore + 2
            }
            // Kai's friend confirms; Mei's brother never answers.
            let friend = try #require(try system.mails(to: "friend@example.com").last)
            let token = try #require(SafetySystem.token(in: friend.body, path: "/contact/confirm?t="))
            #expect(try await system.answerLink(token, .confirm).state == .confirmed)
            #expect(try await system.status("kai").deadline.date == t0 + 24 * self.hour, "confirming moves nothing")
            #expect(try system.mails(to: "brother@example.com").last?.body.contains("/contact/confirm?t=") == true)

            // The deadline, within the 7 days: both are alarmed.
            try await system.advance(to: t0 + 24 * self.hour)
            try await eventually("the alarm to both") { try system.emails().count == 2 }
            let alarmed = try system.emails().map(\.to)
            #expect(Set(alarmed) == ["brother@example.com", "friend@example.com"])

            // The invitation's 7 days end unanswered: so does the grace.
            try await system.advance(to: startedAt + self.week - 1)
            #expect(try await system.status("mei").state == .expired)
            try await system.advance(to: startedAt + self.week)
            let mei = try await system.status("mei")
            #expect(mei.state == .notArmed && mei.notArmedReason == .invitationExpired)
            let brother = try #require(try await system.contacts("mei").first)
            #expect(brother.state == .invited && !brother.receivesAlarms)
            #expect(try await system.status("kai").state == .expired, "a confirmed contact keeps the switch armed")
            // A later start invites nobody again.
            try await system.restart()
            try await system.settle()
            #expect(try system.invitationTokens().count == invitationsBefore + 2)
            #expect(try await system.contacts("mei").first?.invitationsSent == 1)
        }
    }
}
