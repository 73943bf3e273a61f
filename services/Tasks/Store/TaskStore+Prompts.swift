import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthRelay
import HearthStore

// A task's prompts: the pending ones, a task with its prompts, answering and dismissing.
extension TaskStore {
    // MARK: Prompts

    /// The user's due prompts (time reached, not expired, open), highest priority first,
    /// then earliest; and how many there are in all.
    func pendingPrompts(user: String, taskID: String?, now: Date, limit: Int, upcoming: Bool = false) async throws
        -> (prompts: [PromptRecord], total: Int)
    {
        // An open prompt is due from scheduled_at until scheduled_at + lifetime: a bounded
        // range of the (user_id, scheduled_at) index, whatever else the user has stored; with
        // the upcoming ones, the range runs on to the last one scheduled.
        let earliest = now.addingTimeInterval(-TaskRules.promptLifetime)
        var filter = "user_id = ? AND status = 'open' AND scheduled_at > ? AND expires_at > ?"
        var arguments: StatementArguments = [user, earliest, now]
        if !upcoming {
            filter += " AND scheduled_at <= ?"
            arguments += [now]
        }
        if let taskID {
            filter += " AND task_id = ?"
            arguments += [taskID]
        }
        // Due ones first, by priority; then those to come, in time order.
        let order =
            upcoming
            ? "scheduled_at > ?, CASE WHEN scheduled_at <= ? THEN -priority ELSE 0 END, scheduled_at, id"
            : "priority DESC, scheduled_at, id"
        let orderArguments: StatementArguments = upcoming ? [now, now] : []
        return try self.base.read { [filter, arguments] db in
            // Four shapes of `filter` and `order`: each prepared once per connection.
            let total = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM prompt WHERE \(filter)"),
                arguments: arguments
            )
            let prompts = try PromptRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM prompt WHERE \(filter) ORDER BY \(order) LIMIT ?"),
                arguments: arguments + orderArguments + [limit]
            )
            return (prompts, total ?? 0)
        }
    }

    struct TaskDetail: Sendable {
        var task: TaskRecord
        var prompts: [PromptRecord]
        /// Every check-in's day and scores, for the summary.
        var scores: [(localDate: String, energy: Int?, mood: Int?, focus: Int?)]
        /// Up to `limit` check-ins in time order, after the cursor when given.
        var checkIns: [CheckInRecord]
    }

    /// A task with its prompts, the scores of all its check-ins and a page of the check-ins
    /// themselves, read in one snapshot.
    func taskDetail(_ id: String, user: String, checkInsAfter cursor: PageCursor?, limit: Int) async throws
        -> TaskDetail?
    {
        try self.base.read { db in
            guard let task = try Self.task(id, user: user, in: db) else { return nil }
            let prompts = try Self.prompts(ofTask: id, in: db)
            let scores = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT local_date, energy, mood, focus FROM check_in WHERE task_id = ?"),
                arguments: [id]
            ).map { row in
                (localDate: row[0] as String, energy: row[1] as Int?, mood: row[2] as Int?, focus: row[3] as Int?)
            }
            let checkIns = try db.fetchPage(
                "\(CheckInRecord.selection) FROM check_in",
                where: "task_id = ?",
                arguments: [id],
                orderedBy: "recorded_at",
                descending: false,
                after: cursor,
                limit: limit,
                read: CheckInRecord.init(columns:)
            )
            return TaskDetail(task: task, prompts: prompts, scores: scores, checkIns: checkIns)
        }
    }

    /// Every prompt of a task, in time order.
    func prompts(taskID: String) async throws -> [PromptRecord] {
        try self.base.read { db in
            try Self.prompts(ofTask: taskID, in: db)
        }
    }

    enum RespondOutcome: Sendable {
        /// Recorded now, or the same answer recorded before.
        case answered(PromptRecord, CheckInRecord, new: Bool)
        case differentAnswer(CheckInRecord)
        case notDue(PromptRecord)
        case expired(PromptRecord)
        case dismissed(PromptRecord)
        case cancelled(PromptRecord)
        /// Not a prompt of the task the caller named.
        case otherTask(PromptRecord)
        case missing
    }

    /// Answers a prompt: in one transaction the prompt becomes RESPONDED and the check-in is
    /// recorded (with the activity for safety). The same answer again is the same result.
    /// - Parameters:
    ///   - task: the task the prompt must be of, when the caller named one.
    ///   - earlierStands: an answered prompt answers with its check-in whatever `answer` is
    ///     (RecordCheckIn with the prompt, after RespondToPrompt); otherwise only the same answer
    ///     does.
    func respond(
        promptID: String,
        user: String,
        answer: TaskRules.Answer,
        now: Date,
        ofTask task: String? = nil,
        earlierStands: Bool = false
    ) async throws -> RespondOutcome {
        try await self.base.write { db in
            guard
                var prompt = try Self.prompt(promptID, user: user, in: db)
            else { return .missing }
            if let task, prompt.taskID != task { return .otherTask(prompt) }
            switch prompt.promptStatus {
            case .responded:
                guard let earlier = try CheckInRecord.filter(CheckInRecord.Columns.promptID == promptID).fetchOne(db)
                else {
                    return .missing
                }
                let same = Self.content(of: earlier) == Self.content(of: answer, defaultType: prompt.questionType)
                return same || earlierStands ? .answered(prompt, earlier, new: false) : .differentAnswer(earlier)
            case .dismissed: return .dismissed(prompt)
            case .cancelled: return .cancelled(prompt)
            case .open: break
            }
            guard now >= prompt.scheduledAt else { return .notDue(prompt) }
            guard now < prompt.expiresAt else { return .expired(prompt) }
            prompt.status = TaskRules.Status.responded.rawValue
            prompt.respondedAt = now
            prompt.notifyAt = nil
            try db.cachedStatement(sql: "UPDATE prompt SET status = ?, responded_at = ?, notify_at = NULL WHERE id = ?")
                .execute(binding: prompt.status, now.stored, prompt.id)
            try Outbox.withdraw(id: Self.pushID(prompt.id), in: db)
            let checkIn = try Self.record(
                answer,
                taskID: prompt.taskID,
                user: user,
                prompt: prompt,
                clientRequestID: nil,
                localDate: prompt.localDate,
                timeOfDay: prompt.timeOfDay,
                now: now,
                in: db
            )
            return .answered(prompt, checkIn, new: true)
        }
    }

    enum DismissOutcome: Sendable {
        /// Dismissed now or before.
        case dismissed(PromptRecord)
        case responded(PromptRecord)
        case expired(PromptRecord)
        case cancelled(PromptRecord)
        case missing
    }

    /// Dismisses an open prompt (scheduled or due): it is not pushed or answered any more.
    func dismiss(promptID: String, user: String, now: Date) async throws -> DismissOutcome {
        try await self.base.write { db in
            guard
                var prompt = try Self.prompt(promptID, user: user, in: db)
            else { return .missing }
            switch prompt.promptStatus {
            case .dismissed: return .dismissed(prompt)
            case .responded: return .responded(prompt)
            case .cancelled: return .cancelled(prompt)
            case .open: break
            }
            guard now < prompt.expiresAt else { return .expired(prompt) }
            prompt.status = TaskRules.Status.dismissed.rawValue
            prompt.dismissedAt = now
            prompt.notifyAt = nil
            try prompt.update(db, columns: ["status", "dismissed_at", "notify_at"])
            try Outbox.withdraw(id: Self.pushID(prompt.id), in: db)
            return .dismissed(prompt)
        }
    }
}
