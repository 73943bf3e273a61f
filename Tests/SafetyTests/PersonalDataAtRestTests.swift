import Foundation
import GRDB
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@testable import SafetyService

/// Names and addresses never reach the SQLite file, its WAL or its shared memory in clear.
@Suite("Personal data at rest")
struct PersonalDataAtRestTests {
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)
    /// Written by the tests, looked for in every byte of the files.
    static let personal = [
        "Marguerite Okonkwo", "marguerite.okonkwo@example.org", "Zebulon Haversham", "zebulon.haversham@example.net",
        "Ottoline Brisbane", "declined.person@example.com",
    ]

    /// The texts of `personal` found in the store's files (the database, its WAL and shared
    /// memory), in any case.
    static func clearTexts(in file: TemporaryStoreFile) throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(atPath: file.folder.path)
            .filter { $0.hasPrefix("safety.sqlite") }
            .map { try Data(contentsOf: file.folder.appendingPathComponent($0)).map(Self.lowercased) }
        return Self.personal.filter { text in
            let needle = Data(text.utf8.map(Self.lowercased))
            return files.contains { Data($0).range(of: needle) != nil }
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }

    @Test("a profile, contacts, an invitation and a test written through the store are nowhere in clear")
    func sealedWhenWritten() async throws {
        let file = try TemporaryStoreFile()
        let keys = DataKeys.random()
        let store = try SafetyStore(location: file.location, keys: keys, clock: ManualClock(Self.t0))
        _ = try await store.upsertProfile("mei") { profile in
            profile.name = "Marguerite Okonkwo"
            profile.email = "marguerite.okonkwo@example.org"
        }
        guard
            case .added(let contact) = try await store.addContact(
                "mei",
                email: "Zebulon.Haversham@example.net",
                name: "Zebulon Haversham"
            )
        else {
            Issue.record("the contact was not added")
            return
        }
        _ = try await store.addContact("mei", email: "declined.person@example.com", name: "Ottoline Brisbane")
        #expect(
            try await store.enqueueTest(
                "mei",
                channel: .email,
                address: "marguerite.okonkwo@example.org",
                subject: "Marguerite Okonkwo: a test",
                body: "Hello Marguerite Okonkwo"
            ) == nil
        )
        #expect(try Self.clearTexts(in: file) == [])
        #expect(FileManager.default.fileExists(atPath: file.path + "-wal"), "the WAL was read too")

        // Everything reads back, through the keys.
        let read = try await store.contacts("mei")
        #expect(
            Set(try read.map { try $0.email.open() }) == [
                "Zebulon.Haversham@example.net", "declined.person@example.com",
            ]
        )
        let zebulon = try #require(read.first { $0.id == contact.id })
        #expect(zebulon.name == "Zebulon Haversham" && zebulon.email == "Zebulon.Haversham@example.net")
        #expect(zebulon.emailKey == keys.addressKey("zebulon.haversham@example.net"))
        #expect(try await store.profile("mei")?.name == "Marguerite Okonkwo")
        let claimed = try await store.claimDue(.email, now: Self.t0, limit: 10, lease: 60)
        #expect(claimed.count == 3)
        #expect(try claimed.contains { try $0.alert.address.open() == "Zebulon.Haversham@example.net" })
        #expect(try claimed.allSatisfy { try $0.alert.body.open().contains("Marguerite Okonkwo") })
    }

    @Test("the name and email are opened only where they are used: a status and a check-in never need them")
    func openedWhereUsed() async throws {
        let file = try TemporaryStoreFile()
        let store = try SafetyStore(location: file.location, keys: .random(), clock: ManualClock(Self.t0))
        _ = try await store.upsertProfile("mei") { profile in
            profile.name = "Marguerite Okonkwo"
            profile.email = "marguerite.okonkwo@example.org"
        }
        // The name's last byte changed on disk: it no longer opens.
        _ = try await store.base.write { db in
            var name = try #require(try Data.fetchOne(db, sql: "SELECT name FROM profile WHERE user_id = 'mei'"))
            name[name.count - 1] ^= 1
            try db.execute(sql: "UPDATE profile SET name = ? WHERE user_id = 'mei'", arguments: [name])
        }
        #expect(try await store.status("mei") != nil)
        _ = try await store.recordHeartbeat(
            "mei",
            timeZone: nil,
            deviceInfo: "",
            requestID: "r1",
            source: "app",
            occurredAt: nil
        )
        let profile = try #require(try await store.profile("mei"))
        #expect(profile.lastCheckInAt == Self.t0)
        #expect(try profile.email.open() == "marguerite.okonkwo@example.org")
        #expect(throws: SealedValueUnreadable.self) { try profile.name.open() }
    }

    @Test("a status reads its period's messages without their sealed words")
    func statusWithoutWords() async throws {
        let clock = ManualClock(Self.t0)
        let store = try SafetyStore(location: .inMemory, keys: .random(), clock: clock)
        _ = try await store.upsertProfile("mei") { profile in
            profile.name = "Marguerite Okonkwo"
            profile.email = "marguerite.okonkwo@example.org"
        }
        try await store.addConfirmedContact("mei", email: "zebulon.haversham@example.net")
        _ = try await store.recordHeartbeat("mei", timeZone: nil, deviceInfo: "", requestID: "r1", source: "app")
        clock.advance(by: 25 * 3600)
        _ = try await store.decideDue(now: clock.now(), limit: 10)
        // The pending alarm's words, as stored, no longer open.
        let forged = try await store.base.write { db in
            try db.execute(
                sql: "UPDATE alert SET subject = x'01000000010000' WHERE kind = 'alert' AND state = 'pending'"
            )
            return db.changesCount
        }
        #expect(forged == 1)
        let status = try #require(try await store.status("mei"))
        #expect(status.alerts.contains { $0.kind == AlertRecord.Kind.alert && $0.state == .pending })
        #expect(status.addresses.values.contains("zebulon.haversham@example.net"))
    }

    @Test("a sent or cancelled message keeps neither its address nor its words")
    func forgottenOnceSent() async throws {
        let file = try TemporaryStoreFile()
        let store = try SafetyStore(location: file.location, keys: .random(), clock: ManualClock(Self.t0))
        _ = try await store.upsertProfile("mei") { $0.name = "Marguerite Okonkwo" }
        _ = try await store.addContact("mei", email: "zebulon.haversham@example.net", name: "Zebulon Haversham")
        let claimed = try #require(try await store.claimDue(.email, now: Self.t0, limit: 10, lease: 60).first)
        try await store.record(claimed.claim, attempt: .success(""), now: Self.t0)
        let row = try #require(
            try store.base.read { db in
                try Row.fetchOne(db, sql: "SELECT address, subject, body, address_key, state FROM alert")
            }
        )
        #expect(row["state"] as String == "sent")
        #expect((row["address"] as Data).isEmpty && (row["subject"] as Data).isEmpty && (row["body"] as Data).isEmpty)
        #expect(row["address_key"] as String == store.keys.addressKey("zebulon.haversham@example.net"))
    }

    @Test("a store from before sealing is sealed at its first open, and no copy in clear is left")
    func legacyStoreSealed() async throws {
        let file = try TemporaryStoreFile()
        let keys = DataKeys.random()
        try Self.writeVersion6Store(at: file.path)
        #expect(try Self.clearTexts(in: file).count == Self.personal.count, "the old file holds them all")

        let clock = ManualClock(Self.t0 + 3600)
        let store = try SafetyStore(location: file.location, keys: keys, clock: clock)
        #expect(try Self.clearTexts(in: file) == [])
        let contacts = try await store.contacts("mei")
        #expect(contacts.map(\.email) == ["zebulon.haversham@example.net"])
        #expect(contacts.map(\.name) == ["Zebulon Haversham"])
        #expect(try await store.profile("mei")?.email == "marguerite.okonkwo@example.org")
        // The pending invitation is still sent, as it was written.
        let claimed = try await store.claimDue(.email, now: clock.now(), limit: 10, lease: 60)
        #expect(claimed.map(\.alert.address) == ["zebulon.haversham@example.net"])
        #expect(claimed.first?.alert.body == "Dear Zebulon Haversham, Marguerite Okonkwo asks")
        // The refusal kept for an address before still holds: its key was hashed as the contacts' were.
        guard
            case .refused(.refusedBefore(.declined)) = try await store.addContact(
                "mei",
                email: "Declined.Person@example.com",
                name: ""
            )
        else {
            Issue.record("a declined address was invited again after the migration")
            return
        }
        // Opened again: nothing left to rebuild.
        let reopened = try SafetyStore(location: file.location, keys: keys, clock: clock)
        #expect(try await reopened.contacts("mei").count == 1)
    }

    @Test("a key file that is not the store's is refused at open, naming what is wrong")
    func otherKeysRefused() async throws {
        let file = try TemporaryStoreFile()
        let keys = DataKeys.random()
        do {
            let store = try SafetyStore(location: file.location, keys: keys, clock: ManualClock(Self.t0))
            _ = try await store.upsertProfile("mei") { $0.name = "Marguerite Okonkwo" }
        }
        #expect {
            _ = try SafetyStore(location: file.location, keys: .random(), clock: ManualClock(Self.t0))
        } throws: { error in
            (error as? DataKeysDoNotMatch)?.indexKey == true
        }
        // The same index key, but key 1 retired: the profile's name is sealed with it.
        let retired = DataKeys(ring: keys.current.addingKey().retiringOldKeys())
        #expect {
            _ = try SafetyStore(location: file.location, keys: retired, clock: ManualClock(Self.t0))
        } throws: { error in
            (error as? DataKeysDoNotMatch)?.missingKeys == [1]
        }
        // Key 1 under its id, but another key: nothing it sealed would open.
        let impostor = try DataKeyRing(
            parsing: "index \(keys.current.index.base64URLEncoded)\n"
                + "key 1 \(DataKeyRing.generate().sealing.bytes.base64URLEncoded)\n",
            source: "test"
        )
        #expect {
            _ = try SafetyStore(location: file.location, keys: DataKeys(ring: impostor), clock: ManualClock(Self.t0))
        } throws: { error in
            (error as? DataKeysDoNotMatch)?.wrongKeys == [1]
        }
        // With both keys it opens, and the rotation leaves only key 2 in use.
        let both = DataKeys(ring: keys.current.addingKey())
        let store = try SafetyStore(location: file.location, keys: both, clock: ManualClock(Self.t0))
        #expect(try Self.keyIDsInUse(store) == [1])
        #expect(try await store.resealAll(batch: 1) == 2, "the name and the (empty) email")
        #expect(try Self.keyIDsInUse(store) == [2])
        #expect(try await store.profile("mei")?.name == "Marguerite Okonkwo")
    }

    static func keyIDsInUse(_ store: SafetyStore) throws -> Set<UInt32> {
        Set(try store.base.read { db in try SafetyStore.sealedSamples(in: db) }.keys)
    }

    /// A file as version 6 left it: a profile, a contact invited (its invitation pending), an
    /// alarm sent to a contact removed since, a refusal kept for an address, a link's token;
    /// and a contact deleted before (its row's bytes left in a free page).
    static func writeVersion6Store(at path: String) throws {
        let pool = try DatabasePool(path: path)
        try SafetyMigrations.migrator(keys: .random()).migrate(pool, upTo: "v6: contacts agree first")
        let at = "2026-01-01 00:00:00.000"
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO profile (user_id, name, email, threshold_hours, language, time_zone, reminder_enabled,
                        reminder_hour, reminder_minute, push_token, count_activity, period_start, snoozes, epoch,
                        check_in_epoch, created_at, updated_at)
                    VALUES ('mei', 'Marguerite Okonkwo', 'marguerite.okonkwo@example.org', 24, 'en', 'UTC', 0, 9, 0, '',
                        0, :at, 0, 1, 1, :at, :at);
                    INSERT INTO contact (id, user_id, email, email_key, name, created_at, state, invited_at,
                        invitation_expires_at, invitations_sent)
                    VALUES ('c1', 'mei', 'zebulon.haversham@example.net', 'zebulon.haversham@example.net',
                        'Zebulon Haversham', :at, 'invited', :at, '2026-01-08 00:00:00.000', 1);
                    INSERT INTO contact (id, user_id, email, email_key, name, created_at, state, invitations_sent)
                    VALUES ('c0', 'mei', 'ottoline@example.com', 'ottoline@example.com', 'Ottoline Brisbane', :at,
                        'confirmed', 1);
                    INSERT INTO contact_address (user_id, address_key, invitations, refused)
                    VALUES ('mei', 'declined.person@example.com', 1, 'declined'),
                        ('mei', 'zebulon.haversham@example.net', 1, NULL);
                    INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                    VALUES (x'00', 'c1', 'mei', 'zebulon.haversham@example.net', 'answer', NULL, :at);
                    INSERT INTO alert (id, user_id, epoch, kind, channel, contact_id, address, subject, body, state,
                        attempts, last_error, next_attempt_at, created_at)
                    VALUES ('a1', 'mei', 1, 'invitation', 'email', 'c1', 'zebulon.haversham@example.net',
                        'Marguerite Okonkwo asks', 'Dear Zebulon Haversham, Marguerite Okonkwo asks', 'pending', 0, '',
                        :at, :at),
                        ('a0', 'mei', 1, 'alert', 'email', 'c9', 'declined.person@example.com', 'Marguerite Okonkwo',
                        'Dear Ottoline Brisbane', 'failed', 1, '550 5.1.1 <declined.person@example.com>: no such user',
                        NULL, :at);
                    DELETE FROM contact WHERE id = 'c0';
                    """,
                arguments: ["at": at]
            )
        }
        try pool.close()
    }
}
