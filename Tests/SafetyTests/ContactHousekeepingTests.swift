import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// What contacts leave behind, pruned: links that can no longer act (`contact_token`), and what
/// an address answered once nothing needs it (`contact_address`), never a refusal. On a real
/// SQLite file with the injected clock, at the boundaries to the millisecond; then through the
/// service's hourly housekeeping.
@Suite(
    "Contact housekeeping: spent links and unused addresses pruned",
    .timeLimit(.minutes(2)),
    .serialized
)
struct ContactHousekeepingTests {
    /// 2026-01-01 00:00 UTC.
    let t0 = Date(timeIntervalSince1970: 1_767_225_600)
    let ms: TimeInterval = 0.001
    let hour: TimeInterval = 3600
    let day: TimeInterval = 86_400
    let week = ContactConsent.invitationLifetime

    @Test(
        "Confirm and Decline links go 30 days after their invitation ended; a removed contact's opt-out link works 30 days after the removal, then goes; a contact's own opt-out links never"
    )
    func spentLinks() async throws {
        let file = try TemporaryStoreFile()
        let clock = ManualClock(self.t0)
        let store = try SafetyStore(location: file.location, keys: .random(), clock: clock)
        try await Self.profile("mei", in: store)
        // a never answers, b is removed an hour in, c confirms at once.
        let links = try await Self.invite(["a@example.com", "b@example.com", "c@example.com"], of: "mei", in: store)
        let a = try Self.links(links, "a@example.com")
        let b = try Self.links(links, "b@example.com")
        let c = try Self.links(links, "c@example.com")
        let aAnswer = try #require(a.answer)
        let bAnswer = try #require(b.answer)
        let cAnswer = try #require(c.answer)
        #expect(try await store.answer(cAnswer, .confirm).view.state == .confirmed)
        clock.set(self.t0 + self.hour)
        let removed = try #require(try await store.contacts("mei").first { $0.email == "b@example.com" })
        #expect(try await store.removeContact("mei", id: removed.id))
        #expect(try await Self.tokens(in: store) == 6)

        // The removed contact's opt-out link: to its last millisecond, then nothing.
        let removedEnd = self.t0 + self.hour + 30 * self.day
        clock.set(removedEnd - self.ms)
        #expect(try await store.pruneContactLinks(now: clock.now(), rowsPerTransaction: 1) == 0)
        let stillWorks = LinkView(check: .usable, personName: "Mei Chen", language: "en", state: .optedOut)
        #expect(try await store.link(b.optOut, for: .optOut) == stillWorks)
        clock.set(removedEnd)
        #expect(try await store.link(b.optOut, for: .optOut).check == .notFound)
        #expect(try await store.answer(b.optOut, .optOut).view.check == .notFound)
        #expect(try await store.pruneContactLinks(now: clock.now(), rowsPerTransaction: 1) == 1)
        #expect(try await Self.tokens(in: store) == 5)

        // The invitations' links: 30 days after they ended, answered or not, removed or not.
        let spentEnd = self.t0 + self.week + 30 * self.day
        clock.set(spentEnd)
        #expect(try await store.pruneContactLinks(now: clock.now(), rowsPerTransaction: 1) == 0)
        #expect(try await store.link(aAnswer, for: .confirm).check == .expired, "the page can still say so")
        #expect(try await store.link(bAnswer, for: .decline).check == .expired)
        #expect(try await store.link(cAnswer, for: .confirm).check == .alreadyAnswered)
        clock.set(spentEnd + self.ms)
        // One a transaction: each of the three in its own.
        #expect(try await store.pruneContactLinks(now: clock.now(), rowsPerTransaction: 1) == 3)
        for token in [aAnswer, bAnswer, cAnswer] {
            #expect(try await store.link(token, for: .confirm).check == .notFound)
        }

        // A contact's own opt-out links (the one-click unsubscribe of every email sent) stay.
        clock.set(self.t0 + 1000 * self.day)
        #expect(try await store.pruneContactLinks(now: clock.now()) == 0)
        #expect(try await Self.tokens(in: store) == 2)
        #expect(try await store.link(a.optOut, for: .optOut).state == .invited)
        #expect(try await store.link(c.optOut, for: .optOut).state == .confirmed)
        #expect(try await store.answer(a.optOut, .optOut).view.state == .optedOut, "and still works")
    }

