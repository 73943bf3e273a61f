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
    static let oliviasNest = OwnedNestsFixture.oliviasNest
    static let noahsNest = OwnedNestsFixture.noahsNest

    @Test("EraseUser deletes the user's nests' routines with everyone's ticks, and their ticks elsewhere; again, 0")
    func erasesOwnedAndOwn() async throws {
        let fixture = try OwnedNestsFixture()
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
        #expect(RoutineRules.maxOwnedNests == 1_000)
        let fixture = try OwnedNestsFixture()
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
        let fixture = try OwnedNestsFixture(location: file.location)
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
