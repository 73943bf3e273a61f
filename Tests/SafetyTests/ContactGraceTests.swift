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

/// Contacts stored before invitations existed (migration v6) keep receiving alarms while their
/// first invitation is open; when that week ends unanswered the user is told, once, by push,
/// through the service with a real SMTP server and webhook, on the injected clock.
@Suite(
    "Contact graces: the user told when a contact from before invitations did not confirm",
    .timeLimit(.minutes(2)),
    .serialized
)
struct ContactGraceTests {
    let hour: TimeInterval = 3600
    let day: TimeInterval = 86_400
    let week = ContactConsent.invitationLifetime

    @Test(
        "at the end of the week, to the second, the user of a contact who never answered is told once, in their language; not one whose contact confirmed, declined or was removed"
    )
    func toldOnce() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            let users: [(id: String, name: String, language: String, contact: String)] = [
                ("mei", "Mei Chen", "en", "brother@example.com"),
                ("wen", "陳小文", "zh-Hant", "a@example.com"),
                ("kai", "Kai Lin", "en", "friend@example.com"),
                ("lea", "Lea Park", "en", "aunt@example.com"),
                ("ann", "Ann Wu", "en", "cousin@example.com"),
            ]
            for user in users {
                try await system.profile(
                    user.id,
                    name: user.name,
                    language: user.language,
                    contacts: [user.contact],
                    confirmedByEmail: false
                )
            }
            let startedAt = t0 + self.hour
            try await system.storeContactsAsBeforeInvitations(restartingAt: startedAt)
            try await eventually("an invitation to each") { try system.invitationTokens().count == users.count }

            // In the week: Kai's friend confirms, Lea's aunt declines, Ann removes her cousin.
            let friend = try #require(try system.mails(to: "friend@example.com").last)
            let confirm = try #require(SafetySystem.token(in: friend.body, path: "/contact/confirm?t="))
            #expect(try await system.answerLink(confirm, .confirm).state == .confirmed)
            let aunt = try #require(try system.mails(to: "aunt@example.com").last)
            let decline = try #require(SafetySystem.token(in: aunt.body, path: "/contact/decline?t="))
            #expect(try await system.answerLink(decline, .decline).state == .declined)
            try await system.advance(to: startedAt + self.day)
            let cousin = try #require(try await system.contacts("ann").first)
            _ = try await system.service.removeContact(.with { $0.contactID = cousin.id }, callContext("ann"))

            try await system.advance(to: startedAt + self.week - 1)
            #expect(try system.graceEndedPushes().isEmpty, "not before the week ends")
            #expect(try await system.contacts("mei").first?.receivesAlarms == true)
            try await system.advance(to: startedAt + self.week)
            try await eventually("Mei and Wen are told") { try system.graceEndedPushes().count == 2 }
            let told = try system.graceEndedPushes()
            #expect(told.map(\.user).sorted() == ["mei", "wen"])
            for push in told {
                let user = try #require(users.first { $0.id == push.user })
                let texts = AlertTexts(language: user.language, name: user.name, timeZone: .gmt, product: "Hearth")
                    .graceEndedPush(contact: user.contact)
                #expect(push.title == texts.title && push.body == texts.body, "\(push)")
            }
            let mei = try await system.status("mei")
            #expect(mei.state == .notArmed && mei.notArmedReason == .invitationExpired, "as GetStatus says")
            #expect(try await system.contacts("mei").first?.receivesAlarms == false)

            // Once: later passes, a restart and weeks more tell nothing again.
            try await system.restart()
            try await system.advance(to: startedAt + 3 * self.week)
            #expect(try system.graceEndedPushes().count == 2)
            // The invitation can go again (the push says so), and a confirmation arms the switch.
            let brother = try #require(try await system.contacts("mei").first)
            let resent = try await system.service.resendInvitation(
                .with { $0.contactID = brother.id },
                callContext("mei")
            )
            #expect(resent.state == .invited && !resent.receivesAlarms)
        }
    }

    @Test("a week that ended while safety was down is told at its next start, once")
    func toldAfterRestart() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            try await system.profile("mei", contacts: ["brother@example.com"], confirmedByEmail: false)
            let startedAt = t0 + self.hour
            try await system.storeContactsAsBeforeInvitations(restartingAt: startedAt)
            try await eventually("the invitation") { try system.invitationTokens().count == 1 }
            try await system.advance(to: startedAt + self.week - 1)
            #expect(try system.graceEndedPushes().isEmpty)

            // Down from before the end until a day after it.
            try await system.restart { system.clock.set(startedAt + self.week + self.day) }
            try await system.settle()
            try await eventually("Mei is told") { try system.graceEndedPushes().count == 1 }
            #expect(try system.graceEndedPushes().map(\.user) == ["mei"])
            try await system.restart()
            try await system.advance(to: startedAt + 2 * self.week)
            #expect(try system.graceEndedPushes().count == 1, "once")
        }
    }
}

extension SafetySystem {
    /// Makes every contact as version 5 left it (a contact without a state, never invited,
    /// nothing remembered of it), then starts safety again at `startedAt`, which invites them
    /// (``SafetyStore/inviteContactsStoredBefore()``) with a week's grace.
    func storeContactsAsBeforeInvitations(restartingAt startedAt: Date) async throws {
        try await self.storeContactsAsBeforeInvitations()
        try await self.restart { self.clock.set(startedAt) }
        try await self.settle()
    }

    /// Makes every contact as version 5 left it, in the store only.
    func storeContactsAsBeforeInvitations() async throws {
        try await self.settle()
        try await self.service.fileStore.base.writer.write { db in
            try db.execute(
                sql: """
                    UPDATE contact SET state = 'invited', invitations_sent = 0, invited_at = NULL,
                        invitation_expires_at = NULL, answered_at = NULL, alarms_until = NULL;
                    DELETE FROM alert WHERE kind = 'invitation' OR kind LIKE 'contact_%';
                    DELETE FROM contact_token;
                    DELETE FROM contact_address;
                    DELETE FROM invitation_sent;
                    """
            )
        }
    }

    /// The pushes telling a user that a contact's grace ended, as the webhook received them.
    func graceEndedPushes() throws -> [(user: String, title: String, body: String)] {
        try self.webhook.received.compactMap { request in
            guard let json = try JSONSerialization.jsonObject(with: request.body) as? [String: Any],
                json["kind"] as? String == "safety.\(MessageKind.graceEnded)"
            else { return nil }
            return (json["userID"] as? String ?? "", json["title"] as? String ?? "", json["body"] as? String ?? "")
        }
    }
}
