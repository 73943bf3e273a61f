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

/// 2026-06-01 06:00 in New York (EDT, UTC-4).
private let earlyMonday = at("2026-06-01T10:00:00Z")

@Suite("Tasks: creating tasks and their prompts", .timeLimit(.minutes(1)))
struct TaskCreationTests {
    @Test("2 times x 5 days is 10 prompts and x 3 days is 6, with questions that fit the time of day")
    func seedCounts() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let five = try await system.create(days: 5)
            #expect(five.promptsScheduled == 10)
            let three = try await system.create(days: 3)
            #expect(three.promptsScheduled == 6)

            let prompts = try await system.prompts(five.task.id)
            #expect(prompts.count == 10)
            let first = prompts[0]
            #expect(first.scheduledAt.iso == "2026-06-01T13:00:00Z")
            #expect(first.expiresAt.iso == "2026-06-02T13:00:00Z")
            #expect(first.localDate == "2026-06-01" && first.localTime == "09:00" && first.day == 1)
            #expect(first.timeOfDay == .morning && first.state == .scheduled && first.priority == 0.7)
            #expect(
                first.question
                    == "Good morning! Let's check in on \u{201C}Should I expand my dental practice?\u{201D}. What feels most important about it today?"
            )
            #expect(
                first.context == "Day 1 of 5: morning check-in for \u{201C}Should I expand my dental practice?\u{201D}"
            )
            #expect(prompts[1].scheduledAt.iso == "2026-06-01T23:00:00Z")
            #expect(prompts[1].question.hasPrefix("Good evening!") && prompts[1].questionType == "evening_reflection")
            #expect(prompts[9].context.hasPrefix("Day 5 of 5: evening check-in"))
            #expect(prompts.map(\.scheduledAt.seconds) == prompts.map(\.scheduledAt.seconds).sorted())
            #expect(five.nextPrompt == first)
            #expect(five.task.endDate == "2026-06-05" && five.task.state == .active)
            #expect(five.task.checkInTimes == [TasksSystem.time(.morning), TasksSystem.time(.evening)])
        }
    }

    @Test("a title has at most 2,400 bytes: 720 prompts quoting it twice still fit in one ListPrompts answer")
    func titleBytes() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}"  // 25 bytes, one character
            let title = String(repeating: family, count: 96)
            #expect(title.utf8.count == TaskRules.maxTitleBytes && title.count == 96)
            let times = (0..<8).map { TasksSystem.time(String(format: "%02d:00", 10 + $0)) }
            let made = try await system.create(title: title, times: times, days: 90)
            #expect(made.promptsScheduled == 720)
            let answer = try await system.service.listPrompts(.with { $0.taskID = made.task.id }, callContext("ana"))
            #expect(answer.prompts.count == 720)
            #expect(try answer.serializedData().count < ServerConfiguration.defaultMaxFrameSize)
            let fields = await violatedFields {
                _ = try await system.create(title: title + "a", times: times, days: 90)
            }
            #expect(fields == ["title"])
        }
    }

    @Test("a task created at noon gets no morning prompt today")
    func createdAtNoon() async throws {
        try await withTasksSystem(now: at("2026-06-01T16:00:00Z")) { system in
            let created = try await system.create(days: 3)
            #expect(created.promptsScheduled == 5)
            #expect(created.nextPrompt.localDate == "2026-06-01" && created.nextPrompt.timeOfDay == .evening)
            // A time exactly now is not past.
            let now = try await system.create(times: [TasksSystem.time("12:00")], days: 1)
            #expect(now.promptsScheduled == 1 && now.nextPrompt.scheduledAt.iso == "2026-06-01T16:00:00Z")
        }
    }

    @Test(
        "DST in America/New_York: a skipped 02:30 moves to 03:00, a repeated 01:30 fires once (its first)",
        arguments: [
            (
                "America/New_York", "2026-03-07", "02:30",
                ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
            ),
            (
                "America/New_York", "2026-10-31", "01:30",
                ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
            ),
            (
                "Europe/London", "2026-03-28", "01:30",
                ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
            ),
            (
                "Europe/London", "2026-10-24", "01:30",
                ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
            ),
            (
                "Asia/Kolkata", "2026-06-02", "09:00",
                ["2026-06-02T03:30:00Z", "2026-06-03T03:30:00Z", "2026-06-04T03:30:00Z"]
            ),
        ]
    )
    func daylightSaving(zone: String, start: String, time: String, expected: [String]) async throws {
        try await withTasksSystem(now: at("2026-03-01T12:00:00Z")) { system in
            let created = try await system.create(times: [TasksSystem.time(time)], days: 3, zone: zone, start: start)
            let prompts = try await system.prompts(created.task.id)
            #expect(prompts.map(\.scheduledAt.iso) == expected)
            #expect(prompts.allSatisfy { $0.localTime == time })
            #expect(Set(prompts.map(\.localDate)).count == 3)
        }
    }

    @Test("two times the clocks skip land on one minute: one prompt that day, not two")
    func gapCollision() async throws {
        try await withTasksSystem(now: at("2026-03-01T12:00:00Z")) { system in
            let created = try await system.create(
                times: [TasksSystem.time("02:00"), TasksSystem.time("02:30")],
                days: 2,
                start: "2026-03-08"
            )
            #expect(created.promptsScheduled == 3)
            let prompts = try await system.prompts(created.task.id)
            #expect(
                prompts.map(\.scheduledAt.iso) == [
                    "2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:30:00Z",
                ]
            )
        }
    }

    @Test("a half-hour zone: Asia/Kolkata's late-night 22:45 is 17:15 UTC and asks a late-night question")
    func halfHourZone() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(
                times: [TasksSystem.time("22:45"), TasksSystem.time(.morning)],
                days: 1,
                zone: "Asia/Kolkata",
                start: "2026-06-02"
            )
            let prompts = try await system.prompts(created.task.id)
            #expect(prompts.map(\.scheduledAt.iso) == ["2026-06-02T03:30:00Z", "2026-06-02T17:15:00Z"])
            #expect(prompts[1].timeOfDay == .lateNight && prompts[1].question.hasPrefix("Before you rest"))
            #expect(created.task.checkInTimes == [TasksSystem.time("22:45"), TasksSystem.time(.morning)])
        }
    }

    @Test("CreateTask with a client_request_id: a retry gets the same task and makes no prompts, even a day later")
    func createTaskRetry() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let first = try await system.create(start: "2026-06-01", requestID: "new-task-1")
            let again = try await system.create(start: "2026-06-01", requestID: "new-task-1")
            #expect(again == first)
            // The id again with another title, length or zone is a mistake, not a retry.
            await expectCode(.alreadyExists) {
                _ = try await system.create(title: "another title", start: "2026-06-01", requestID: "new-task-1")
            }
            await expectCode(.alreadyExists) {
                _ = try await system.create(days: 3, start: "2026-06-01", requestID: "new-task-1")
            }
            // A day later its start date is in the past: the retry still gets the task.
            try await system.advance(by: 2 * 86_400)
            let late = try await system.create(start: "2026-06-01", requestID: "new-task-1")
            #expect(late.task.id == first.task.id && late.promptsScheduled == first.promptsScheduled)
            // Another user's same id, and no id, make tasks of their own.
            #expect(
                try await system.create("bo", start: "2026-06-03", requestID: "new-task-1").task.id != first.task.id
            )
            #expect(try await system.create(start: "2026-06-03").task.id != first.task.id)
            #expect(try await system.service.listTasks(.init(), callContext("ana")).tasks.count == 2)
            await expectCode(.invalidArgument) {
                _ = try await system.create(start: "2026-06-03", requestID: String(repeating: "x", count: 129))
            }
            _ = try await system.create(start: "2026-06-03", requestID: String(repeating: "x", count: 128))
        }
    }

    @Test("every invalid field is named at its boundary")
    func validation() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            // Boundaries that pass.
            _ = try await system.create(title: String(repeating: "é", count: 200), days: 90)
            _ = try await system.create(
                times: (0..<8).map { TasksSystem.time(String(format: "%02d:00", $0 + 10)) },
                days: 1
            )
            _ = try await system.create(
                times: [TasksSystem.time("23:59"), TasksSystem.time("00:00")],
                days: 1,
                start: "2026-06-01"
            )
            _ = try await system.create(days: 1, start: "2027-06-01")

            #expect(await violatedFields { _ = try await system.create(title: "  ") } == ["title"])
            #expect(
                await violatedFields { _ = try await system.create(title: String(repeating: "a", count: 201)) } == [
                    "title"
                ]
            )
            #expect(await violatedFields { _ = try await system.create(times: []) } == ["check_in_times"])
            let nine = (0..<9).map { TasksSystem.time(String(format: "%02d:00", $0 + 10)) }
            #expect(await violatedFields { _ = try await system.create(times: nine) } == ["check_in_times"])
            #expect(
                await violatedFields {
                    _ = try await system.create(times: [TasksSystem.time(.morning), TasksSystem.time("09:00")])
                } == ["check_in_times[1]"]
            )
            for bad in ["24:00", "9:00", "09:60", "0900", "", "ab:cd", "+9:00", "-0:00", "09:+5", "٠٩:00"] {
                #expect(
                    await violatedFields { _ = try await system.create(times: [TasksSystem.time(bad)]) } == [
                        "check_in_times[0]"
                    ]
                )
            }
            #expect(
                await violatedFields { _ = try await system.create(times: [Hearth_Tasks_V1_CheckInTime()]) } == [
                    "check_in_times[0]"
                ]
            )
            #expect(await violatedFields { _ = try await system.create(days: 0) } == ["duration_days"])
            #expect(await violatedFields { _ = try await system.create(days: 91) } == ["duration_days"])
            #expect(await violatedFields { _ = try await system.create(zone: "EST") } == ["time_zone"])
            #expect(await violatedFields { _ = try await system.create(start: "2026-05-31") } == ["start_date"])
            #expect(await violatedFields { _ = try await system.create(start: "2027-06-02") } == ["start_date"])
            #expect(await violatedFields { _ = try await system.create(start: "June 1") } == ["start_date"])
            #expect(
                await violatedFields { _ = try await system.create(title: "", times: [], days: 0, zone: "Nowhere") }
                    == ["title", "check_in_times", "duration_days", "time_zone"]
            )
            #expect(
                await violatedFields { _ = try await system.create(zone: "Nowhere", start: "2026-13-45") }
                    == ["time_zone", "start_date"]
            )
            #expect(try await system.service.listTasks(.init(), callContext("ana")).tasks.count == 4)
        }
    }
}

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

