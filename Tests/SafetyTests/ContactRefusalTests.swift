import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// A refusal and the invitations counted stay with the user and address: past the contact's
/// removal and the account's deletion.
@Suite("Contact refusals", .timeLimit(.minutes(2)), .serialized)
struct ContactRefusalTests {
    @Test(
        "a contact removed before answering can still decline or opt out from the links they hold",
        arguments: StoreKind.allCases
    )
    func removedThenDeclined(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            for address in ["x@example.com", "y@example.com"] {
                let added = try await system.inviteContact(address)
                try await system.settle()
                try await eventually("the invitation to \(address)") { try system.mails(to: address).count == 1 }
                _ = try await system.service.removeContact(.with { $0.contactID = added.id }, callContext("mei"))
            }
            let xBody = try system.mails(to: "x@example.com")[0].body
            let decline = try #require(SafetySystem.token(in: xBody, path: "/contact/decline?t="))
            let declined = try await system.answerLink(decline, .decline)
            #expect(declined.outcome == .linkOk && declined.state == .declined && declined.personName == "Mei Chen")
            let yBody = try system.mails(to: "y@example.com")[0].body
            let optOut = try #require(SafetySystem.token(in: yBody, path: "/contact/opt-out?t="))
            #expect(try await system.answerLink(optOut, .optOut).state == .optedOut)
            let confirm = try #require(SafetySystem.token(in: yBody, path: "/contact/confirm?t="))
            #expect(try await system.answerLink(confirm, .confirm).outcome == .linkNotFound)
            for address in ["x@example.com", "y@example.com"] {
                await expectCode(.failedPrecondition) { _ = try await system.inviteContact(address) }
            }
            #expect(try system.contactPushes().isEmpty, "the user removed them: no news")
        }
    }

    @Test("deleting the account forgets no refusal and no invitation counted", arguments: StoreKind.allCases)
    func deletedAccountRemembers(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            try await system.inviteContact("no@example.com")
            try await system.inviteContact("maybe@example.com")
            try await system.settle()
            try await eventually("the invitations") { try system.mails(to: "maybe@example.com").count == 1 }
            let body = try #require(try system.mails(to: "no@example.com").first?.body)
            let decline = try #require(SafetySystem.token(in: body, path: "/contact/decline?t="))
            #expect(try await system.answerLink(decline, .decline).state == .declined)

            _ = try await system.service.deleteAccount(.init(), callContext("mei"))
            try await system.profile(contacts: [])
            await expectCode(.failedPrecondition) { _ = try await system.inviteContact("no@example.com") }
            #expect(try await system.inviteContact("maybe@example.com").invitationsSent == 2)
        }
    }
}