    @Test(
        "what an address answered goes 90 days after its last invitation once no contact has it and it refused nothing; a refusal, even after an erasure, and a contact's stay"
    )
    func unusedAddresses() async throws {
        let file = try TemporaryStoreFile()
        let clock = ManualClock(self.t0)
        let store = try SafetyStore(location: file.location, keys: .random(), clock: clock)
        for user in ["mei", "kai", "ann"] { try await Self.profile(user, in: store) }
        // Mei: x removed an hour in, y stays her contact, z declines and is removed.
        let mei = try await Self.invite(["x@example.com", "y@example.com", "z@example.com"], of: "mei", in: store)
        let zDecline = try #require(try Self.links(mei, "z@example.com").answer)
        #expect(try await store.answer(zDecline, .decline).view.state == .declined)
        // Ann: q never answers, r declines; then her account is erased.
        let ann = try await Self.invite(["q@example.com", "r@example.com"], of: "ann", in: store)
        let rDecline = try #require(try Self.links(ann, "r@example.com").answer)
        #expect(try await store.answer(rDecline, .decline).view.state == .declined)
        _ = try await store.eraseUser("ann")
        clock.set(self.t0 + self.hour)
        for address in ["x@example.com", "z@example.com"] {
            let contact = try #require(try await store.contacts("mei").first { (try? $0.email.open()) == address })
            #expect(try await store.removeContact("mei", id: contact.id))
        }
        // Kai invites x ten days later, and removes it.
        clock.set(self.t0 + 10 * self.day)
        _ = try await Self.invite(["x@example.com"], of: "kai", in: store)
        let kaiX = try #require(try await store.contacts("kai").first)
        #expect(try await store.removeContact("kai", id: kaiX.id))
        let all = ["ann q", "ann r", "kai x", "mei x", "mei y", "mei z"]
        #expect(try await Self.addresses(in: store) == all)

        let meiEnd = self.t0 + 90 * self.day
        #expect(try await store.pruneContactAddresses(now: meiEnd, rowsPerTransaction: 1) == 0)
        #expect(try await store.pruneContactAddresses(now: meiEnd + self.ms, rowsPerTransaction: 1) == 2)
        #expect(try await Self.addresses(in: store) == ["ann r", "kai x", "mei y", "mei z"])
        let kaiEnd = self.t0 + 100 * self.day
        #expect(try await store.pruneContactAddresses(now: kaiEnd) == 0)
        #expect(try await store.pruneContactAddresses(now: kaiEnd + self.ms) == 1)
        #expect(try await store.pruneContactAddresses(now: self.t0 + 1000 * self.day) == 0)
        #expect(try await Self.addresses(in: store) == ["ann r", "mei y", "mei z"])

        // What that changes: x's invitations are counted from the start again; the refusals hold.
        clock.set(self.t0 + 1000 * self.day)
        guard case .added(let again) = try await store.addContact("mei", email: "x@example.com", name: "") else {
            Issue.record("x was not invited again")
            return
        }
        #expect(again.invitationsSent == 1)
        guard
            case .refused(.refusedBefore(.declined)) = try await store.addContact(
                "mei",
                email: "z@example.com",
                name: ""
            )
        else {
            Issue.record("z, who declined, was invited again")
            return
        }
        try await Self.profile("ann", in: store)
        guard
            case .refused(.refusedBefore(.declined)) = try await store.addContact(
                "ann",
                email: "r@example.com",
                name: ""
            )
        else {
            Issue.record("r, who declined before Ann's erasure, was invited again")
            return
        }
    }

    @Test("the hourly housekeeping prunes them: a removed contact's links, then what their address answered")
    func housekeeping() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            try await system.profile(contacts: [])
            let added = try await system.inviteContact("x@example.com")
            try await system.settle()
            try await eventually("the invitation") { try system.mails(to: "x@example.com").count == 1 }
            let body = try system.mails(to: "x@example.com")[0].body
            let optOut = try #require(SafetySystem.token(in: body, path: "/contact/opt-out?t="))
            _ = try await system.service.removeContact(.with { $0.contactID = added.id }, callContext("mei"))
            #expect(try await system.contactLink(optOut, .optOut).outcome == .linkOk)
            let store = system.service.fileStore
            #expect(try await Self.tokens(in: store) == 2)
            #expect(try await Self.addresses(in: store) == ["mei x"])

            try await system.advance(to: t0 + 30 * 86_400 + 3600)
            #expect(try await system.contactLink(optOut, .optOut).outcome == .linkNotFound)
            #expect(try await Self.tokens(in: store) == 1, "the opt-out link went; the Decline link waits")
            try await system.advance(to: t0 + 91 * 86_400)
            #expect(try await Self.tokens(in: store) == 0)
            #expect(try await Self.addresses(in: store).isEmpty)
            #expect(try await system.inviteContact("x@example.com").invitationsSent == 1)
        }
    }

    // MARK: Helpers

    static func profile(_ user: String, in store: SafetyStore) async throws {
        _ = try await store.upsertProfile(user) { profile in
            profile.name = "Mei Chen"
            profile.email = "\(user)@example.com"
        }
    }

    /// Adds `emails` as `user`'s contacts and sends their invitations as a sender does (claimed,
    /// then recorded as sent): the links each carried, by address.
    static func invite(_ emails: [String], of user: String, in store: SafetyStore) async throws
        -> [String: ContactLinks]
    {
        for email in emails {
            guard case .added = try await store.addContact(user, email: email, name: "") else {
                throw ContactNotAdded(email: email)
            }
        }
        var links: [String: ContactLinks] = [:]
        for claim in try await store.claimDue(.email, now: store.now, limit: 100, lease: 60) {
            try await store.record(
                claim.claim,
                attempt: .success(""),
                now: store.now
            )
            links[try claim.alert.address.open()] = claim.links
        }
        return links
    }

    static func links(_ links: [String: ContactLinks], _ address: String) throws -> ContactLinks {
        try #require(links[address], "no invitation to \(address)")
    }

    static func tokens(in store: SafetyStore) async throws -> Int {
        try await store.base.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contact_token") ?? -1
        }
    }

    /// The `contact_address` rows, as "user address" (the address's local part), sorted.
    static func addresses(in store: SafetyStore) async throws -> [String] {
        let names = Dictionary(
            uniqueKeysWithValues: "qrxyz".map { (store.keys.addressKey("\($0)@example.com"), String($0)) }
        )
        return try await store.base.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, address_key FROM contact_address").map { row in
                "\(row["user_id"] as String) \(names[row["address_key"] as String] ?? "?")"
            }
        }.sorted()
    }
}