@Suite("Tasks: rules")
struct TaskRulesTests {
    @Test("parts of the day for custom times, at their edges")
    func partsOfDay() {
        let cases: [(String, PartOfDay)] = [
            ("04:59", .lateNight), ("05:00", .morning), ("11:59", .morning), ("12:00", .afternoon),
            ("16:59", .afternoon), ("17:00", .evening), ("21:59", .evening), ("22:00", .lateNight),
            ("00:00", .lateNight),
        ]
        for (text, part) in cases {
            #expect(TaskRules.clockTime(text)?.partOfDay == part, "\(text)")
        }
        #expect(TaskRules.DailyTime(storedForm: "LATE_NIGHT") == TaskRules.DailyTime(hour: 22, minute: 0))
        #expect(TaskRules.DailyTime(storedForm: "07:05")?.preset == nil)
    }

    @Test("response rate counts only prompts whose time has come, never cancelled ones nor ones dismissed early")
    func rate() {
        let summary = TaskRules.summary(
            prompts: [
                (.responded, true), (.missed, true), (.dismissed, true), (.due, true), (.scheduled, false),
                (.cancelled, true), (.dismissed, false),
            ],
            checkIns: []
        )
        #expect(summary.scheduled == 6 && summary.dismissed == 2 && summary.responseRate == 0.25)
    }
}

@Suite("Tasks: query plans")
struct TaskQueryPlanTests {
    @Test("a task's extra check-ins are counted through its own index, not every user's unprompted check-ins")
    func extraCheckInsByTask() throws {
        let store = try TaskStore(location: .inMemory)
        let plan = try store.base.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(TaskStore.extraCheckInsSQL)", arguments: ["t"])
                .map { $0["detail"] as String }.joined(separator: "\n")
        }
        #expect(plan.contains("INDEX check_in_by_task (task_id=?)"), "\(plan)")
    }
}
