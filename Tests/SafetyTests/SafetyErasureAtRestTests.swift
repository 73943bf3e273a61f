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

/// What safety keeps in clear about a user (names and addresses are sealed, so a scan for them
/// proves nothing): their check-ins' device, time zone and request id, their profile's zone,
/// language and push token. After EraseUser none of it is in any byte of the store's file, its
/// WAL or its shared memory; another user's is still there.
@Suite("Safety's erasure at rest", .timeLimit(.minutes(2)), .serialized)
struct SafetyErasureAtRestTests {
    /// A user and the texts of theirs that safety keeps in clear.
    struct Person {
        var id: String
        /// In each check-in's device info.
        var device: String
        /// At the end of one check-in's device info long enough to spill onto an overflow page.
        var overflowTail: String
        /// The profile's zone and the first half of the check-ins'; then the second half's.
        var zones: [String]
        /// Each check-in's request id begins with it.
        var requestIDs: String
        var language: String
        /// At the end of a push token long enough to spill the profile onto an overflow page.
        var pushToken: String

        /// What is looked for in the files ("en" is too short to prove anything).
        var texts: [String] {
            [self.device, self.overflowTail] + self.zones + [self.requestIDs, self.pushToken]
                + (self.language == "en" ? [] : [self.language])
        }
    }

    static let mei = Person(
        id: "mei",
        device: "Quillfeather Slate 7731",
        overflowTail: "Quillfeather overflow tail 0457",
        zones: ["Pacific/Chatham", "Pacific/Kiritimati"],
        requestIDs: "hb-Wintercress-",
        language: "zh-Hant",
        pushToken: "pushtoken-Marrowgate-88213"
    )
    static let kai = Person(
        id: "kai",
        device: "Brackenridge Phone 5512",
        overflowTail: "Brackenridge overflow tail 3301",
        zones: ["Europe/Oslo", "Asia/Kolkata"],
        requestIDs: "hb-Lanternfish-",
        language: "en",
        pushToken: "pushtoken-Lanternfish-4410"
    )
    /// Check-ins of each user, 6 minutes apart, ~350 bytes each: tens of pages of the heartbeat
    /// table, with interior pages (which hold whole rows in a WITHOUT ROWID table).
    static let checkIns = 160
    /// What EraseUser deletes of a user; `contact_address` (a keyed hash and a refusal) is kept.
    static let erasedTables = ["profile", "contact", "heartbeat", "alert", "contact_token", "invitation_sent"]

    /// The two calls that erase a user's safety data: the account erasure's Internal part, and
    /// the app's own DeleteAccount.
    enum Erasure: String, CaseIterable, Sendable {
        case eraseUser = "EraseUser"
        case deleteAccount = "DeleteAccount"

        /// Erases `user`; the rows deleted, when the call says.
        func run(_ user: String, _ system: SafetySystem) async throws -> Int? {
            switch self {
            case .eraseUser:
                let answer = try await system.service.eraseUser(.init(), callContext(user))
                return Int(answer.deleted)
            case .deleteAccount:
                _ = try await system.service.deleteAccount(.init(), callContext(user))
                return nil
            }
        }
    }

