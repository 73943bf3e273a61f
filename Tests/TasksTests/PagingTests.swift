import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// 2026-06-01 06:00 in New York.
private let start = at("2026-06-01T10:00:00Z")

@Suite("Tasks: pages and limits", .timeLimit(.minutes(1)))
struct TaskPagingTests {
    @Test("ListTasks gives every task once, newest first, page by page; page_size and page_token are checked")
    func listTasksInPages() async throws {
        try await withTasksSystem(now: start) { system in
            var made: [String] = []
            for index in 0..<45 {
                // Pairs made in the same millisecond: the later made comes first.
                if index % 2 == 0 { try await system.advance(by: 1) }
                made.append(try await system.create(title: "task \(index)", days: 1).task.id)
            }
            let cancelled = Set(made.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            for id in cancelled {
                _ = try await system.service.cancelTask(.with { $0.taskID = id }, callContext("ana"))
            }

            let (all, pages) = try await system.allTasks(pageSize: 0)
            #expect(all == made.reversed())
            #expect(pages == [20, 20, 5], "0 means 20")
            #expect(try await system.allTasks(pageSize: 100).pages == [45])
            #expect(try await system.allTasks(pageSize: 44).pages == [44, 1])
            #expect(try await system.allTasks(pageSize: 45).pages == [45], "no token when nothing follows")
            let (active, activePages) = try await system.allTasks(pageSize: 7, state: .active)
            #expect(active == made.reversed().filter { !cancelled.contains($0) })
            #expect(activePages == [7, 7, 7, 7, 2])
            #expect(try await system.allTasks(pageSize: 0, user: "bo").tasks.isEmpty)

            #expect(await violatedFields { _ = try await system.allTasks(pageSize: 101) } == ["page_size"])
            #expect(await violatedFields { _ = try await system.listTasks(token: "not a token") } == ["page_token"])
            let both = await violatedFields { _ = try await system.listTasks(pageSize: 500, token: "bm8tY29sb24=") }
            #expect(both == ["page_size", "page_token"])
            let every = await violatedFields {
                _ = try await system.listTasks(pageSize: 101, token: "x", state: .unspecified)
            }
            #expect(every == ["state", "page_size", "page_token"], "every bad field at once")
        }
    }

    @Test("a user has at most 50 active tasks; an ended or cancelled one frees a place; a retry is answered")
    func activeTaskCap() async throws {
        try await withTasksSystem(now: start) { system in
            var made: [String] = []
            for index in 0..<TaskRules.maxActiveTasks {
                made.append(try await system.create(days: 1, requestID: "task-\(index)").task.id)
            }
            await expectCode(.resourceExhausted) { _ = try await system.create(days: 1) }
            // Someone else is not counted against her, and a retry of a task she made is answered.
            _ = try await system.create("bo", days: 1)
            #expect(try await system.create(days: 1, requestID: "task-7").task.id == made[7])

            _ = try await system.service.cancelTask(.with { $0.taskID = made[0] }, callContext("ana"))
            let replacement = try await system.create(days: 3).task.id
            await expectCode(.resourceExhausted) { _ = try await system.create(days: 1) }

            // The one-day tasks end with June 1 in New York; the three-day one is still active.
            try await system.advance(to: at("2026-06-02T04:00:00Z"))
            for _ in 1..<TaskRules.maxActiveTasks { _ = try await system.create(days: 1) }
            await expectCode(.resourceExhausted) { _ = try await system.create(days: 1) }
            #expect(try await system.allTasks(pageSize: 100, state: .active).tasks.contains(replacement))
        }
    }

    @Test(
        "a user makes at most 100 tasks in any 24 hours, cancelled ones counted; the refusal says when the next may come"
    )
    func dailyTaskCap() async throws {
        try await withTasksSystem(now: start) { system in
            for round in 0..<2 {
                for _ in 0..<50 {
                    let made = try await system.create(days: 1)
                    _ = try await system.service.cancelTask(.with { $0.taskID = made.task.id }, callContext("ana"))
                }
                if round == 0 { try await system.advance(by: 3600) }
            }
            // 50 made at 10:00 and 50 at 11:00: the next may come when the first 50 are a day old.
            do {
                _ = try await system.create(days: 1)
                Issue.record("the 101st task of a day was made")
            } catch let error as RPCError {
                #expect(error.code == .resourceExhausted)
                #expect(error.retryAfter == .seconds(23 * 3600))
            }
            _ = try await system.create("bo", days: 1)  // someone else is not counted against her
            try await system.advance(to: start.addingTimeInterval(86_400 - 1))
            await expectCode(.resourceExhausted) { _ = try await system.create(days: 1) }
            try await system.advance(to: start.addingTimeInterval(86_400))
            _ = try await system.create(days: 1)
        }
    }

    @Test("GetTask gives a task's check-ins in pages of 100 with the summary over them all")
    func checkInPages() async throws {
        try await withTasksSystem(now: start) { system in
            let task = try await system.create(days: 2).task.id
            var recorded: [String] = []
            for index in 0..<250 {
                if index % 100 == 0 { try await system.advance(by: 60) }
                recorded.append(try await system.checkIn(task, text: "note \(index)", energy: UInt32(index % 5 + 1)).id)
            }
            let (checkIns, pages, summaries) = try await system.allCheckIns(task)
            #expect(pages == [100, 100, 50])
            #expect(checkIns.map(\.id).count == 250 && Set(checkIns.map(\.id)) == Set(recorded))
            let times = checkIns.map { $0.recordedAt.date }
            #expect(times == times.sorted(), "in time order across pages")
            #expect(Set(summaries).count == 1, "every page carries the summary of the whole task")
            #expect(summaries[0].days.map(\.checkIns).reduce(0, +) == 250)
            #expect(try await system.allCheckIns(task, pageSize: 1).pages.count == 250)

            #expect(
                await violatedFields { _ = try await system.allCheckIns(task, pageSize: 101) } == [
                    "check_ins_page_size"
                ]
            )
            let badToken = await violatedFields {
                _ = try await system.service.getTask(
                    .with {
                        $0.taskID = task
                        $0.checkInsPageToken = "%%%"
                    },
                    callContext("ana")
                )
            }
            #expect(badToken == ["check_ins_page_token"])
        }
    }

