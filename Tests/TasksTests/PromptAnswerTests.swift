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

@Suite("Tasks: answering prompts", .timeLimit(.minutes(1)))
struct PromptAnswerTests {
    @Test("pending prompts: due only, highest priority first then earliest, limit 1-100, with a total")
    func ordering() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let a = try await system.create(times: [TasksSystem.time(.morning)], days: 1)
            let b = try await system.create(times: [TasksSystem.time("08:00"), TasksSystem.time(.afternoon)], days: 1)
            _ = try await system.create(times: [TasksSystem.time("08:00")], days: 1, start: "2026-06-02")
            _ = try await system.create("ben", times: [TasksSystem.time("07:00")], days: 1)
            #expect(try await system.pending().total == 0)

            try await system.advance(to: at("2026-06-01T19:00:00Z"))  // 15:00 in New York
            let bPrompts = try await system.prompts(b.task.id)
            let aPrompt = try await system.prompts(a.task.id)[0]
            var pending = try await system.pending()
            #expect(pending.total == 3)
            #expect(pending.prompts.map(\.id) == [bPrompts[0].id, aPrompt.id, bPrompts[1].id])
            #expect(pending.prompts.allSatisfy { $0.state == .due })
            #expect(try await system.pending(limit: 2).prompts.count == 2)
            #expect(try await system.pending(limit: 2).total == 3)
            #expect(try await system.pending(limit: 100).prompts.count == 3)
            #expect(try await system.pending(task: a.task.id).prompts.map(\.id) == [aPrompt.id])
            await expectCode(.invalidArgument) { _ = try await system.pending(limit: 101) }
            await expectCode(.notFound) { _ = try await system.pending(task: "no-such-task") }
            #expect(try await system.pending("ben").prompts.count == 1)

