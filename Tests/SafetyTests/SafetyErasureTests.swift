import Foundation
import GRDB
import HearthCore
import HearthStore
import Testing

@testable import SafetyService

@Suite("Safety's part of an erasure")
struct SafetyErasureTests {
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    @Test("an erasure leaves nothing of the user but what their contacts answered them")
    func erasure() async throws {
        let store = try SafetyStore(location: .inMemory, keys: .random(), clock: ManualClock(Self.t0))
        _ = try await store.upsertProfile("mei") { $0.name = "Mei" }
        _ = try await store.upsertProfile("kai") { $0.name = "Kai" }
        _ = try await store.addContact("mei", email: "zeb@example.net", name: "Zeb")
        _ = try await store.addContact("kai", email: "zeb@example.net", name: "Zeb")
        // Each invitation goes out (its links minted); then Zeb declines Mei.
        #expect(try await store.claimDue(.email, now: Self.t0, limit: 10, lease: 60).count == 2)
        try await store.base.write { db in
            try store.remember(.declined, of: "mei", addressKey: store.keys.addressKey("zeb@example.net"), in: db)
        }
        let tables = ["profile", "contact", "heartbeat", "alert", "contact_token", "invitation_sent"]
        func rows(of user: String) throws -> [String: Int] {
            try store.base.read { db in
                try Dictionary(
                    uniqueKeysWithValues: (tables + ["contact_address"]).map { table in
                        (
                            table,
                            try Int.fetchOne(
                                db,
                                sql: "SELECT COUNT(*) FROM \(table) WHERE user_id = ?",
                                arguments: [user]
                            ) ?? 0
                        )
                    }
                )
            }
        }
        let before = try rows(of: "mei")
        let kai = try rows(of: "kai")

        let deleted = try await store.eraseUser("mei")
        #expect(deleted == tables.map { before[$0] ?? 0 }.reduce(0, +))
        #expect(deleted >= 6, "\(before)")
        let after = try rows(of: "mei")
        #expect(tables.allSatisfy { after[$0] == 0 }, "\(after)")
        #expect(after["contact_address"] == 1, "the decline is kept")
        #expect(try rows(of: "kai") == kai)
        #expect(try await store.eraseUser("mei") == 0)

        // Signing up again: Zeb's decline still holds for Mei.
        _ = try await store.upsertProfile("mei") { $0.name = "Mei" }
        guard
            case .refused(.refusedBefore(.declined)) = try await store.addContact(
                "mei",
                email: "ZEB@example.net",
                name: ""
            )
        else {
            Issue.record("a contact who declined was invited again after the user's erasure")
            return
        }
    }
}
