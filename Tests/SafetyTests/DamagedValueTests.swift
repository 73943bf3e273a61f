import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPostgres
import HearthStore
import HearthTestSupport
import Logging
import PostgresNIO
import Testing

@testable import SafetyService

/// A sealed value that no longer opens (a damaged row: its bytes changed on disk) must cost the
/// message it belongs to at most, and never an alarm of anyone else: the decider and the senders
/// work in batches, and one value failing used to fail the whole batch, pass after pass.
@Suite("A damaged personal value holds back no other message", .timeLimit(.minutes(2)))
struct DamagedValueTests {
    let hour: TimeInterval = 3600

    @Test(
        "a name that does not open: the alarm goes out naming no one; an address: that alarm fails alone, with why",
        arguments: StoreKind.allCases
    )
    func decided(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile("ana", name: "Ana Lima", contacts: ["ana.friend@example.com"])
            try await system.profile("mei", name: "Mei Chen", contacts: ["mei.brother@example.com"])
            try await system.profile(
                "kai",
                name: "Kai Sato",
                contacts: ["kai.sister@example.com", "kai.friend@example.com"]
            )
            let t0 = system.clock.now()
            #expect(try await system.damage("profile", "name", where: "user_id = 'mei'") == 1)
            let sister = try #require(try await system.contactID("kai", email: "kai.sister@example.com"))
            // Her address's key id damaged: it reads as a key the file does not hold.
            #expect(try await system.damage("contact", "email", where: "id = '\(sister)'", at: 1) == 1)

            try await system.advance(to: t0 + 24 * self.hour)
            try await eventually("the three alarms that can go out") { try system.emails().count == 3 }
            let emails = try system.emails()
            #expect(
                Set(emails.map(\.to)) == [
                    "ana.friend@example.com", "mei.brother@example.com", "kai.friend@example.com",
                ]
            )
            let ana = try #require(emails.first { $0.to == "ana.friend@example.com" })
            #expect(ana.subject == "Hearth Alert: Ana Lima hasn't checked in")
            let mei = try #require(emails.first { $0.to == "mei.brother@example.com" })
            #expect(mei.subject == "Hearth Alert: this person hasn't checked in")
            #expect(mei.body.contains("\nThis person has not checked in since the switch was armed on"), "\(mei.body)")
            #expect(!mei.body.contains("Mei"), "\(mei.body)")
            // Its opt-out link works: the page and the answer need no name.
            let optOut = try #require(SafetySystem.token(in: mei.body, path: "/contact/opt-out?t="))
            let answered = try await system.answerLink(optOut, .optOut)
            #expect(answered.state == .optedOut && answered.personName == "this person")

            let kai = try await system.status("kai").emails.filter { $0.kind == "ALERT" }
            #expect(kai.count == 2)
            let failed = try #require(kai.first { $0.contactID == sister })
            #expect(failed.state == .failed)
            #expect(failed.lastError.contains("cannot be read"), "\(failed.lastError)")
            #expect(failed.email == "", "an address that does not open is not shown")
            #expect(kai.first { $0.contactID != sister }?.state == .sent)
            // Nothing is tried again, and the next pass finds nothing due.
            try await system.advance(to: t0 + 26 * self.hour)
            #expect(try system.emails().count == 3)
        }
    }

    @Test(
        "damaged names do not keep the switch from starting: a key passes when any value sealed under it opens",
        arguments: StoreKind.allCases
    )
    func starts(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile("ana", name: "Ana Lima", contacts: ["ana.friend@example.com"])
            try await system.profile("mei", name: "Mei Chen", contacts: ["mei.brother@example.com"])
            // Every name sealed under the key is damaged: its check must find the key elsewhere.
            #expect(try await system.damage("profile", "name", where: "user_id <> ''") == 2)
            try await system.restart()
            #expect(try await system.status("mei").state == .normal)
            // Key 1 under its id but another key (the index key kept): no value opens under it.
            let index = try DataKeys(file: system.keyFile).current.index.base64URLEncoded
            let impostor = "index \(index)\nkey 1 \(DataKeyRing.generate().sealing.bytes.base64URLEncoded)\n"
            try impostor.write(to: system.keyFile, atomically: true, encoding: .utf8)
            await #expect {
                try await system.restart()
            } throws: { error in
                (error as? DataKeysDoNotMatch)?.wrongKeys == [1]
            }
        }
    }

    @Test(
        "a pending alarm whose words do not open fails alone, with why; the others are sent",
        arguments: StoreKind.allCases
    )
    func pending(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile("ana", name: "Ana Lima", contacts: ["ana.friend@example.com"])
            try await system.profile("mei", name: "Mei Chen", contacts: ["mei.brother@example.com"])
            let t0 = system.clock.now()
            var (decided, damaged) = (0, 0)
            // The alarms decided while no sender runs (on PostgreSQL, by another process's store).
            try await system.whileStopped { service in
                system.clock.set(t0 + 24 * self.hour)
                try await system.withStore { store in
                    decided = try await store.decideDue(now: system.clock.now(), limit: 100)
                    damaged = try await system.damage(
                        "alert",
                        "body",
                        where: "user_id = 'ana' AND kind = 'alert'",
                        in: store
                    )
                }
            }
            #expect(decided == 2 && damaged == 1)
            try await system.settle()
            try await eventually("mei's alarm") { try system.emails().count == 1 }
            #expect(try system.emails().map(\.to) == ["mei.brother@example.com"])
            try await eventually("ana's alarm has failed") {
                try await system.status("ana").emails.first { $0.kind == "ALERT" }?.state == .failed
            }
            let failed = try #require(try await system.status("ana").emails.first { $0.kind == "ALERT" })
            #expect(failed.email == "ana.friend@example.com", "her contact's address is intact")
            #expect(failed.lastError.contains("cannot be read"), "\(failed.lastError)")
            #expect(failed.attempts == 1)
        }
    }
}

