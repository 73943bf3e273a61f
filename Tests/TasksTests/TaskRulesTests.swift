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
