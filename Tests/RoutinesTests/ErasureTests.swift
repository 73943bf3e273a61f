import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthRelay
import HearthStore
import HearthTestSupport
import Testing

@testable import RoutinesService

/// EraseUser: what goes (the user's nests' routines with every tick, the user's own ticks and
/// queued calls), what stays (everyone else's), its limits, and that no byte of it is left.
@Suite("Routines: erasure")
struct ErasureTests {
    /// Olivia's nest, where Sam sits.
    static let oliviasNest = "nest-olivia"
    /// Noah's nest, where Olivia sits.
    static let noahsNest = "nest-noah"

    @Test("EraseUser deletes the user's nests' routines with everyone's ticks, and their ticks elsewhere; again, 0")
    func erasesOwnedAndOwn() async throws {
        let fixture = try ErasureFixture()
        let bedtime = try await fixture.routine(
            "Bedtime",
            in: Self.oliviasNest,
            actions: ["Teeth", "Story", "Lights off"],
            as: "olivia"
        )
        let morning = try await fixture.routine(
            "Morning",
            in: Self.oliviasNest,
            actions: ["Breakfast", "Coat"],
            as: "olivia"
        )
        let chores = try await fixture.routine("Chores", in: Self.noahsNest, actions: ["Dishes", "Plants"], as: "noah")
        try await fixture.tick(bedtime, 0, as: "olivia")
        try await fixture.tick(bedtime, 0, as: "sam")
        try await fixture.tick(bedtime, 1, as: "sam")
        try await fixture.tick(morning, 0, as: "sam")
        try await fixture.tick(chores, 0, as: "noah")
        try await fixture.tick(chores, 1, as: "noah")
        try await fixture.tick(chores, 0, as: "olivia")
        #expect(try await fixture.service.relay.pending() == 7, "a forward to safety for each tick")

        // 2 routines, 5 actions and 4 ticks in her nest; her tick in Noah's; her 2 forwards.
        #expect(try await fixture.erase("olivia", owning: [Self.oliviasNest]) == 14)
        for routine in [bedtime, morning] {
            await expectCode(.notFound) { _ = try await fixture.get(routine, as: "olivia") }
            for user in ["olivia", "sam"] {
                let left = try await fixture.stored(routine, ticksOf: user)
                #expect(left.actions == 0 && left.ticks == 0, "\(routine.title), \(user)")
            }
        }
        // Noah's routine stays, with his ticks; hers there are gone.
        #expect(try await fixture.get(chores, as: "noah").actions.count == 2)
        #expect(try await fixture.stored(chores, ticksOf: "noah").ticks == 2)
        #expect(try await fixture.stored(chores, ticksOf: "olivia").ticks == 0)
        #expect(try await fixture.progress(chores, as: "noah").doneCount == 2)
        #expect(try await fixture.progress(chores, as: "olivia").doneCount == 0)
        #expect(try await fixture.service.relay.pending() == 5, "Sam's and Noah's forwards stay")

        #expect(try await fixture.erase("olivia", owning: [Self.oliviasNest]) == 0)
        #expect(try await fixture.erase("olivia", owning: []) == 0)
    }

    @Test("owned_nest_ids: 1,000 are accepted and 1,001 refused; an empty id is refused; each naming the field")
    func nestIDBoundaries() async throws {
        #expect(RoutineRules.maxErasedNests == 1_000)
        let fixture = try ErasureFixture()
        let routine = try await fixture.routine("Bedtime", in: Self.oliviasNest, actions: ["Teeth"], as: "olivia")
        // Olivia's nest is the last of the 1,000: every id is acted on.
        let thousand = (1..<1_000).map { "nest-\($0)" } + [Self.oliviasNest]
        #expect(
            await violatedFields { _ = try await fixture.erase("olivia", owning: thousand + ["nest-1000"]) } == [
                "owned_nest_ids"
            ]
        )
        #expect(
            await violatedFields { _ = try await fixture.erase("olivia", owning: [Self.oliviasNest, ""]) } == [
                "owned_nest_ids"
            ]
        )
        #expect(await violatedFields { _ = try await fixture.erase("olivia", owning: [""]) } == ["owned_nest_ids"])
        #expect(try await fixture.get(routine, as: "olivia").actions.count == 1, "a refused erasure deletes nothing")

        #expect(try await fixture.erase("olivia", owning: thousand) == 2, "the routine and its action")
        await expectCode(.notFound) { _ = try await fixture.get(routine, as: "olivia") }
    }

    @Test("an erased routine's title and action are in no byte of the store file or its WAL")
    func noBytesLinger() async throws {
        let file = try TemporaryStoreFile()
        let fixture = try ErasureFixture(location: file.location)
        let title = "Feed Quillon the axolotl"
        let action = "Thaw two bloodworm cubes for Quillon"
        let routine = try await fixture.routine(title, in: Self.oliviasNest, actions: [action, "Top up"], as: "olivia")
        try await fixture.tick(routine, 0, as: "sam")
        #expect(FileManager.default.fileExists(atPath: file.path + "-wal"), "the WAL is read too")
        #expect(Self.texts([title, action], foundIn: file) == [title, action], "written, they are there to find")

        // The routine, its 2 actions and Sam's tick.
        #expect(try await fixture.erase("olivia", owning: [Self.oliviasNest]) == 4)
        #expect(Self.texts([title, action], foundIn: file) == [])
        // Open until now: closing the store's last connection would checkpoint and remove the
        // WAL by itself, and the test would pass without the erasure's own checkpoint.
        withExtendedLifetime(fixture) {}
    }

    /// Those of `texts` whose UTF-8 some bytes of the store file or of its WAL are.
    static func texts(_ texts: [String], foundIn file: TemporaryStoreFile) -> [String] {
        let files = [file.path, file.path + "-wal"].map { FileManager.default.contents(atPath: $0) ?? Data() }
        return texts.filter { text in files.contains { $0.range(of: Data(text.utf8)) != nil } }
    }
}

