import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthRelay
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

@Suite("Tasks: check-ins, summary, cancelling and listing", .timeLimit(.minutes(1)))
struct TaskLifecycleTests {
    @Test("GetTask: check-ins in time order and a summary with per-day averages of the scores given")
    func summary() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 3)
            let prompts = try await system.prompts(created.task.id)
            try await system.advance(to: at("2026-06-01T23:10:00Z"))
            _ = try await system.respond(prompts[1].id, "evening", energy: 2, mood: nil, focus: nil)
            try await system.advance(by: 60)
            _ = try await system.respond(prompts[0].id, "morning, late", energy: 4, mood: 3, focus: nil)

            var extra = Hearth_Tasks_V1_RecordCheckInRequest()
            extra.taskID = created.task.id
            extra.responseText = "Talked to the bank"
            extra.focus = 5
            extra.clientRequestID = "phone-1"
            try await system.advance(to: at("2026-06-02T04:30:00Z"))  // 00:30 on June 2 in New York
            let recorded = try await system.service.recordCheckIn(extra, callContext("ana"))
            #expect(recorded.localDate == "2026-06-02" && recorded.timeOfDay == .lateNight && recorded.promptID.isEmpty)
            #expect(try await system.service.recordCheckIn(extra, callContext("ana")) == recorded)
            extra.responseText = "Something else"
            await expectCode(.alreadyExists) { _ = try await system.service.recordCheckIn(extra, callContext("ana")) }
            #expect(try await system.service.relay.pending() == 3)

            let task = try await system.task(created.task.id)
            #expect(task.checkIns.map(\.responseText) == ["evening", "morning, late", "Talked to the bank"])
            let summary = task.summary
            #expect(summary.promptsScheduled == 6 && summary.answered == 2 && summary.missed == 0)
            #expect(summary.responseRate == 1, "two of the two prompts whose time has come")
            #expect(summary.days.count == 2)
            #expect(summary.days[0].localDate == "2026-06-01" && summary.days[0].checkIns == 2)
            #expect(summary.days[0].energy == 3 && summary.days[0].mood == 3 && !summary.days[0].hasFocus)
            #expect(
                summary.days[1].localDate == "2026-06-02" && summary.days[1].focus == 5 && !summary.days[1].hasEnergy
            )
        }
    }

    @Test(
        "cancelling: open prompts become CANCELLED and are never pushed; missed and answered stay; ListTasks filters by state"
    )
    func cancel() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let cancelled = try await system.create(times: [TasksSystem.time(.morning)], days: 4)
            let finished = try await system.create(times: [TasksSystem.time(.morning)], days: 1)
            let active = try await system.create(times: [TasksSystem.time(.morning)], days: 10)
            let prompts = try await system.prompts(cancelled.task.id)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            _ = try await system.respond(prompts[0].id)
            try await system.advance(to: at("2026-06-03T14:00:00Z"))  // day 2 missed, day 3 due, day 4 ahead

            let cancel = { (id: String) in
                try await system.service.cancelTask(.with { $0.taskID = id }, callContext("ana"))
            }
            let answer = try await cancel(cancelled.task.id)
            #expect(answer.promptsCancelled == 2 && answer.task.state == .cancelled)
            #expect(answer.task.cancelledAt.iso == "2026-06-03T14:00:00Z")
            #expect(
                try await system.prompts(cancelled.task.id).map(\.state) == [
                    .responded, .missed, .cancelled, .cancelled,
                ]
            )
            #expect(try await cancel(cancelled.task.id).promptsCancelled == 0, "cancelling again changes nothing")
            await expectCode(.failedPrecondition) { _ = try await cancel(finished.task.id) }
            await expectCode(.failedPrecondition) { _ = try await system.respond(prompts[2].id) }
            await expectCode(.failedPrecondition) {
                _ = try await system.service.recordCheckIn(
                    .with {
                        $0.taskID = cancelled.task.id
                        $0.responseText = "still thinking"
                    },
                    callContext("ana")
                )
            }

            try await system.advance(to: at("2026-06-04T13:00:00Z"))
            let pushed = Set(try system.pushes().map(\.promptID))
            #expect(!pushed.contains(prompts[3].id), "a cancelled prompt is never pushed")
            // The active task's day 2 expired while the clock jumped from June 1 to June 3: not pushed late.
            let activePrompts = try await system.prompts(active.task.id).map(\.id)
            #expect(pushed.isSuperset(of: [activePrompts[0], activePrompts[2], activePrompts[3]]))
            #expect(!pushed.contains(activePrompts[1]))
            let list = { (state: Hearth_Tasks_V1_TaskState?) in
                var request = Hearth_Tasks_V1_ListTasksRequest()
                if let state { request.state = state }
                return try await system.service.listTasks(request, callContext("ana")).tasks.map(\.id)
            }
            #expect(try await list(nil) == [active.task.id, finished.task.id, cancelled.task.id])
            #expect(try await list(.active) == [active.task.id])
            #expect(try await list(.completed) == [finished.task.id])
            #expect(try await list(.cancelled) == [cancelled.task.id])
            await expectCode(.invalidArgument) { _ = try await list(.unspecified) }
        }
    }

    @Test("a task and its answers survive a restart on the same file")
    func restart() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            let answer = try await system.respond(created.nextPrompt.id)
            try await system.restart()
            let task = try await system.task(created.task.id)
            #expect(task.checkIns == [answer.checkIn] && task.task == created.task)
        }
    }
}

@Suite("Tasks: check-in due pushes", .timeLimit(.minutes(1)))
struct PromptPushTests {
    @Test("each prompt is pushed once, at its time; one that expired while the service was down is not pushed late")
    func pushedOnceOnTime() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            let prompts = try await system.prompts(created.task.id)
            try await system.advance(to: at("2026-06-01T12:59:59Z"))
            #expect(try system.pushes().isEmpty)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            var pushes = try system.pushes()
            try #require(pushes.map(\.promptID) == [prompts[0].id])
            #expect(pushes[0].kind == "tasks.prompt_due" && pushes[0].key == "tasks.prompt.\(prompts[0].id)")
            let body = try JSONSerialization.jsonObject(with: system.webhook.received[0].body) as? [String: Any]
            #expect(body?["userID"] as? String == "ana" && body?["body"] as? String == prompts[0].question)
            try await system.advance(by: 3600)
            #expect(try system.pushes().count == 1, "not pushed twice")

            // Down from before the evening prompt (June 1, 23:00 UTC) until after it expired;
            // the next morning's prompt (June 2, 13:00 UTC) is still open when it comes back.
            try await system.restart { system.clock.set(at("2026-06-02T23:30:00Z")) }
            try await system.settle()
            pushes = try system.pushes()
            #expect(pushes.count == 3 && pushes[0].promptID == prompts[0].id)
            #expect(
                Set(pushes.dropFirst().map(\.promptID)) == [prompts[2].id, prompts[3].id],
                "not the expired prompts[1]"
            )
            try await system.restart()
            try await system.advance(by: 86400 * 2)
            #expect(try system.pushes().count == 3, "a restart sends nothing again")
        }
    }
}
