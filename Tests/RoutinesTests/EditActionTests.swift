import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import RoutinesService

/// EditAction: an action's text changed where it stands (the plan's "edit", which remove and
/// add would not be: they move it to the bottom and drop today's tick).
@Suite("Routines: editing an action")
struct EditActionTests {
    @Test("an edited action keeps its id, its place and today's tick; the text is trimmed")
    func editInPlace() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest, actions: ["Teeth", "Story", "Lights off"])
            try await system.tick(routine, 1)
            let edited = try await system.editAction(routine, routine.actions[1].id, "  Two stories  ")
            #expect(edited.actions.map(\.id) == routine.actions.map(\.id))
            #expect(edited.actions.map(\.text) == ["Teeth", "Two stories", "Lights off"])
            #expect(edited.actions[1].createdAt == routine.actions[1].createdAt)
            #expect(edited.updatedAt.date >= routine.updatedAt.date)
            let progress = try await system.progress(routine)
            #expect(progress.doneCount == 1 && progress.total == 3)
            #expect(progress.done.map(\.actionID) == [routine.actions[1].id])
            // What the sitter reads afterwards is the new text.
            var get = Hearth_Routines_V1_GetRoutineRequest()
            get.routineID = routine.id
            let read = try await system.routines.getRoutine(get, callContext("sam"))
            #expect(read.actions.map(\.text) == ["Teeth", "Two stories", "Lights off"])
        }
    }

    @Test("1 and 280 characters pass; empty and 281 are INVALID_ARGUMENT naming the text, and change nothing")
    func textBounds() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            let id = routine.actions[0].id
            #expect(try await system.editAction(routine, id, "a").actions[0].text == "a")
            let longest = String(repeating: "é", count: 280)
            #expect(try await system.editAction(routine, id, longest).actions[0].text == longest)
            for text in ["", "   ", String(repeating: "x", count: 281)] {
                do {
                    _ = try await system.editAction(routine, id, text)
                    Issue.record("\(text.count) characters were taken")
                } catch {
                    let answer = RPCError(answering: error)
                    #expect(answer.code == .invalidArgument)
                    #expect(answer.violations.map(\.field) == ["text"], "\(answer)")
                }
            }
            var get = Hearth_Routines_V1_GetRoutineRequest()
            get.routineID = routine.id
            #expect(try await system.routines.getRoutine(get, callContext("olivia")).actions[0].text == longest)
        }
    }

    @Test("a removed or unknown action is NOT_FOUND; a sitter is PERMISSION_DENIED; a stranger NOT_FOUND")
    func whoAndWhat() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let routine = try await system.routine(in: nest)
            let removed = try await system.removeAction(routine, routine.actions[0].id)
            await expectCode(.notFound) { _ = try await system.editAction(removed, routine.actions[0].id, "Back") }
            await expectCode(.notFound) { _ = try await system.editAction(removed, "no-such-action", "Back") }
            let id = removed.actions[0].id
            await expectCode(.permissionDenied) { _ = try await system.editAction(removed, id, "Mine", as: "sam") }
            await expectCode(.notFound) { _ = try await system.editAction(removed, id, "Mine", as: "mallory") }
            var get = Hearth_Routines_V1_GetRoutineRequest()
            get.routineID = routine.id
            let unchanged = try await system.routines.getRoutine(get, callContext("olivia"))
            #expect(unchanged.actions.map(\.text) == removed.actions.map(\.text))
        }
    }
}
