import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthRelay
import HearthStore

// Check-ins recorded outside a prompt (RecordCheckIn).
extension TaskStore {
    enum RecordOutcome: Sendable {
        /// Recorded now, or before under the same client request id.
        case recorded(CheckInRecord, new: Bool)
        case differentAnswer(CheckInRecord)
        case taskCancelled
        case full
        case missing
    }

    /// How many check-ins of a task are not tied to a prompt. Through the task's index by
    /// name: given `prompt_id IS NULL`, SQLite picks the unique index on `prompt_id` (one row,
    /// it assumes) and walks every user's unprompted check-ins, inside the write transaction.
    static let extraCheckInsSQL =
        "SELECT COUNT(*) FROM check_in INDEXED BY check_in_by_task WHERE task_id = ? AND prompt_id IS NULL"

    /// Records a check-in not tied to a prompt.
    func recordCheckIn(
        taskID: String,
        user: String,
        answer: TaskRules.Answer,
        clientRequestID: String?,
        now: Date
    ) async throws -> RecordOutcome {
        try await self.base.write { db in
            guard let task = try Self.task(taskID, user: user, in: db) else { return .missing }
            if let clientRequestID,
                let earlier = try CheckInRecord.filter(
                    CheckInRecord.Columns.taskID == taskID && CheckInRecord.Columns.clientRequestID == clientRequestID
                ).fetchOne(db)
            {
                let same = Self.content(of: earlier) == Self.content(of: answer, defaultType: "")
                return same ? .recorded(earlier, new: false) : .differentAnswer(earlier)
            }
            guard task.cancelledAt == nil else { return .taskCancelled }
            let extra = try Int.fetchOne(db, sql: Self.extraCheckInsSQL, arguments: [taskID]) ?? 0
            guard extra < TaskRules.maxExtraCheckIns else { return .full }
            let zone = TimeZone(identifier: task.timeZone) ?? .gmt
            let checkIn = try Self.record(
                answer,
                taskID: taskID,
                user: user,
                prompt: nil,
                clientRequestID: clientRequestID,
                localDate: LocalDate(now, in: zone).description,
                timeOfDay: TaskRules.partOfDay(hour: TaskRules.minuteOfDay(now, in: zone) / 60).rawValue,
                now: now,
                in: db
            )
            return .recorded(checkIn, new: true)
        }
    }
}
