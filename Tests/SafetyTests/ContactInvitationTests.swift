import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthScheduler
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Double opt-in through the service, with a real SMTP server: a contact is invited, answers
/// from the links in the email, and only a confirmed contact gets the alarm.
@Suite("Contact invitations", .timeLimit(.minutes(2)), .serialized)
struct ContactInvitationTests {
    let hour: TimeInterval = 3600
    let week = ContactConsent.invitationLifetime
    static let listUnsubscribe = "List-Unsubscribe: <http://127.0.0.1:7180/contact/opt-out?t="
    static let oneClick = "List-Unsubscribe-Post: List-Unsubscribe=One-Click"

    @Test(
        "a new contact gets an invitation, in the user's language, with Confirm, Decline and opt-out links and one-click List-Unsubscribe headers; the switch waits, NOT_ARMED, AWAITING_CONFIRMATION"
    )
    func invitation() async throws {
        try await withSafetySystem { system in
            try await system.profile(contacts: [])
            let now = system.clock.now()
            let contact = try await system.inviteContact("brother@example.com", name: "Joey")
            #expect(contact.state == .invited && contact.invitationsSent == 1 && !contact.receivesAlarms)
            #expect(contact.invitedAt.date == now && contact.invitationExpiresAt.date == now + self.week)
            #expect(!contact.hasAnsweredAt)
            #expect(try await system.contacts() == [contact], "listed as added")
            try await system.settle()
            try await eventually("the invitation") { try system.mails(to: "brother@example.com").count == 1 }
            let mail = try system.mails(to: "brother@example.com")[0]
            let english = AlertTexts(
                language: "en",
                name: "Mei Chen",
                timeZone: TimeZone(identifier: "America/Los_Angeles")!,
                product: "Hearth"
            ).invitationEmail(contactName: "Joey", thresholdHours: 24, expiresAt: now + self.week)
            #expect(mail.subject == english.subject)
            #expect(mail.body.contains(english.body), "\(mail.body)")
            #expect(mail.raw.contains(Self.listUnsubscribe), "\(mail.raw)")
            #expect(mail.raw.contains(Self.oneClick), "\(mail.raw)")
            #expect(mail.body.contains("Confirm: http://127.0.0.1:7180/contact/confirm?t="), "\(mail.body)")
            #expect(mail.body.contains("Decline: http://127.0.0.1:7180/contact/decline?t="), "\(mail.body)")
            #expect(mail.body.contains("http://127.0.0.1:7180/contact/opt-out?t="), "\(mail.body)")
            // Confirm and Decline share a token; the opt-out link has its own, the header's.
            let confirm = try #require(SafetySystem.token(in: mail.body, path: "/contact/confirm?t="))
            let optOut = try #require(SafetySystem.token(in: mail.body, path: "/contact/opt-out?t="))
            #expect(confirm.count == 43 && optOut.count == 43)
            #expect(SafetySystem.token(in: mail.body, path: "/contact/decline?t=") == confirm)
            #expect(optOut != confirm)
            #expect(SafetySystem.token(in: mail.raw, path: "/contact/opt-out?t=") == optOut)
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .awaitingConfirmation)
            #expect(try system.emails().isEmpty && system.contactPushes().isEmpty)

            // In Traditional Chinese.
            try await system.profile("wen", name: "陳小文", language: "zh-Hant", zone: "Asia/Taipei", contacts: [])
            _ = try await system.inviteContact("a@example.com", name: "阿明", user: "wen")
            try await system.settle()
            try await eventually("the invitation in zh-Hant") { try system.mails(to: "a@example.com").count == 1 }
            let hantMail = try system.mails(to: "a@example.com")[0]
            let taipei = TimeZone(identifier: "Asia/Taipei")!
            let hant = AlertTexts(language: "zh-Hant", name: "陳小文", timeZone: taipei, product: "Hearth")
                .invitationEmail(contactName: "阿明", thresholdHours: 24, expiresAt: now + self.week)
            let hantInEnglish = AlertTexts(language: "en", name: "陳小文", timeZone: .gmt, product: "Hearth")
                .invitationEmail(contactName: "阿明", thresholdHours: 24, expiresAt: now + self.week)
            #expect(hantMail.subject == hant.subject && hantMail.subject != hantInEnglish.subject)
            #expect(hantMail.body.contains(hant.body), "\(hantMail.body)")
            #expect(hantMail.body.contains("確認：http://127.0.0.1:7180/contact/confirm?t="), "\(hantMail.body)")
            #expect(hantMail.body.contains("婉拒：http://127.0.0.1:7180/contact/decline?t="), "\(hantMail.body)")
            #expect(hantMail.body.contains("/contact/opt-out?t="))
            #expect(hantMail.raw.contains(Self.listUnsubscribe) && hantMail.raw.contains(Self.oneClick))
            let wen = try await system.status("wen")
            #expect(wen.state == .notArmed && wen.notArmedReason == .awaitingConfirmation)
        }
    }

    @Test(
        "only confirmed contacts get the alarm; each alarm email carries an opt-out link",
        arguments: StoreKind.allCases
    )
    func onlyConfirmedContactsAreAlarmed(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            let t0 = system.clock.now()
            _ = try await system.inviteContact("yes@example.com")
            _ = try await system.inviteContact("quiet@example.com")
            try await system.settle()
            try await eventually("both invitations") {
                try system.mails(to: "yes@example.com").count == 1 && system.mails(to: "quiet@example.com").count == 1
            }
            let invitation = try system.mails(to: "yes@example.com")[0]
            let token = try #require(SafetySystem.token(in: invitation.body, path: "/contact/confirm?t="))
            let confirmed = try await system.answerLink(token, .confirm)
            #expect(confirmed.outcome == .linkOk && confirmed.state == .confirmed)
            #expect(confirmed.personName == "Mei Chen" && confirmed.language == "en")
            try await eventually("the user hears of it") { try system.contactPushes() == ["safety.contact_confirmed"] }
            let listed = try await system.contacts()
            let contacts = Dictionary(uniqueKeysWithValues: listed.map { ($0.email, $0) })
            let yes = try #require(contacts["yes@example.com"])
            let quiet = try #require(contacts["quiet@example.com"])
            #expect(yes.state == .confirmed && yes.receivesAlarms && yes.answeredAt.date == t0)
            #expect(quiet.state == .invited && !quiet.receivesAlarms && !quiet.hasAnsweredAt)
            let armed = try await system.status()
            #expect(armed.state == .normal && armed.deadline.date == t0 + 24 * self.hour)

            try await system.advance(to: t0 + 24 * self.hour)
            try await eventually("the alarm") { try system.emails().count == 1 }
            try await system.settle()
            let emails = try system.emails()
            #expect(emails.map(\.to) == ["yes@example.com"])
            #expect(emails.map(\.subject) == ["Hearth Alert: Mei Chen hasn't checked in"])
            #expect(try system.mails(to: "quiet@example.com").count == 1, "the invitation, and nothing else")
            let alarm = try #require(try system.mails(to: "yes@example.com").last)
            #expect(alarm.raw.contains(Self.listUnsubscribe) && alarm.raw.contains(Self.oneClick), "\(alarm.raw)")
            #expect(alarm.body.contains("http://127.0.0.1:7180/contact/opt-out?t="), "\(alarm.body)")
            #expect(!alarm.body.contains("/contact/confirm?t=") && !alarm.body.contains("/contact/decline?t="))
            let status = try await system.status()
            #expect(status.state == .expired && status.emails.map(\.email) == ["yes@example.com"])
        }
    }

    @Test(
        "a contact who declines is never invited again by that user, even removed and added again",
        arguments: StoreKind.allCases
    )
    func declined(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            let added = try await system.inviteContact("no@example.com", name: "Ann")
            try await system.settle()
            try await eventually("the invitation") { try system.mails(to: "no@example.com").count == 1 }
            let body = try system.mails(to: "no@example.com")[0].body
            let token = try #require(SafetySystem.token(in: body, path: "/contact/decline?t="))
            system.clock.advance(by: self.hour)
            let shown = try await system.contactLink(token, .decline)
            #expect(shown.outcome == .linkOk && shown.state == .invited)
            #expect(shown.personName == "Mei Chen" && shown.language == "en")
            let declined = try await system.answerLink(token, .decline)
            #expect(declined.outcome == .linkOk && declined.state == .declined)
            let listed = try #require(try await system.contacts().first)
            #expect(listed.state == .declined && !listed.receivesAlarms)
            #expect(listed.answeredAt.date == system.clock.now())
            try await eventually("the user hears of it") { try system.contactPushes() == ["safety.contact_declined"] }
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .noContact)

            // The same link again, either way: answered already, nothing changes.
            let again = try await system.answerLink(token, .decline)
            #expect(again.outcome == .linkAlreadyAnswered && again.state == .declined)
            let confirmAfter = try await system.answerLink(token, .confirm)
            #expect(confirmAfter.outcome == .linkAlreadyAnswered && confirmAfter.state == .declined)
            #expect(try await system.contactLink(token, .confirm).outcome == .linkAlreadyAnswered)
            #expect(try await system.contacts().first?.state == .declined)

            // Removed, and added again (in any case): refused.
            _ = try await system.service.removeContact(.with { $0.contactID = added.id }, callContext("mei"))
            let afterRemoval = try await system.contactLink(token, .decline)
            #expect(
                afterRemoval.outcome == .linkOk && afterRemoval.state == .declined,
                "a refusal outlives its contact"
            )
            #expect(try await system.contactLink(token, .confirm).outcome == .linkNotFound, "no one to confirm")
            await expectCode(.failedPrecondition) { _ = try await system.inviteContact("no@example.com") }
            await expectCode(.failedPrecondition) { _ = try await system.inviteContact(" NO@Example.com ") }
            #expect(try await system.contacts().isEmpty)
            try await system.settle()
            #expect(try system.mails(to: "no@example.com").count == 1, "never emailed again")
            #expect(try system.contactPushes() == ["safety.contact_declined"], "one push")

            // Another user may still ask them.
            try await system.profile("kai", name: "Kai Lin", contacts: [])
            #expect(try await system.inviteContact("no@example.com", user: "kai").state == .invited)
        }
    }

    @Test("opting out from an alarm email disarms the switch and cancels what is pending for them")
    func optOutFromAlarm() async throws {
        // The server keeps the alarm to the brother and never answers it: it stays under way
        // (pending) while he opts out from the link in it.
        let hanging = try await SMTPSink(arguments: ["--hang-for", "brother@example.com"])
        try await withSafetySystem(smtpPort: hanging.port) { system in
            let t0 = system.clock.now()
            try await system.profile(confirmedByEmail: false)
            try await system.settle()
            system.clock.set(t0 + 24 * self.hour)
            system.service.decider.wake()
            let alarmSubject = "Hearth Alert: Mei Chen hasn't checked in"
            try await eventually("the alarm is with the server") {
                try hanging.messages().contains { $0["subject"] as? String == alarmSubject }
            }
            let alarm = try hanging.messages().first { $0["subject"] as? String == alarmSubject } ?? [:]
            let body = try #require(alarm["body"] as? String)
            let raw = try #require(alarm["raw"] as? String)
            #expect(raw.contains(Self.listUnsubscribe) && raw.contains(Self.oneClick), "\(raw)")
            let token = try #require(SafetySystem.token(in: body, path: "/contact/opt-out?t="))
            let underWay = try await system.status()
            #expect(underWay.state == .expired && underWay.emails.map(\.state) == [.pending], "still under way")

            // An opt-out link opts out, and does nothing else.
            #expect(try await system.contactLink(token, .confirm).outcome == .linkNotFound)
            #expect(try await system.answerLink(token, .decline).outcome == .linkNotFound)
            let shown = try await system.contactLink(token, .optOut)
            #expect(shown.outcome == .linkOk && shown.state == .confirmed && shown.personName == "Mei Chen")
            let optedOut = try await system.answerLink(token, .optOut)
            #expect(optedOut.outcome == .linkOk && optedOut.state == .optedOut)
            let contact = try #require(try await system.contacts().first)
            #expect(contact.state == .optedOut && !contact.receivesAlarms)
            #expect(contact.answeredAt.date == t0 + 24 * self.hour)
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .noContact)
            #expect(status.emails.isEmpty, "the alarm under way to him is cancelled")
            try await eventually("the user hears of it") {
                try system.contactPushes().contains("safety.contact_opted_out")
            }
            hanging.stop()

            // Again: the page says so; nothing changes, no second push.
            let again = try await system.answerLink(token, .optOut)
            #expect(again.outcome == .linkOk && again.state == .optedOut)
            try await system.settle()
            #expect(try system.contactPushes().filter { $0 == "safety.contact_opted_out" }.count == 1)
            #expect(try await system.contacts().first?.answeredAt.date == t0 + 24 * self.hour)
            // Never invited again by her.
            let removed = try #require(try await system.contacts().first)
            _ = try await system.service.removeContact(.with { $0.contactID = removed.id }, callContext("mei"))
            await expectCode(.failedPrecondition) { _ = try await system.inviteContact("brother@example.com") }
        }
    }
}

