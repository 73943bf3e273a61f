import Foundation
import GRDB
import HearthCore
import HearthPostgres
import HearthStore
import HearthTestSupport
import Logging
import PostgresNIO
import Testing

@testable import SafetyService

/// `hearth migrate-store safety`: a SQLite store copied into PostgreSQL reads back the same
/// through the PostgreSQL store, and a database that holds safety's rows is refused.
@Suite("Safety's store copied into PostgreSQL", .timeLimit(.minutes(2)))
struct StoreCopyTests {
    static let t0 = Date(timeIntervalSince1970: 1_773_144_000)
    static let logger = Logger(label: "store-copy", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Copies the store in `file` into `server`'s database, as `hearth migrate-store` does.
    static func copy(_ file: TemporaryStoreFile, _ keyFile: URL, to server: PostgresServer) async throws
        -> [String: Int]
    {
        try await SafetyService.copyStore(
            from: file.location,
            to: server.location,
            keys: try DataKeys(file: keyFile),
            logger: Self.logger
        )
    }

    /// A new SQLite store's file, and a data key file beside it.
    static func storeFile() throws -> (TemporaryStoreFile, URL) {
        let file = try TemporaryStoreFile()
        let keyFile = file.folder.appendingPathComponent("data.key")
        try DataKeyRing.generate().text.write(to: keyFile, atomically: true, encoding: .utf8)
        return (file, keyFile)
    }

    @Test("switches, contacts, check-ins and the outbox read back the same; a second copy is refused")
    func copy() async throws {
        let (file, keyFile) = try Self.storeFile()
        let clock = ManualClock(Self.t0)
        let users = ["mei", "ken", "ana"]
        // What the SQLite store holds: switches armed, a contact each, check-ins, warnings
        // decided (some sent, one pending), an invitation still open.
        var before: [String: Snapshot] = [:]
        do {
            let store = try SafetyStore(location: file.location, keys: try DataKeys(file: keyFile), clock: clock)
            for user in users {
                _ = try await store.upsertProfile(user) { profile in
                    profile.name = "\(user) Chen"
                    profile.email = "\(user)@example.com"
                    profile.timeZone = "Asia/Taipei"
                }
                try await store.addConfirmedContact(user, email: "\(user)@contacts.example", name: "Brother")
                _ = try await store.addContact(user, email: "\(user)-2@contacts.example", name: "Sister")
                _ = try await store.recordHeartbeat(
                    user,
                    timeZone: nil,
                    deviceInfo: "phone",
                    requestID: "a",
                    source: "app"
                )
            }
            clock.set(Self.t0 + 21 * 3600 + 1)
            _ = try await store.decideDue(now: clock.now(), limit: 10)
            let claimed = try await store.claimDue(.push, now: clock.now(), limit: 1, lease: 60)
            for claim in claimed { try await store.record(claim.claim, attempt: .success(""), now: clock.now()) }
            for user in users { before[user] = try await Snapshot(user, store) }
        }
        try await withPostgresServer { server in
            let copied = try await Self.copy(file, keyFile, to: server)
            #expect(copied["profile"] == users.count)
            #expect(copied["contact"] == 2 * users.count)
            let store = try await PostgresSafetyStore.open(
                server.location,
                keys: try DataKeys(file: keyFile),
                clock: clock,
                logger: Self.logger
            )
            let pool = Task { try await store.database.run() }
            defer { pool.cancel() }
            for user in users {
                let after = try await Snapshot(user, store)
                #expect(after == before[user], "\(user) reads back the same")
            }
            // The copy's switches go on: the next warning is decided on PostgreSQL.
            clock.set(Self.t0 + 23 * 3600 + 1)
            #expect(try await store.decideDue(now: clock.now(), limit: 10) == users.count)
            let refused = await #expect(throws: StoreCopyRefused.self) {
                try await SafetyService.copyStore(
                    from: file.location,
                    to: server.location,
                    keys: try DataKeys(file: keyFile),
                    logger: Self.logger
                )
            }
            #expect(refused?.description.contains("empty database") == true)
            pool.cancel()
            _ = await pool.result
        }
    }

    @Test("a table of more rows than a batch is copied whole, along a key of two columns")
    func copyPastOneBatch() async throws {
        let (file, keyFile) = try Self.storeFile()
        let users = ["ana", "ken", "mei"]
        let perUser = StoreCopy.batch * 4 / 5 + 1
        let written = Set(users.flatMap { user in (0..<perUser).map { "\(user)/r\($0)" } })
        do {
            let store = try SafetyStore(location: file.location, keys: try DataKeys(file: keyFile))
            for user in users {
                _ = try await store.upsertProfile(user) { $0.timeZone = "UTC" }
            }
            // 3 x 401 rows: batches end inside one user's rows and between two users'.
            try await store.base.writer.write { db in
                for user in users {
                    for index in 0..<perUser {
                        try db.execute(
                            sql: """
                                INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id, counted)
                                VALUES (?, ?, 'UTC', '', 'app', ?, 1)
                                """,
                            arguments: [user, Self.t0.addingTimeInterval(Double(index)), "r\(index)"]
                        )
                    }
                }
            }
        }
        try await withPostgresServer { server in
            let copied = try await Self.copy(file, keyFile, to: server)
            #expect(copied["heartbeat"] == written.count)
            let read = try await PostgresPool.withSetupConnection(server.location, logger: Self.logger) { db in
                try await db.rows("SELECT user_id, request_id FROM heartbeat") {
                    "\(try $0.value(0, as: String.self))/\(try $0.value(1, as: String.self))"
                }
            }
            #expect(read.count == written.count && Set(read) == written, "each row once")
        }
    }

    /// What a user's store holds, as the service reads it.
    struct Snapshot: Equatable {
        var profile: ProfileRecord?
        var contacts: [ContactRecord]
        var checkIns: [CheckInRow]
        var messages: [AlertRecord]

        init(_ user: String, _ store: any SafetyPersistence) async throws {
            self.profile = try await store.profile(user)
            self.contacts = try await store.contacts(user)
            self.checkIns = try await store.checkIns(of: user)
            self.messages = try await store.messages(of: user)
        }
    }
}