            // A higher priority comes first, whatever its time.
            try await system.service.store.base.writer.write { db in
                try db.execute(sql: "UPDATE prompt SET priority = 0.9 WHERE id = ?", arguments: [bPrompts[1].id])
            }
            pending = try await system.pending()
            #expect(pending.prompts.map(\.id) == [bPrompts[1].id, bPrompts[0].id, aPrompt.id])
        }
    }

    @Test(
        "answering records the check-in with the prompt; the same answer again is the same result, a different one ALREADY_EXISTS"
    )
    func idempotentAndConflicting() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            let prompt = created.nextPrompt
            do {
                _ = try await system.respond(prompt.id)
                Issue.record("a prompt was answered before it was due")
            } catch {
                #expect(RPCError(answering: error).code == .failedPrecondition)
                #expect(RPCError(answering: error).message.contains("not due yet; it opens at 2026-06-01T13:00:00Z"))
            }

            // A time finer than the store keeps (it keeps milliseconds): the answer and its repeat
            // (read back from the store) must still be equal.
            try await system.advance(to: at("2026-06-01T13:30:00Z").addingTimeInterval(0.123_456_789))
            let answer = try await system.respond(prompt.id, insights: [" margins are thin ", "ask Dr. Lee"])
            #expect(answer.prompt.state == .responded && answer.prompt.respondedAt.iso == "2026-06-01T13:30:00Z")
            #expect(answer.checkIn.promptID == prompt.id && answer.checkIn.question == prompt.question)
            #expect(answer.checkIn.questionType == "morning_intention" && answer.checkIn.timeOfDay == .morning)
            #expect(answer.checkIn.responseText == "Leaning towards yes" && answer.checkIn.energy == 4)
            #expect(answer.checkIn.insights == ["margins are thin", "ask Dr. Lee"] && !answer.checkIn.hasFocus)
            #expect(try await system.service.relay.pending() == 1, "the answer counts as activity for safety")

            try await system.advance(by: 60)
            let again = try await system.respond(prompt.id, insights: ["margins are thin", "ask Dr. Lee"])
            #expect(again.checkIn == answer.checkIn && again.prompt == answer.prompt)
            #expect(try await system.service.relay.pending() == 1)
            await expectCode(.alreadyExists) { _ = try await system.respond(prompt.id, "Actually no") }
            await expectCode(.alreadyExists) { _ = try await system.respond(prompt.id, energy: 5) }
            #expect(try await system.task(created.task.id).checkIns.count == 1)
            #expect(try await system.pending().total == 0)
        }
    }

    @Test("an unanswered prompt becomes MISSED after 24 h; answering it then names when it expired")
    func expiry() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(times: [TasksSystem.time(.morning)], days: 2)
            let first = created.nextPrompt
            try await system.advance(to: at("2026-06-02T12:59:59Z"))
            #expect(try await system.prompts(created.task.id).map(\.state) == [.due, .scheduled])
            try await system.advance(to: at("2026-06-02T13:00:00Z"))
            #expect(try await system.prompts(created.task.id).map(\.state) == [.missed, .due])
            do {
                _ = try await system.respond(first.id)
                Issue.record("an expired prompt was answered")
            } catch {
                let answer = RPCError(answering: error)
                #expect(
                    answer.code == .failedPrecondition && answer.message.contains("expired at 2026-06-02T13:00:00Z")
                )
            }
            await expectCode(.failedPrecondition) {
                _ = try await system.service.dismissPrompt(.with { $0.promptID = first.id }, callContext("ana"))
            }
            let summary = try await system.task(created.task.id).summary
            #expect(summary.promptsScheduled == 2 && summary.missed == 1 && summary.answered == 0)
            #expect(summary.responseRate == 0)
            #expect(try await system.pending().prompts.map(\.day) == [2])
        }
    }

    @Test("ListPendingPrompts answers 10 by default; a task holds 1,000 extra check-ins; ids and types at their limits")
    func limits() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            for hour in 0..<12 {
                _ = try await system.create(times: [TasksSystem.time(String(format: "06:%02d", hour))], days: 1)
            }
            try await system.advance(to: at("2026-06-01T10:30:00Z"))
            let pending = try await system.pending()
            #expect(pending.prompts.count == 10 && pending.total == 12)

            let task = try await system.create(times: [TasksSystem.time(.evening)], days: 1).task.id
            var extra = Hearth_Tasks_V1_RecordCheckInRequest()
            extra.taskID = task
            extra.responseText = "noted"
            extra.questionType = String(repeating: "q", count: 50)
            extra.clientRequestID = String(repeating: "r", count: 100)
            let first = try await system.service.recordCheckIn(extra, callContext("ana"))
            #expect(first.questionType.count == 50)
            extra.clientRequestID = String(repeating: "r", count: 101)
            await expectCode(.invalidArgument) { _ = try await system.service.recordCheckIn(extra, callContext("ana")) }
            // Every bad field at once, the answer's and the request id's.
            extra.responseText = ""
            let fields = await violatedFields { _ = try await system.service.recordCheckIn(extra, callContext("ana")) }
            #expect(fields == ["response_text", "client_request_id"])
            extra.responseText = "noted"
            extra.clientRequestID = ""
            for _ in 1..<TaskRules.maxExtraCheckIns {
                _ = try await system.service.recordCheckIn(extra, callContext("ana"))
            }
            await expectCode(.failedPrecondition) {
                _ = try await system.service.recordCheckIn(extra, callContext("ana"))
            }
            #expect(try await system.allCheckIns(task).checkIns.count == 1000)
        }
    }

    @Test("a push not yet sent is taken back when its prompt is answered, and dropped once the prompt expired")
    func unsentPushes() async throws {
        try await withTasksSystem(now: earlyMonday, webhookStatuses: Array(repeating: 503, count: 1000)) { system in
            let created = try await system.create(
                times: [TasksSystem.time(.morning), TasksSystem.time(.evening)],
                days: 1
            )
            let prompts = try await system.prompts(created.task.id)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            #expect(system.webhook.received.count == 1, "the first attempt failed (503) and waits to retry")
            _ = try await system.respond(prompts[0].id)
            try await system.advance(by: 3600)
            #expect(system.webhook.received.count == 1, "answered before it went out: never sent")

            // The evening prompt's push keeps failing until the prompt has expired: then it is dropped.
            var time = at("2026-06-01T23:00:00Z")
            while time < at("2026-06-02T23:00:00Z") {
                try await system.advance(to: time)
                time = time.addingTimeInterval(300)
            }
            let attempts = system.webhook.received.count
            #expect(attempts > 100, "retried all along (at most 5 min apart)")
            try await system.advance(to: at("2026-06-02T23:00:00Z"))
            try await system.advance(by: 3600)
            #expect(system.webhook.received.count == attempts, "no attempt once it expired")
            #expect(try await system.service.store.base.writer.read { db in try Outbox.pending(in: db) } == 0)
            let reason = try await system.service.store.base.writer.read { db in
                try String.fetchOne(db, sql: "SELECT last_error FROM push_outbox WHERE failed_at IS NOT NULL")
            }
            #expect(reason?.hasPrefix("expired at 2026-06-02T23:00:00Z") == true)
        }
    }

    @Test("answers are checked field by field at their limits")
    func answerValidation() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(times: [TasksSystem.time(.morning)], days: 1)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            let id = created.nextPrompt.id
            #expect(await violatedFields { _ = try await system.respond(id, " ") } == ["response_text"])
            #expect(
                await violatedFields { _ = try await system.respond(id, String(repeating: "x", count: 5001)) } == [
                    "response_text"
                ]
            )
            #expect(
                await violatedFields { _ = try await system.respond(id, energy: 0, mood: 6, focus: 9) } == [
                    "energy", "mood", "focus",
                ]
            )
            #expect(
                await violatedFields { _ = try await system.respond(id, insights: Array(repeating: "x", count: 11)) }
                    == [
                        "insights"
                    ]
            )
            #expect(await violatedFields { _ = try await system.respond(id, insights: ["ok", ""]) } == ["insights[1]"])
            #expect(
                await violatedFields {
                    _ = try await system.respond(id, insights: [String(repeating: "i", count: 501)])
                }
                    == [
                        "insights[0]"
                    ]
            )
            var typed = Hearth_Tasks_V1_RespondToPromptRequest()
            typed.promptID = id
            typed.responseText = "fine"
            typed.questionType = String(repeating: "t", count: 51)
            #expect(
                await violatedFields { _ = try await system.service.respondToPrompt(typed, callContext("ana")) } == [
                    "question_type"
                ]
            )
            // Every limit itself passes.
            let answer = try await system.respond(
                id,
                String(repeating: "x", count: 5000),
                energy: 1,
                mood: 5,
                focus: 5,
                insights: Array(repeating: String(repeating: "i", count: 500), count: 10)
            )
            #expect(answer.checkIn.insights.count == 10 && answer.checkIn.mood == 5)
        }
    }

    @Test("only the owner sees or answers anything of a task; others get NOT_FOUND")
    func strangers() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(days: 2)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            let task = created.task.id
            let prompt = created.nextPrompt.id
            let ben = callContext("ben")
            await expectCode(.notFound) { _ = try await system.task(task, user: "ben") }
            await expectCode(.notFound) { _ = try await system.prompts(task, user: "ben") }
            await expectCode(.notFound) { _ = try await system.respond(prompt, user: "ben") }
            await expectCode(.notFound) { _ = try await system.pending("ben", task: task) }
            await expectCode(.notFound) {
                _ = try await system.service.dismissPrompt(.with { $0.promptID = prompt }, ben)
            }
            await expectCode(.notFound) { _ = try await system.service.cancelTask(.with { $0.taskID = task }, ben) }
            await expectCode(.notFound) {
                _ = try await system.service.recordCheckIn(
                    .with {
                        $0.taskID = task
                        $0.responseText = "hi"
                    },
                    ben
                )
            }
            #expect(try await system.pending("ben").total == 0)
            #expect(try await system.service.listTasks(.init(), ben).tasks.isEmpty)
            await expectCode(.unauthenticated) { _ = try await system.service.listTasks(.init(), callContext("")) }
            // Nothing changed for the owner.
            #expect(try await system.pending().prompts.map(\.id) == [prompt])
        }
    }

    @Test("dismissing: idempotent, never pushed, not answerable")
    func dismiss() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(times: [TasksSystem.time(.morning)], days: 2)
            let prompts = try await system.prompts(created.task.id)
            let dismiss = { (id: String) in
                try await system.service.dismissPrompt(.with { $0.promptID = id }, callContext("ana"))
            }
            let dismissed = try await dismiss(prompts[1].id)  // not yet due: may be dismissed ahead
            #expect(dismissed.state == .dismissed && dismissed.dismissedAt.iso == "2026-06-01T10:00:00Z")
            #expect(try await dismiss(prompts[1].id) == dismissed)
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            _ = try await system.respond(prompts[0].id)
            await expectCode(.failedPrecondition) { _ = try await dismiss(prompts[0].id) }
            #expect(try await system.task(created.task.id).summary.responseRate == 1)
            try await system.advance(to: at("2026-06-02T13:00:00Z"))
            await expectCode(.failedPrecondition) { _ = try await system.respond(prompts[1].id) }
            #expect(try system.pushes().map(\.promptID) == [prompts[0].id])
            // Dismissed ahead of its time, it never counts against the rate, also once its time came.
            let summary = try await system.task(created.task.id).summary
            #expect(summary.answered == 1 && summary.dismissed == 1 && summary.responseRate == 1)
        }
    }
}