// MARK: Helpers

extension SafetySystem {
    /// Adds a contact for `user` through the service (INVITED), as the call answered it.
    @discardableResult
    func inviteContact(_ email: String, name: String = "", user: String = "mei") async throws
        -> Hearth_Safety_V1_Contact
    {
        try await self.service.addContact(
            .with {
                $0.email = email
                $0.name = name
            },
            callContext(user)
        )
    }

    /// `user`'s contacts as ListContacts answers them.
    func contacts(_ user: String = "mei") async throws -> [Hearth_Safety_V1_Contact] {
        try await self.service.listContacts(.init(), callContext(user)).contacts
    }

    /// What the contact page's GET hears of a link.
    func contactLink(_ token: String, _ action: Hearth_Safety_V1_ContactAction) async throws
        -> Hearth_Safety_V1_ContactLink
    {
        try await self.service.getContactLink(
            .with {
                $0.token = token
                $0.action = action
            },
            callContext("contact-page")
        )
    }

    /// What the contact page's POST does with a link.
    func answerLink(_ token: String, _ action: Hearth_Safety_V1_ContactAction) async throws
        -> Hearth_Safety_V1_ContactLink
    {
        try await self.service.answerContactLink(
            .with {
                $0.token = token
                $0.action = action
            },
            callContext("contact-page")
        )
    }

    /// The messages the SMTP server received for `address`, invitations included, oldest first:
    /// `raw` is the whole message as it came, header fields included.
    func mails(to address: String) throws -> [(subject: String, body: String, raw: String)] {
        try self.sink.messages()
            .filter { ($0["rcpt_tos"] as? [String]) == [address] }
            .map { ($0["subject"] as? String ?? "", $0["body"] as? String ?? "", $0["raw"] as? String ?? "") }
    }
}