    @Test("check-ins whose text is long in bytes end a page early instead of outgrowing the frame")
    func checkInPagesByBytes() async throws {
        try await withTasksSystem(now: start) { system in
            let task = try await system.create(days: 1).task.id
            // 5,000 characters of 4 bytes each, and ten insights of 500: about 40 KB a check-in.
            let long = String(repeating: "😀", count: TaskRules.maxResponseCharacters)
            let insights = Array(repeating: String(repeating: "🙂", count: TaskRules.maxInsightCharacters), count: 10)
            for _ in 0..<60 { _ = try await system.checkIn(task, text: long, insights: insights) }
            var request = Hearth_Tasks_V1_GetTaskRequest()
            request.taskID = task
            var pages: [Int] = []
            repeat {
                let answer = try await system.service.getTask(request, callContext("ana"))
                #expect(answer.encodedSize <= ServerConfiguration.defaultMaxFrameSize / 2 + 64 * 1024)
                pages.append(answer.checkIns.count)
                request.checkInsPageToken = answer.nextCheckInsPageToken
            } while !request.checkInsPageToken.isEmpty
            #expect(pages.count == 2 && pages.reduce(0, +) == 60, "\(pages)")
            #expect(pages[0] >= 50, "a page holds as many as fit: \(pages)")
        }
    }
}

extension TasksSystem {
    func listTasks(
        pageSize: UInt32 = 0,
        token: String = "",
        state: Hearth_Tasks_V1_TaskState? = nil,
        user: String = "ana"
    )
        async throws -> Hearth_Tasks_V1_ListTasksResponse
    {
        var request = Hearth_Tasks_V1_ListTasksRequest()
        request.pageSize = pageSize
        request.pageToken = token
        if let state { request.state = state }
        return try await self.service.listTasks(request, callContext(user))
    }

    /// Every task, page after page, and how many each page held.
    func allTasks(pageSize: UInt32, state: Hearth_Tasks_V1_TaskState? = nil, user: String = "ana") async throws
        -> (tasks: [String], pages: [Int])
    {
        var tasks: [String] = []
        var pages: [Int] = []
        var token = ""
        repeat {
            let page = try await self.listTasks(pageSize: pageSize, token: token, state: state, user: user)
            tasks += page.tasks.map(\.id)
            pages.append(page.tasks.count)
            token = page.nextPageToken
        } while !token.isEmpty
        return (tasks, pages)
    }

    /// Every check-in of a task through GetTask, page after page, with each page's count and summary.
    func allCheckIns(_ task: String, pageSize: UInt32 = 0) async throws
        -> (checkIns: [Hearth_Tasks_V1_CheckIn], pages: [Int], summaries: [Hearth_Tasks_V1_TaskSummary])
    {
        var request = Hearth_Tasks_V1_GetTaskRequest()
        request.taskID = task
        request.checkInsPageSize = pageSize
        var checkIns: [Hearth_Tasks_V1_CheckIn] = []
        var pages: [Int] = []
        var summaries: [Hearth_Tasks_V1_TaskSummary] = []
        repeat {
            let answer = try await self.service.getTask(request, callContext("ana"))
            checkIns += answer.checkIns
            pages.append(answer.checkIns.count)
            summaries.append(answer.summary)
            request.checkInsPageToken = answer.nextCheckInsPageToken
        } while !request.checkInsPageToken.isEmpty
        return (checkIns, pages, summaries)
    }

    /// An extra check-in (RecordCheckIn).
    func checkIn(_ task: String, text: String, energy: UInt32? = nil, insights: [String] = []) async throws
        -> Hearth_Tasks_V1_CheckIn
    {
        var request = Hearth_Tasks_V1_RecordCheckInRequest()
        request.taskID = task
        request.responseText = text
        if let energy { request.energy = energy }
        request.insights = insights
        return try await self.service.recordCheckIn(request, callContext("ana"))
    }
}