/// Roles as the test sets them, with no checkins server: Olivia owns her nest, where Sam sits;
/// Noah owns his, where Olivia sits. EraseUser itself asks for none.
private struct FixedRoles: NestRoleSource {
    let roles: [String: [String: Hearth_Checkins_V1_NestRole]] = [
        ErasureTests.oliviasNest: ["olivia": .owner, "sam": .sitter],
        ErasureTests.noahsNest: ["noah": .owner, "olivia": .sitter],
    ]

    func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
        self.roles[nestID]?[userID] ?? Hearth_Checkins_V1_NestRole.none
    }
}

/// Routines over a store at `location`, on a clock that moves only when the test moves it.
private struct ErasureFixture {
    /// 2026-03-10 12:00 UTC: 20:00 in Taipei.
    static let start = Date(timeIntervalSince1970: 1_773_144_000)
    static let zone = "Asia/Taipei"

    let clock: ManualClock
    let service: RoutinesService

    init(location: StoreLocation = .inMemory) throws {
        self.clock = ManualClock(Self.start)
        self.service = try RoutinesService(location: location, roles: FixedRoles(), clock: self.clock)
    }

    func routine(_ title: String, in nest: String, actions: [String], as owner: String) async throws
        -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_CreateRoutineRequest()
        request.nestID = nest
        request.title = title
        request.actions = actions
        return try await self.service.createRoutine(request, callContext(owner))
    }

    func get(_ routine: Hearth_Routines_V1_Routine, as user: String) async throws -> Hearth_Routines_V1_Routine {
        var request = Hearth_Routines_V1_GetRoutineRequest()
        request.routineID = routine.id
        return try await self.service.getRoutine(request, callContext(user))
    }

    func tick(_ routine: Hearth_Routines_V1_Routine, _ action: Int, as user: String) async throws {
        var request = Hearth_Routines_V1_SetActionDoneRequest()
        request.routineID = routine.id
        request.actionID = routine.actions[action].id
        request.done = true
        request.timeZone = Self.zone
        _ = try await self.service.setActionDone(request, callContext(user))
    }

    /// The caller's own progress today.
    func progress(_ routine: Hearth_Routines_V1_Routine, as user: String) async throws -> Hearth_Routines_V1_Progress {
        var request = Hearth_Routines_V1_GetProgressRequest()
        request.routineID = routine.id
        request.timeZone = Self.zone
        return try await self.service.getProgress(request, callContext(user))
    }

    /// Erases `user`, naming `nests` as theirs; answers how many rows went.
    func erase(_ user: String, owning nests: [String]) async throws -> UInt64 {
        var request = Hearth_Routines_V1_EraseUserRequest()
        request.ownedNestIds = nests
        return try await self.service.eraseUser(request, callContext(user)).deleted
    }

    /// How many actions (removed ones too) the store keeps of a routine, and how many ticks of
    /// `user`'s today: read from the store, which still answers for a routine that is gone.
    func stored(_ routine: Hearth_Routines_V1_Routine, ticksOf user: String) async throws -> (
        actions: Int, ticks: Int
    ) {
        let zone = try #require(TimeZone(identifier: Self.zone))
        let today = LocalDate(self.clock.now(), in: zone)
        let (actions, ticks) = try await self.service.store.days(
            routineID: routine.id,
            user: user,
            from: today,
            to: today,
            in: zone
        )
        return (actions.count, ticks.count)
    }
}
