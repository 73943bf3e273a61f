import Foundation
import GRDB
import HearthContracts
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// ListPendingPrompts with `include_upcoming`: the plan's pending list, every prompt still
/// waiting ("You should see 6 notifications" right after creating a 3-day task).
@Suite("Tasks: the pending list with upcoming prompts", .timeLimit(.minutes(1)))
struct PendingListTests {
    @Test("right after a 3-day task with two times a day: 6 waiting, earliest first; the default list has none yet")
    func sixAfterCreation() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(
                times: [TasksSystem.time(.morning), TasksSystem.time(.evening)],
                days: 3
            )
            let all = try await system.prompts(created.task.id)
            #expect(all.count == 6)
            let waiting = try await system.pending(upcoming: true)
            #expect(waiting.total == 6)
            #expect(waiting.prompts.map(\.id) == all.sorted { $0.scheduledAt.date < $1.scheduledAt.date }.map(\.id))
            #expect(waiting.prompts.allSatisfy { $0.state == .scheduled })
            #expect(try await system.pending().total == 0, "the default is still the due ones only")
            // The limit and the task filter apply as before; another user's prompts never show.
            let two = try await system.pending(limit: 2, upcoming: true)
            #expect(two.prompts.map(\.id) == Array(waiting.prompts.prefix(2).map(\.id)) && two.total == 6)
            #expect(try await system.pending(task: created.task.id, upcoming: true).total == 6)
            #expect(try await system.pending("ben", upcoming: true).total == 0)
        }
    }

    @Test("due ones first by priority, then the upcoming; answered, dismissed and cancelled ones drop out")
    func dueFirstThenUpcoming() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let created = try await system.create(
                times: [TasksSystem.time(.morning), TasksSystem.time(.evening)],
                days: 3
            )
            let all = try await system.prompts(created.task.id).sorted { $0.scheduledAt.date < $1.scheduledAt.date }
            // After the second prompt's time: two due (the later first, once it has the higher
            // priority), four to come.
            try await system.advance(to: all[1].scheduledAt.date.addingTimeInterval(60))
            try await system.service.store.base.writer.write { db in
                try db.execute(sql: "UPDATE prompt SET priority = 0.9 WHERE id = ?", arguments: [all[1].id])
            }
            var waiting = try await system.pending(upcoming: true)
            #expect(waiting.total == 6)
            #expect(waiting.prompts.map(\.id) == [all[1].id, all[0].id] + all[2...].map(\.id))
            #expect(waiting.prompts.map(\.state) == [.due, .due, .scheduled, .scheduled, .scheduled, .scheduled])

            _ = try await system.respond(all[0].id)
            _ = try await system.service.dismissPrompt(.with { $0.promptID = all[3].id }, callContext("ana"))
            waiting = try await system.pending(upcoming: true)
            #expect(waiting.prompts.map(\.id) == [all[1].id, all[2].id, all[4].id, all[5].id])
            #expect(waiting.total == 4)

            _ = try await system.service.cancelTask(.with { $0.taskID = created.task.id }, callContext("ana"))
            #expect(try await system.pending(upcoming: true).total == 0)
        }
    }
}