@Suite("Words that name no one, where a name cannot be read", .timeLimit(.minutes(1)))
struct UnnamedTextsTests {
    @Test("the person, to a contact, and a contact, to the user, in every language")
    func unnamed() {
        let expected = [
            "en": ("Hearth Alert: this person hasn't checked in", "A contact you added confirmed"),
            "zh-Hans": ("Hearth 警报：对方 尚未报平安", "您添加的一位联系人 已确认"),
            "zh-Hant": ("Hearth 警報：對方 尚未報平安", "您新增的一位聯絡人 已確認"),
        ]
        for (language, (subject, push)) in expected {
            let texts = AlertTexts(language: language, name: " ", timeZone: .gmt, product: "Hearth")
            let alarm = texts.alertEmail(
                contactName: "",
                lastCheckIn: nil,
                armedAt: Date(timeIntervalSince1970: 0),
                now: .now
            )
            #expect(alarm.subject == subject)
            #expect(texts.contactPush(.confirmed, contact: "").body.hasPrefix(push), "\(language)")
            #expect(!texts.graceEndedPush(contact: "").body.hasPrefix(" "), "\(language)")
        }
    }
}

extension SafetySystem {
    /// Changes a byte of `column` (the last, or the one `at` names) in the rows of `table` that
    /// `condition` selects, as damage on disk would: a sealed value there no longer opens (byte
    /// 1 is its key id's first). Answers how many rows changed.
    func damage(
        _ table: String,
        _ column: String,
        where condition: String,
        at offset: Int? = nil,
        in store: (any SafetyPersistence)? = nil
    ) async throws -> Int {
        let store = store ?? self.service.store
        let position = offset.map(String.init) ?? "length(\(column)) - 1"
        if let postgres = store as? PostgresSafetyStore {
            return try await postgres.database.transaction { db in
                try await db.count(
                    """
                    UPDATE \(unescaped: table)
                    SET \(unescaped: column) = set_byte(\(unescaped: column), \(unescaped: position),
                        get_byte(\(unescaped: column), \(unescaped: position)) # 1)
                    WHERE \(unescaped: condition) RETURNING 1
                    """
                )
            }
        }
        return try await self.service.fileStore.base.writer.write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT rowid, \(column) FROM \(table) WHERE \(condition)")
            for row in rows {
                var value: Data = row[1]
                value[offset ?? value.count - 1] ^= 1
                try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE rowid = ?", arguments: [value, row[0]])
            }
            return rows.count
        }
    }

    /// Runs `body` on the store while the service is stopped: its SQLite file, or, on
    /// PostgreSQL (whose pool stops with the service), a store of another process's.
    func withStore(_ body: (any SafetyPersistence) async throws -> Void) async throws {
        guard let postgres else { return try await body(self.service.store) }
        let store = try await PostgresSafetyStore.open(
            postgres.location,
            keys: try DataKeys(file: self.keyFile),
            clock: self.clock,
            logger: Logger(label: "another-process")
        )
        try await whileServing(store) { try await body(store) }
    }

    /// The id of `user`'s contact at `email`, as their listing shows it.
    func contactID(_ user: String, email: String) async throws -> String? {
        try await self.service.listContacts(.init(), callContext(user)).contacts.first { $0.email == email }?.id
    }
}
