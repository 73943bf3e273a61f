import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import RoutinesService

/// ExportUser: what an export holds (the user's nests' routines as GetRoutine answers them, the
/// actions removed from them, the user's own ticks anywhere), what it leaves out (others' ticks,
/// others' nests), its limits.
@Suite("Routines: export")
struct ExportTests {
    static let oliviasNest = OwnedNestsFixture.oliviasNest
    static let noahsNest = OwnedNestsFixture.noahsNest

    @Test(
        "ExportUser holds the user's nests' routines as GetRoutine answers them, the actions removed from them, and only their own ticks, anywhere"
    )
    func exportsOwnedAndOwn() async throws {
        let fixture = try OwnedNestsFixture()
        let bedtime = try await fixture.routine(
            "Bedtime",
            in: Self.oliviasNest,
            actions: ["Teeth", "Story", "Lights off"],
            as: "olivia"
        )
        fixture.clock.advance(by: 1)
        var morning = try await fixture.routine(
            "Morning",
            in: Self.oliviasNest,
            actions: ["Breakfast", "Coat", "Shoes"],
            as: "olivia"
        )
        fixture.clock.advance(by: 1)
        let chores = try await fixture.routine("Chores", in: Self.noahsNest, actions: ["Dishes", "Plants"], as: "noah")

        // Each tick a minute after the one before: done_at orders them.
        var olivias: [Hearth_Routines_V1_Tick] = []
        func tick(
            _ routine: Hearth_Routines_V1_Routine,
            _ action: Int,
            as user: String,
            zone: String = OwnedNestsFixture.zone
        ) async throws {
            fixture.clock.advance(by: 60)
            try await fixture.tick(routine, action, as: user, zone: zone)
            guard user == "olivia" else { return }
            let doneAt = fixture.clock.now()
            olivias.append(
                .with {
                    $0.routineID = routine.id
                    $0.actionID = routine.actions[action].id
                    $0.date = "2026-03-10"
                    $0.doneAt = Google_Protobuf_Timestamp(millisecondsOf: doneAt)
                    $0.timeZone = zone
                }
            )
        }
        // Olivia ticks Shoes, then removes it: no longer one of the routine's, the export leaves it
        // out of the routine, as GetRoutine does, and lists it apart with when it went; her tick
        // of it stays hers.
        let shoes = morning.actions[2]
        try await tick(morning, 2, as: "olivia")
        fixture.clock.advance(by: 1)
        let removedAt = fixture.clock.now()
        morning = try await fixture.removeAction(morning, shoes.id, as: "olivia")
        #expect(morning.actions.map(\.text) == ["Breakfast", "Coat"])

        try await tick(bedtime, 0, as: "olivia")
        try await tick(bedtime, 0, as: "sam")
        try await tick(bedtime, 1, as: "sam")
        try await tick(chores, 0, as: "olivia")
        try await tick(morning, 0, as: "sam")
        try await tick(chores, 1, as: "noah")
        // 04:08 on the 11th in Taipei, 13:08 on the 10th in Los Angeles: the date is the tick's own.
        fixture.clock.advance(by: 8 * 3600)
        try await tick(morning, 1, as: "olivia", zone: "America/Los_Angeles")
        #expect(olivias.count == 4)

        let export = try await fixture.export("olivia", owning: [Self.oliviasNest])
        #expect(export.routines.map(\.id) == [bedtime.id, morning.id], "by creation; Noah's routine is not hers")
        let gotBedtime = try await fixture.get(bedtime, as: "olivia")
        let gotMorning = try await fixture.get(morning, as: "olivia")
        #expect(export.routines == [gotBedtime, gotMorning], "each as GetRoutine answers it")
        #expect(export.routines.map { $0.actions.count } == [3, 2])
        #expect(export.ticks == olivias, "hers in her nest and in Noah's, by done_at; none of Sam's or Noah's")
        #expect(export.removedActions.map(\.routineID) == [morning.id])
        #expect(export.removedActions.map(\.action) == [shoes], "as CreateRoutine answered it")
        #expect(export.removedActions.map(\.removedAt) == [Google_Protobuf_Timestamp(millisecondsOf: removedAt)])
        #expect(export.ticks.first?.actionID == shoes.id, "her tick of the removed action, which the export names")

        #expect(try await fixture.export("olivia", owning: [Self.oliviasNest, Self.oliviasNest]) == export, "a repeat")
        let without = try await fixture.export("olivia", owning: [])
        #expect(without.routines.isEmpty && without.ticks == olivias, "her ticks are hers whatever she owns")
        #expect(without.removedActions.isEmpty, "removed actions go with the routines of the nests she owns")

        // Sam, a sitter, owns nothing here: his 3 ticks, no routine.
        let sams = try await fixture.export("sam", owning: [])
        #expect(sams.routines.isEmpty && sams.removedActions.isEmpty)
        #expect(sams.ticks.map(\.routineID) == [bedtime.id, bedtime.id, morning.id])
        #expect(sams.ticks.map(\.date) == ["2026-03-10", "2026-03-10", "2026-03-10"])
        #expect(sams.ticks.allSatisfy { $0.timeZone == OwnedNestsFixture.zone })

        // Exporting changes nothing.
        #expect(try await fixture.get(chores, as: "noah").actions.count == 2)
        #expect(try await fixture.export("olivia", owning: [Self.oliviasNest]) == export)
    }

    @Test("owned_nest_ids: 1,000 are accepted and 1,001 refused; an empty id is refused; each naming the field")
    func nestIDBoundaries() async throws {
        #expect(RoutineRules.maxOwnedNests == 1_000)
        let fixture = try OwnedNestsFixture()
        let routine = try await fixture.routine("Bedtime", in: Self.oliviasNest, actions: ["Teeth"], as: "olivia")
        // Olivia's nest is the last of the 1,000: every id is read.
        let thousand = (1..<1_000).map { "nest-\($0)" } + [Self.oliviasNest]
        #expect(
            await violatedFields { _ = try await fixture.export("olivia", owning: thousand + ["nest-1000"]) } == [
                "owned_nest_ids"
            ]
        )
        #expect(
            await violatedFields { _ = try await fixture.export("olivia", owning: [Self.oliviasNest, ""]) } == [
                "owned_nest_ids"
            ]
        )
        #expect(await violatedFields { _ = try await fixture.export("olivia", owning: [""]) } == ["owned_nest_ids"])

        let export = try await fixture.export("olivia", owning: thousand)
        let got = try await fixture.get(routine, as: "olivia")
        #expect(export.routines == [got])
        #expect(export.ticks.isEmpty)
    }

    @Test("a user with nothing gets an empty export, naming nests or not")
    func emptyExport() async throws {
        let fixture = try OwnedNestsFixture()
        let routine = try await fixture.routine("Bedtime", in: Self.oliviasNest, actions: ["Teeth"], as: "olivia")
        try await fixture.tick(routine, 0, as: "sam", zone: OwnedNestsFixture.zone)
        #expect(try await fixture.export("zoe", owning: []) == Hearth_Routines_V1_UserExport())
        #expect(try await fixture.export("zoe", owning: ["nest-zoe"]) == Hearth_Routines_V1_UserExport())
    }
}
