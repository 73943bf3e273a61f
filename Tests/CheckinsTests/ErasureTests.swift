import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService

extension Fixture {
    /// The service over a store file (WAL mode, as a process runs it), with a clock the test moves.
    init(file: TemporaryStoreFile) throws {
        self.clock = ManualClock(Self.start)
        self.service = try CheckinsService(location: file.location, clock: self.clock)
    }
}

/// An account erasure's part in checkins: ListOwnedNests and EraseUser.
@Suite("Erasure")
struct ErasureTests {
    /// Every table the store keeps rows in.
    static let tables = [
        "nest", "session", "check_in", "photo", "check_in_request", "daily_count", "template", "push_outbox",
        "relay_outbox",
    ]

    /// Every row of the store, by table.
    static func rows(_ fixture: Fixture) throws -> [String: Set<Row>] {
        try fixture.service.store.base.read { db in
            var rows: [String: Set<Row>] = [:]
            for table in Self.tables {
                rows[table] = Set(try Row.fetchAll(db, sql: "SELECT * FROM \(table)"))
            }
            return rows
        }
    }

    /// A session in `nest` for `sitter`, from now for three days, made by the nest's owner.
    static func session(_ fixture: Fixture, in nest: Hearth_Checkins_V1_Nest, sitter: String) async throws
        -> Hearth_Checkins_V1_Session
    {
        var request = Hearth_Checkins_V1_CreateSessionRequest()
        request.nestID = nest.id
        request.sitterUserID = sitter
        request.startsAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
        request.endsAt = Google_Protobuf_Timestamp(date: fixture.clock.now().addingTimeInterval(72 * 3600))
        request.timeZone = "Asia/Taipei"
        return try await fixture.service.createSession(request, fixture.context(nest.ownerUserID))
    }

