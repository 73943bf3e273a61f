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
let earlyMonday = at("2026-06-01T10:00:00Z")

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