    @Test(
        "after EraseUser or DeleteAccount none of the user's check-ins' devices, zones and request ids, nor their profile's language or push token, is in the file, its WAL or its shared memory; another user's stays",
        arguments: Erasure.allCases
    )
    func noClearTextLingers(_ erasure: Erasure) async throws {
        try await withSafetySystem { system in
            let file = system.file
            for person in [Self.mei, Self.kai] { try await Self.signUp(person, system) }
            try await system.confirmInvitations()
            for index in 0..<Self.checkIns {
                system.clock.advance(by: 6 * 60)
                for person in [Self.kai, Self.mei] {
                    try await Self.checkIn(
                        person,
                        device: "\(person.device), check-in \(index), " + String(repeating: "=", count: 300),
                        zone: person.zones[index < Self.checkIns / 2 ? 0 : 1],
                        id: "\(person.requestIDs)\(index)",
                        system
                    )
                }
            }
            system.clock.advance(by: 6 * 60)
            for person in [Self.kai, Self.mei] {
                try await Self.checkIn(
                    person,
                    device: String(repeating: "€", count: 470) + " " + person.overflowTail,
                    zone: person.zones[1],
                    id: "\(person.requestIDs)tail",
                    system
                )
            }
            try await system.settle()

            // Everything was kept as sent: every check-in, the long ones whole.
            let before = try Self.rows(of: Self.mei.id, system)
            let kaiBefore = try Self.rows(of: Self.kai.id, system)
            #expect(before["heartbeat"] == Self.checkIns + 1 && kaiBefore["heartbeat"] == Self.checkIns + 1)
            #expect(
                Self.erasedTables.allSatisfy { (before[$0] ?? 0) > 0 },
                "every table holds some of Mei's: \(before)"
            )
            let device = try Self.text(
                "SELECT device_info FROM heartbeat WHERE user_id = 'mei' AND request_id = 'app:hb-Wintercress-tail'",
                system
            )
            let token = try Self.text("SELECT push_token FROM profile WHERE user_id = 'mei'", system)
            #expect(device.utf8.count > 1_100 && device.hasSuffix(Self.mei.overflowTail), "past a page's local payload")
            #expect(token.utf8.count > 4_000 && token.hasSuffix(Self.mei.pushToken), "past a page's local payload")

            // The control: written, every text is there to find, in the WAL or the file.
            #expect(FileManager.default.fileExists(atPath: file.path + "-wal"), "the WAL is read too")
            #expect(FileManager.default.fileExists(atPath: file.path + "-shm"), "the shared memory is read too")
            try #require(try Self.texts(Self.mei.texts, foundIn: file) == Self.mei.texts)
            try #require(try Self.texts(Self.kai.texts, foundIn: file) == Self.kai.texts)

            if let deleted = try await erasure.run(Self.mei.id, system) {
                #expect(deleted == Self.erasedTables.map { before[$0] ?? 0 }.reduce(0, +))
            }
            let after = try Self.rows(of: Self.mei.id, system)
            #expect(Self.erasedTables.allSatisfy { after[$0] == 0 }, "\(after)")
            // Straight after the answer (the store still open: closing it would checkpoint and
            // remove the WAL by itself, and the test would pass without the erasure's own).
            #expect(try Self.texts(Self.mei.texts, foundIn: file) == [], "left on disk after the erasure")

            // Kai's rows and texts stay, as they were.
            let kaiAfter = try Self.rows(of: Self.kai.id, system)
            #expect(["profile", "contact", "heartbeat"].allSatisfy { kaiAfter[$0] == kaiBefore[$0] }, "\(kaiAfter)")
            #expect(try Self.texts(Self.kai.texts, foundIn: file) == Self.kai.texts)
            #expect(try await system.exportUser(Self.kai.id).checkIns.count == Self.checkIns + 1)
            #expect(
                try await system.service.store.profile(Self.kai.id)?.pushToken.hasSuffix(Self.kai.pushToken) == true
            )

            // Asked again (the account service retries until OK): nothing left, still nothing on disk.
            let again = try await erasure.run(Self.mei.id, system)
            #expect(again ?? 0 == 0)
            try await system.settle()
            #expect(try Self.texts(Self.mei.texts, foundIn: file) == [])
        }
    }

    // MARK: Helpers

    /// A profile with `person`'s zone, language and a long push token ending in theirs, and a
    /// contact (invited, then confirmed by ``SafetySystem/confirmInvitations()``).
    static func signUp(_ person: Person, _ system: SafetySystem) async throws {
        _ = try await system.service.upsertProfile(
            .with {
                $0.name = "Person \(person.id)"
                $0.email = "\(person.id)@example.com"
                $0.thresholdHours = 24
                $0.preferredLanguage = person.language
                $0.timeZone = person.zones[0]
                $0.pushToken = String(repeating: "A", count: 4_000) + person.pushToken
            },
            callContext(person.id)
        )
        _ = try await system.service.addContact(
            .with {
                $0.email = "friend-of-\(person.id)@example.net"
                $0.name = "Friend"
            },
            callContext(person.id)
        )
    }

    /// A check-in from the app, through the service.
    static func checkIn(_ person: Person, device: String, zone: String, id: String, _ system: SafetySystem)
        async throws
    {
        _ = try await system.service.recordHeartbeat(
            .with {
                $0.clientRequestID = id
                $0.deviceInfo = device
                $0.timeZone = zone
            },
            callContext(person.id)
        )
    }

    /// `user`'s rows in each table EraseUser deletes from.
    static func rows(of user: String, _ system: SafetySystem) throws -> [String: Int] {
        try system.service.fileStore.base.read { db in
            try Dictionary(
                uniqueKeysWithValues: Self.erasedTables.map { table in
                    (
                        table,
                        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE user_id = ?", arguments: [user])
                            ?? 0
                    )
                }
            )
        }
    }

    /// The one text `sql` reads from the store ("" when none).
    static func text(_ sql: String, _ system: SafetySystem) throws -> String {
        try system.service.fileStore.base.read { db in try String.fetchOne(db, sql: sql) ?? "" }
    }

    /// Those of `texts` found, in any case, in the bytes of the store's file, its WAL or its
    /// shared memory (a file not there has none).
    static func texts(_ texts: [String], foundIn file: TemporaryStoreFile) throws -> [String] {
        let files = try [file.path, file.path + "-wal", file.path + "-shm"].map { path in
            guard FileManager.default.fileExists(atPath: path) else { return Data() }
            return Data(try Data(contentsOf: URL(fileURLWithPath: path)).map(Self.lowercased))
        }
        return texts.filter { text in
            let needle = Data(text.utf8.map(Self.lowercased))
            return files.contains { $0.range(of: needle) != nil }
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }
}
