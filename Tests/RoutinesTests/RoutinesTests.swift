import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthRelay
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService
@testable import RoutinesService

@Suite("Routines")
struct RoutinesTests {
    @Test("10 actions pass and the 11th is refused, at creation and when added; can_add_action follows")
    func actionLimit() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let ten = (1...10).map { "Step \($0)" }
            await expectCode(.invalidArgument) { _ = try await system.routine(in: nest, actions: ten + ["Step 11"]) }
            var routine = try await system.routine(in: nest, actions: Array(ten.prefix(9)))
            #expect(routine.canAddAction)
            routine = try await system.addAction(routine, "Step 10")
            #expect(routine.actions.count == 10)
            #expect(!routine.canAddAction)
            do {
                _ = try await system.addAction(routine, "Step 11")
                Issue.record("the 11th action was added")
            } catch let error as RPCError {
                #expect(error.code == .failedPrecondition)
                #expect(error.message == "a routine has at most 10 actions")
            }
            let full = try await system.routine(in: nest, actions: ten)
            #expect(full.actions.count == 10 && !full.canAddAction)
        }
    }

    @Test("titles, categories and actions are trimmed and bounded: 100 and 280 characters pass, one more does not")
    func textBoundaries() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            var request = Hearth_Routines_V1_CreateRoutineRequest()
            request.nestID = nest
            request.title = "  " + String(repeating: "🐕", count: 100) + " "
            request.actions = [String(repeating: "e\u{301}", count: 280)]
            let routine = try await system.routines.createRoutine(request, callContext("olivia"))
            #expect(routine.title.count == 100)
            #expect(routine.actions[0].text.count == 280)
            request.title = String(repeating: "a", count: 101)
            request.actions = [String(repeating: "a", count: 281), "   "]
            do {
                _ = try await system.routines.createRoutine(request, callContext("olivia"))
                Issue.record("accepted")
            } catch let error as RPCError {
                #expect(error.code == .invalidArgument)
                #expect(Set(error.violations.map(\.field)) == ["title", "actions[0]", "actions[1]"])
            }
            await expectCode(.invalidArgument) { _ = try await system.addAction(routine, " ") }
        }
    }

    @Test("action ids stay the same when another action is removed; order is creation order")
    func stableIDs() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest, actions: ["A", "B", "C"])
            let after = try await system.removeAction(routine, routine.actions[0].id)
            #expect(after.actions.map(\.id) == [routine.actions[1].id, routine.actions[2].id])
            #expect(after.actions.map(\.text) == ["B", "C"])
            let added = try await system.addAction(after, "D")
            #expect(added.actions.map(\.text) == ["B", "C", "D"])
            #expect(added.actions.prefix(2).map(\.id) == after.actions.map(\.id))
            await expectCode(.notFound) { _ = try await system.removeAction(added, routine.actions[0].id) }
        }
    }

    @Test("ticks are idempotent and reset at local midnight in Taipei and in Los Angeles")
    func midnightReset() async throws {
        for zone in ["Asia/Taipei", "America/Los_Angeles"] {
            try await System.with { system in
                let (nest, _) = try await system.nest()
                let routine = try await system.routine(in: nest)
                system.set("2026-03-12 23:58", in: zone)
                try await system.tick(routine, 0, zone: zone)
                let twice = try await system.tick(routine, 0, zone: zone)
                #expect(twice.doneCount == 1 && twice.total == 3 && twice.date == "2026-03-12", "\(zone)")
                system.clock.advance(by: 60)
                #expect(try await system.progress(routine, zone: zone).doneCount == 1, "\(zone) 23:59")
                system.clock.advance(by: 60)
                let next = try await system.progress(routine, zone: zone)
                #expect(next.date == "2026-03-13" && next.doneCount == 0 && next.total == 3, "\(zone) midnight")
                let yesterday = try await system.progress(routine, zone: zone, date: "2026-03-12")
                #expect(yesterday.doneCount == 1)
                let undone = try await system.tick(routine, 0, done: false, zone: zone)
                #expect(undone.doneCount == 0)
                #expect(try await system.progress(routine, zone: zone, date: "2026-03-12").doneCount == 1)
            }
        }
    }

    @Test("a tick is recorded for safety in the same transaction, once per action and day")
    func forwardedToSafety() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            try await system.tick(routine, 0)
            try await system.tick(routine, 0)
            try await system.tick(routine, 0, done: false)
            try await system.tick(routine, 0)
            #expect(try await system.routines.relay.pending() == 1)
            try await system.tick(routine, 1)
            system.clock.advance(by: 86_400)
            try await system.tick(routine, 0)
            #expect(try await system.routines.relay.pending() == 3)
        }
    }

    @Test("a 23-hour and a 25-hour DST day are each one day")
    func dstDays() async throws {
        let zone = "America/Los_Angeles"
        // 2026-03-08 has 23 hours there, 2026-11-01 has 25.
        for (day, hoursFrom0010To2350) in [("2026-03-08", 22.0 + 40.0 / 60), ("2026-11-01", 24.0 + 40.0 / 60)] {
            try await System.with(start: System.start.addingTimeInterval(-10 * 86_400)) { system in
                let (nest, _) = try await system.nest(hours: 24 * 400)
                let routine = try await system.routine(in: nest)
                system.set("\(day) 00:10", in: zone)
                let start = system.clock.now()
                try await system.tick(routine, 0, zone: zone)
                system.set("\(day) 23:50", in: zone)
                #expect(abs(system.clock.now().timeIntervalSince(start) / 3600 - hoursFrom0010To2350) < 0.001)
                let late = try await system.progress(routine, zone: zone)
                #expect(late.date == day && late.doneCount == 1, "\(day) 23:50")
                system.clock.advance(by: 20 * 60)
                let next = try await system.progress(routine, zone: zone)
                #expect(next.date != day && next.doneCount == 0, "\(day) after midnight")
            }
        }
    }

    @Test("a traveller keeps today's ticks when the zone changes; each belongs to the date where it was made")
    func traveller() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            // 2026-03-10 20:00 in Taipei.
            try await system.tick(routine, 0, zone: "Asia/Taipei")
            // Eleven hours later she lands in Los Angeles: 2026-03-10 23:00 there, still the same date.
            system.clock.advance(by: 11 * 3600)
            let landed = try await system.progress(routine, zone: "America/Los_Angeles")
            #expect(landed.date == "2026-03-10" && landed.doneCount == 1)
            let more = try await system.tick(routine, 1, zone: "America/Los_Angeles")
            #expect(more.doneCount == 2)
            // In Taipei it is already the 11th: a new day there, and the 10th keeps both ticks.
            #expect(try await system.progress(routine, zone: "Asia/Taipei").doneCount == 0)
            #expect(try await system.progress(routine, zone: "Asia/Taipei", date: "2026-03-10").doneCount == 2)
        }
    }

    @Test("removing an action drops it from today's total; past days keep their counts; the streak")
    func historyAndStreak() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest, actions: ["A", "B"])
            // Three full days: the 10th, 11th and 12th (Taipei), then one of two on the 13th.
            for day in 0..<3 {
                try await system.tick(routine, 0)
                try await system.tick(routine, 1)
                if day < 2 { system.clock.advance(by: 86_400) }
            }
            var history = try await system.history(routine, from: "2026-03-09", to: "2026-03-12")
            #expect(history.days.map(\.date) == ["2026-03-09", "2026-03-10", "2026-03-11", "2026-03-12"])
            #expect(history.days.map(\.doneCount) == [0, 2, 2, 2])
            #expect(history.days.map(\.total) == [0, 2, 2, 2])
            #expect(history.currentStreak == 3)
            system.clock.advance(by: 86_400)
            try await system.tick(routine, 0)
            history = try await system.history(routine, from: "2026-03-12", to: "2026-03-13")
            #expect(history.currentStreak == 3, "today is not over: the streak runs to yesterday")
            #expect(history.days.last?.doneCount == 1)
            // B goes today: today is complete with A alone; past days still count B.
            let removed = try await system.removeAction(routine, routine.actions[1].id)
            #expect(removed.actions.count == 1)
            let today = try await system.progress(routine)
            #expect(today.doneCount == 1 && today.total == 1)
            history = try await system.history(routine, from: "2026-03-10", to: "2026-03-13")
            #expect(history.days.map(\.total) == [2, 2, 2, 1])
            #expect(history.days.map(\.doneCount) == [2, 2, 2, 1])
            #expect(history.currentStreak == 4)
            await expectCode(.invalidArgument) {
                _ = try await system.history(routine, from: "2026-03-13", to: "2026-03-10")
            }
            await expectCode(.invalidArgument) {
                _ = try await system.history(routine, from: "2025-03-12", to: "2026-03-13")
            }
            _ = try await system.history(routine, from: "2025-03-13", to: "2026-03-13")
            await expectCode(.invalidArgument) {
                _ = try await system.history(routine, from: "2026-02-30", to: "2026-03-13")
            }
        }
    }

    @Test("the owner edits and reads anyone's progress; the sitter reads and ticks only; others get NOT_FOUND")
    func access() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            await expectCode(.permissionDenied) { _ = try await system.routine(in: nest, as: "sam") }
            await expectCode(.permissionDenied) { _ = try await system.addAction(routine, "More", as: "sam") }
            await expectCode(.permissionDenied) {
                _ = try await system.removeAction(routine, routine.actions[0].id, as: "sam")
            }
            var delete = Hearth_Routines_V1_DeleteRoutineRequest()
            delete.routineID = routine.id
            await expectCode(.permissionDenied) {
                _ = try await system.routines.deleteRoutine(delete, callContext("sam"))
            }
            try await system.tick(routine, 0)
            #expect(try await system.progress(routine, of: "sam", as: "olivia").doneCount == 1)
            await expectCode(.permissionDenied) { _ = try await system.progress(routine, of: "olivia", as: "sam") }

            var get = Hearth_Routines_V1_GetRoutineRequest()
            get.routineID = routine.id
            var list = Hearth_Routines_V1_ListRoutinesRequest()
            list.nestID = nest
            await expectCode(.notFound) { _ = try await system.routines.getRoutine(get, callContext("mallory")) }
            await expectCode(.notFound) { _ = try await system.routines.listRoutines(list, callContext("mallory")) }
            await expectCode(.notFound) { _ = try await system.routine(in: nest, as: "mallory") }
            await expectCode(.notFound) { try await system.tick(routine, 0, as: "mallory") }
            await expectCode(.notFound) { _ = try await system.progress(routine, as: "mallory") }
            await expectCode(.notFound) {
                _ = try await system.history(routine, from: "2026-03-10", to: "2026-03-10", as: "mallory")
            }
            await expectCode(.notFound) { _ = try await system.addAction(routine, "x", as: "mallory") }
            await expectCode(.notFound) { _ = try await system.routines.deleteRoutine(delete, callContext("mallory")) }

            list.category = "Evening"
            #expect(try await system.routines.listRoutines(list, callContext("sam")).routines.count == 1)
            list.category = "Morning"
            #expect(try await system.routines.listRoutines(list, callContext("sam")).routines.isEmpty)
            _ = try await system.routines.deleteRoutine(delete, callContext("olivia"))
            await expectCode(.notFound) { _ = try await system.routines.getRoutine(get, callContext("olivia")) }
        }
    }

    @Test("the owner reads a sitter's days in the sitter's zone, wherever the owner is; answers name their zone")
    func ownerInAnotherZone() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            let evening = try await system.routine(in: nest)
            // 2026-03-12 08:00 in Taipei is 03-11 17:00 in Los Angeles, where the owner is.
            system.set("2026-03-12 08:00", in: "Asia/Taipei")
            _ = try await system.tick(routine, 0)
            let la = "America/Los_Angeles"
            let today = try await system.progress(routine, zone: la, of: "sam", as: "olivia")
            #expect(today.date == "2026-03-12" && today.doneCount == 1 && today.timeZone == "Asia/Taipei")
            let named = try await system.progress(routine, zone: la, date: "2026-03-12", of: "sam", as: "olivia")
            #expect(named.doneCount == 1, "the sitter's date, though not begun where the owner is")
            let history = try await system.history(
                routine,
                from: "2026-03-11",
                to: "2026-03-12",
                zone: la,
                of: "sam",
                as: "olivia"
            )
            #expect(history.days.map(\.doneCount) == [0, 1] && history.timeZone == "Asia/Taipei")
            // Their own progress stays in the zone they ask in.
            let own = try await system.progress(routine, zone: la, as: "olivia")
            #expect(own.date == "2026-03-11" && own.timeZone == la)

            // A sitter in Los Angeles, the owner in Taipei: the streak counts the sitter's days.
            for day in ["2026-03-10", "2026-03-11"] {
                system.set("\(day) 20:00", in: la)
                for action in 0..<3 { _ = try await system.tick(evening, action, zone: la) }
            }
            system.set("2026-03-12 18:00", in: la)  // 03-13 10:00 in Taipei
            _ = try await system.tick(evening, 0, zone: la)
            let streak = try await system.history(
                evening,
                from: "2026-03-10",
                to: "2026-03-12",
                of: "sam",
                as: "olivia"
            )
            #expect(streak.currentStreak == 2 && streak.days.map(\.doneCount) == [3, 3, 1] && streak.timeZone == la)
        }
    }

    @Test("the role cache lasts 30 s: a sitter whose session ended keeps access until it expires, then NOT_FOUND")
    func roleCacheExpires() async throws {
        try await System.with { system in
            let (nest, session) = try await system.nest()
            let routine = try await system.routine(in: nest)
            _ = try await system.progress(routine)
            let misses = system.roles.missCount
            _ = try await system.progress(routine)
            #expect(system.roles.missCount == misses, "asked checkins again within 30 s")

            var end = Hearth_Checkins_V1_EndSessionRequest()
            end.sessionID = session
            _ = try await system.checkins.endSession(end, callContext("olivia"))
            system.clock.advance(by: 29)
            _ = try await system.progress(routine)
            system.clock.advance(by: 2)
            await expectCode(.notFound) { _ = try await system.progress(routine) }
            #expect(system.roles.missCount == misses + 1)
        }
    }

    @Test("with checkins stopped, routines fails closed with UNAVAILABLE")
    func checkinsDown() async throws {
        let clock = ManualClock(System.start)
        // A port nothing listens on: bind one, note it, close it.
        let port = try await withServer(services: []) { _, port in port }
        let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
        let roles = CachedNestRoles(
            source: CheckinsNestRoles(client: client, internalCredential: System.secret),
            clock: clock
        )
        let routines = try RoutinesService(location: .inMemory, roles: roles, clock: clock)
        var request = Hearth_Routines_V1_ListRoutinesRequest()
        request.nestID = "any"
        await expectCode(.unavailable) { _ = try await routines.listRoutines(request, callContext("olivia")) }
        await client.close()
    }
}