    /// A check-in with a photo (normalized as any upload is) and `caption`, by the session's sitter.
    static func photoCheckIn(_ fixture: Fixture, _ session: Hearth_Checkins_V1_Session, caption: String = "")
        async throws -> Hearth_Checkins_V1_CheckIn
    {
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = session.id
        request.caption = caption
        // Pixels of its own for each caption: two check-ins' photos share no stretch of bytes.
        let seed = caption.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) % 251 }
        request.photo = Images.png(width: 400, height: 300) { x, y in
            (UInt8((x &+ seed) % 256), UInt8((y &* (seed | 1)) % 256), UInt8((x &* y &+ seed) % 256))
        }
        request.photoAltText = "The dog asleep"
        request.capturedAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
        request.clientRequestID = UUID().uuidString
        return try await fixture.service.createCheckIn(request, fixture.context(session.sitterUserID))
    }

    /// Marks a push sent, as the outbox's deliverer would (a sent one is kept a week).
    static func markSent(_ fixture: Fixture, pushID: String) async throws {
        let now = fixture.clock.now()
        try await fixture.service.store.base.write { db in
            try db.execute(sql: "UPDATE push_outbox SET delivered_at = ? WHERE id = ?", arguments: [now, pushID])
        }
    }

    /// EraseUser for `user`: how many rows it deleted.
    static func erase(_ fixture: Fixture, _ user: String) async throws -> UInt64 {
        try await fixture.service.eraseUser(Hearth_Checkins_V1_EraseUserRequest(), fixture.context(user)).deleted
    }

    @Test(
        "EraseUser deletes the nests the user owns with all they hold, and their sitting in others' nests; every other row stays as it was"
    )
    func erasesOwnerAndSitter() async throws {
        let fixture = try Fixture()
        // Olivia's home, which Sam sits: a photo check-in, one without, a quick caption of hers.
        let (home, samAtHome) = try await fixture.nestAndSession(owner: "olivia", sitter: "sam")
        let samsPhoto = try await Self.photoCheckIn(fixture, samAtHome, caption: "Asleep")
        _ = try await fixture.checkIn(samAtHome, caption: "Walk done", as: "sam")
        var template = Hearth_Checkins_V1_AddTemplateRequest()
        template.nestID = home.id
        template.text = "Plants watered"
        _ = try await fixture.service.addTemplate(template, fixture.context("olivia"))
        // Nora's cabin, which Olivia sits (a check-in of hers), and Sam too (his stays).
        let (cabin, oliviaAtCabin) = try await fixture.nestAndSession(owner: "nora", sitter: "olivia")
        let olivias = try await fixture.checkIn(oliviaAtCabin, caption: "Cat fed", as: "olivia")
        let samAtCabin = try await Self.session(fixture, in: cabin, sitter: "sam")
        _ = try await fixture.checkIn(samAtCabin, caption: "Logs stacked", as: "sam")
        // One of Olivia's, whose push to Nora went out before she deleted it: DeleteCheckIn
        // leaves a sent push (and the request); the erasure does not.
        let deletedBefore = try await fixture.checkIn(oliviaAtCabin, caption: "Mail brought in", as: "olivia")
        try await Self.markSent(fixture, pushID: CheckinStore.createdPushID(deletedBefore.id))
        var delete = Hearth_Checkins_V1_DeleteCheckInRequest()
        delete.checkInID = deletedBefore.id
        _ = try await fixture.service.deleteCheckIn(delete, fixture.context("olivia"))
        // A push to Olivia of some other kind, sent already.
        let other = PushMessage(
            userID: "olivia",
            kind: "test.other",
            title: "Hello",
            body: "For Olivia",
            createdAt: fixture.clock.now()
        )
        try await fixture.service.store.base.write { db in try Outbox.enqueue(other, in: db) }
        try await Self.markSent(fixture, pushID: other.id)
        // Uma's studio, which Vic sits, with a photo: nothing of Olivia's.
        let (studio, vicAtStudio) = try await fixture.nestAndSession(owner: "uma", sitter: "vic")
        _ = try await Self.photoCheckIn(fixture, vicAtStudio, caption: "Fish fed")

        let before = try Self.rows(fixture)
        #expect(before["push_outbox"]?.contains { $0["id"] as String == other.id } == true)
        #expect(
            before["push_outbox"]?.contains { $0["id"] as String == CheckinStore.createdPushID(deletedBefore.id) }
                == true,
            "DeleteCheckIn left the sent push"
        )
        // What stays: the rows of the cabin's other session and of the studio, and the calls
        // made for anyone but Olivia (Sam's activity at her home is his).
        let keptNests: Set<String> = [cabin.id, studio.id]
        let keptSessions: Set<String> = [samAtCabin.id, vicAtStudio.id]
        let keptCheckIns = Set(
            (before["check_in"] ?? []).filter { keptSessions.contains($0["session_id"] as String) }
                .map { $0["id"] as String }
        )
        #expect(keptCheckIns.count == 2)
        let kept: [String: (Row) -> Bool] = [
            "nest": { keptNests.contains($0["id"] as String) },
            "session": { keptSessions.contains($0["id"] as String) },
            "check_in": { keptCheckIns.contains($0["id"] as String) },
            "photo": { keptCheckIns.contains($0["check_in_id"] as String) },
            "check_in_request": { keptCheckIns.contains($0["check_in_id"] as String) },
            "daily_count": { keptSessions.contains($0["session_id"] as String) },
            "template": { keptNests.contains($0["nest_id"] as String) },
            "push_outbox": { row in keptCheckIns.contains { CheckinStore.createdPushID($0) == row["id"] as String } },
            "relay_outbox": { $0["user_id"] as String != "olivia" },
        ]
        var expected: [String: Set<Row>] = [:]
        for table in Self.tables {
            let rows = before[table] ?? []
            let keep = rows.filter { kept[table]?($0) ?? false }
            expected[table] = keep
            // The test means something: each table has rows that go and rows that stay.
            #expect(!keep.isEmpty, "\(table): nothing to keep")
            #expect(keep.count < rows.count, "\(table): nothing to delete")
        }

        let deleted = try await Self.erase(fixture, "olivia")
        let after = try Self.rows(fixture)
        for table in Self.tables {
            #expect(after[table] == expected[table], "\(table)")
        }
        let counted = { (rows: [String: Set<Row>]) in rows.values.map(\.count).reduce(0, +) }
        #expect(deleted == UInt64(counted(before) - counted(after)))

        // As the services answer it.
        var getNest = Hearth_Checkins_V1_GetNestRequest()
        getNest.nestID = home.id
        await expectCode(.notFound) { _ = try await fixture.service.getNest(getNest, fixture.context("olivia")) }
        var getPhoto = Hearth_Checkins_V1_GetCheckInPhotoRequest()
        getPhoto.checkInID = samsPhoto.id
        await expectCode(.notFound) {
            _ = try await fixture.service.getCheckInPhoto(getPhoto, fixture.context("sam"))
        }
        var listSessions = Hearth_Checkins_V1_ListSessionsRequest()
        listSessions.nestID = cabin.id
        let cabinSessions = try await fixture.service.listSessions(listSessions, fixture.context("nora")).sessions
        #expect(cabinSessions.map(\.id) == [samAtCabin.id])
        var listCheckIns = Hearth_Checkins_V1_ListCheckInsRequest()
        listCheckIns.sessionID = oliviaAtCabin.id
        await expectCode(.notFound) {
            _ = try await fixture.service.listCheckIns(listCheckIns, fixture.context("nora"))
        }
        #expect(after["check_in"]?.contains { $0["id"] as String == olivias.id } == false)
        #expect(after["check_in"]?.contains { $0["submitter_user_id"] as String == "olivia" } == false)
        let owned = try await fixture.service.listOwnedNests(
            Hearth_Checkins_V1_ListOwnedNestsRequest(),
            fixture.context("olivia")
        )
        #expect(owned.nestIds == [])

        // Again (the account service retries until OK): nothing left, nothing else touched.
        #expect(try await Self.erase(fixture, "olivia") == 0)
        #expect(try Self.rows(fixture) == after)
        #expect(try await Self.erase(fixture, "nobody") == 0)
    }

    @Test("ListOwnedNests lists every nest the user owns, oldest first, and none they only sit in")
    func ownedNests() async throws {
        let fixture = try Fixture()
        var owned: [String] = []
        for name in ["Home", "Cabin", "Boat", "Studio"] {
            var request = Hearth_Checkins_V1_CreateNestRequest()
            request.name = name
            owned.append(try await fixture.service.createNest(request, fixture.context("olivia")).id)
            fixture.clock.advance(by: 1)
        }
        // Olivia sits in Nora's nest; Nora owns only that one.
        let (cabin, _) = try await fixture.nestAndSession(owner: "nora", sitter: "olivia")
        func listed(_ user: String) async throws -> [String] {
            try await fixture.service.listOwnedNests(Hearth_Checkins_V1_ListOwnedNestsRequest(), fixture.context(user))
                .nestIds
        }
        #expect(try await listed("olivia") == owned)
        #expect(try await listed("nora") == [cabin.id])
        #expect(try await listed("sam") == [])
    }

    /// The bytes of the store's file and of its WAL (empty when there is none).
    static func storeFiles(_ file: TemporaryStoreFile) throws -> [Data] {
        try [file.path, file.path + "-wal"].map { path in
            guard FileManager.default.fileExists(atPath: path) else { return Data() }
            return try Data(contentsOf: URL(fileURLWithPath: path))
        }
    }

    /// Whether `needle` is anywhere in the store's file or its WAL.
    static func onDisk(_ needle: Data, _ file: TemporaryStoreFile) throws -> Bool {
        try Self.storeFiles(file).contains { $0.range(of: needle) != nil }
    }

    /// 64 bytes from the middle of a check-in's stored photo: compressed pixels, found nowhere else.
    static func photoBytes(_ fixture: Fixture, of checkIn: Hearth_Checkins_V1_CheckIn) async throws -> Data {
        let id = checkIn.id
        let read = try await fixture.service.store.base.longRead { db in
            try Data.fetchOne(db, sql: "SELECT full FROM photo WHERE check_in_id = ?", arguments: [id])
        }
        let stored = try #require(read)
        let stretch = stored.subdata(in: stored.count / 2..<stored.count / 2 + 64)
        #expect(Set(stretch).count > 16, "varied bytes, not a run that could be anywhere")
        return stretch
    }

    @Test("after EraseUser an erased check-in's caption and photo are in neither the store file nor its WAL")
    func bytesDoNotLinger() async throws {
        let file = try TemporaryStoreFile()
        let fixture = try Fixture(file: file)
        // Sam sits Olivia's home; Kim sits her cabin.
        let (_, samAtHome) = try await fixture.nestAndSession(owner: "olivia", sitter: "sam")
        let (_, kimAtCabin) = try await fixture.nestAndSession(owner: "olivia", sitter: "kim")
        let samsCaption = Data("Quillon Marchbanks fed the axolotl".utf8)
        let kimsCaption = Data("Perpetua Lindqvist watered the ferns".utf8)
        let sams = try await Self.photoCheckIn(fixture, samAtHome, caption: "Quillon Marchbanks fed the axolotl")
        let kims = try await Self.photoCheckIn(fixture, kimAtCabin, caption: "Perpetua Lindqvist watered the ferns")
        let samsPhoto = try await Self.photoBytes(fixture, of: sams)
        let kimsPhoto = try await Self.photoBytes(fixture, of: kims)
        // The test would see them: written, they are in the WAL (or the file).
        #expect(FileManager.default.fileExists(atPath: file.path + "-wal"), "the WAL is read too")
        for needle in [samsCaption, samsPhoto, kimsCaption, kimsPhoto] {
            #expect(try Self.onDisk(needle, file), "written before the erasure")
        }

        // The sitter: his check-in, its photo, and Olivia's push that quoted it.
        #expect(try await Self.erase(fixture, "sam") > 0)
        #expect(try !Self.onDisk(samsCaption, file), "Sam's caption left on disk")
        #expect(try !Self.onDisk(samsPhoto, file), "Sam's photo left on disk")
        #expect(try Self.onDisk(kimsCaption, file), "Kim's check-in is not Sam's")

        // The owner: everything in her nests, Kim's check-in among it.
        #expect(try await Self.erase(fixture, "olivia") > 0)
        #expect(try !Self.onDisk(kimsCaption, file), "Kim's caption left on disk")
        #expect(try !Self.onDisk(kimsPhoto, file), "Kim's photo left on disk")
    }
}
