import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// RecordCheckIn with `prompt_id`: the plan's second step, after RespondToPrompt has already
/// recorded the check-in with the answer. No second check-in.
@Suite("Tasks: RecordCheckIn with a prompt", .timeLimit(.minutes(1)))
struct RecordWithPromptTests {
    static func record(
        _ system: TasksSystem,
        task: String,
        prompt: String,
        text: String = "Leaning towards yes"
    ) async throws -> Hearth_Tasks_V1_CheckIn {
        var request = Hearth_Tasks_V1_RecordCheckInRequest()
        request.taskID = task
        request.promptID = prompt
        request.responseText = text
        request.energy = 4
        request.mood = 3
        return try await system.service.recordCheckIn(request, callContext("ana"))
    }

    @Test("after RespondToPrompt, the same prompt's check-in comes back, whatever the answer; none is added")
    func afterRespond() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            let prompt = created.nextPrompt
            try await system.advance(to: prompt.scheduledAt.date.addingTimeInterval(60))
            let answered = try await system.respond(prompt.id, "Yes, expand")
            for text in ["Yes, expand", "Something else entirely"] {
                let again = try await Self.record(system, task: created.task.id, prompt: prompt.id, text: text)
                #expect(again.id == answered.checkIn.id)
                #expect(again.responseText == "Yes, expand", "the first answer stands")
                #expect(again.promptID == prompt.id)
            }
            let task = try await system.task(created.task.id)
            #expect(task.checkIns.map(\.id) == [answered.checkIn.id])
            #expect(task.summary.answered == 1)
        }
    }

    @Test("a due prompt not yet answered is answered by it: RESPONDED, its check-in, and RespondToPrompt agrees")
    func answersADuePrompt() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            let prompt = created.nextPrompt
            try await system.advance(to: prompt.scheduledAt.date.addingTimeInterval(60))
            let recorded = try await Self.record(system, task: created.task.id, prompt: prompt.id)
            #expect(recorded.promptID == prompt.id && recorded.question == prompt.question)
            let state = try await system.prompts(created.task.id).first { $0.id == prompt.id }
            #expect(state?.state == .responded)
            let same = try await system.respond(prompt.id)
            #expect(same.checkIn.id == recorded.id)
            #expect(try await system.task(created.task.id).checkIns.count == 1)
        }
    }

    @Test("a prompt of another task is INVALID_ARGUMENT; not due yet FAILED_PRECONDITION; unknown NOT_FOUND")
    func refusals() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let first = try await system.create(days: 2)
            let second = try await system.create(title: "Another question", days: 2)
            await expectCode(.failedPrecondition) {
                _ = try await Self.record(system, task: first.task.id, prompt: first.nextPrompt.id)
            }
            try await system.advance(to: first.nextPrompt.scheduledAt.date.addingTimeInterval(60))
            do {
                _ = try await Self.record(system, task: second.task.id, prompt: first.nextPrompt.id)
                Issue.record("a prompt of another task was taken")
            } catch {
                let answer = RPCError(answering: error)
                #expect(answer.code == .invalidArgument)
                #expect(answer.violations.map(\.field) == ["prompt_id"], "\(answer)")
            }
            await expectCode(.notFound) {
                _ = try await Self.record(system, task: first.task.id, prompt: "no-such-prompt")
            }
            // A task that is not the caller's: NOT_FOUND, as without a prompt.
            await expectCode(.notFound) {
                _ = try await Self.record(system, task: "no-such-task", prompt: first.nextPrompt.id)
            }
            #expect(try await system.task(first.task.id).checkIns.isEmpty)
            #expect(try await system.task(second.task.id).checkIns.isEmpty)
        }
    }
}
