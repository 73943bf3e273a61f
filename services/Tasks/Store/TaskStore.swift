import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthRelay
import HearthStore

/// The tasks service's SQLite store. Each invariant is kept inside one write transaction: a
/// task with all its prompts, an answer with its check-in (and the activity for safety), a
/// due prompt with its push.
struct TaskStore: Sendable {
    let base: Store
    /// "Check-in due" pushes, recorded when a prompt falls due.
    let outbox: Outbox
    /// Activity forwarded to safety, recorded with each check-in.
    let relay: Relay

    init(location: StoreLocation, clock: any WallClock = SystemClock()) throws {
        self.base = try Store(location: location, migrator: TaskMigrations.migrator, clock: clock)
        self.outbox = Outbox(store: self.base)
        self.relay = Relay(store: self.base)
    }

    var now: Date { self.base.now }

    // MARK: Tasks

    enum CreateOutcome: Sendable {
        /// Made now, or by an earlier request with the same client request id.
        case made(task: TaskRecord, prompts: [PromptRecord])
        /// The user has ``TaskRules/maxActiveTasks`` active tasks already.
        case tooManyActive
        /// The user made ``TaskRules/maxTasksPerDay`` tasks in the last 24 hours; the next
        /// may be made in `retryAfter`.
        case tooManyToday(retryAfter: TimeInterval)
    }

    /// Stores a task and its prompts (answered in time order) in one transaction, unless the
    /// user has too many active tasks; with a `clientRequestID` the user used before, answers
    /// with the task (and prompts) that request made instead.
    func createTask(
        _ new: TaskRules.NewTask,
        prompts: [TaskRules.PlannedPrompt],
        user: String,
        clientRequestID: String?,
        now: Date
    ) async throws -> CreateOutcome {
        let task = TaskRecord(
            id: Self.newID(),
            userID: user,
            title: new.title,
            checkInTimes: new.times.map(\.storedForm).joined(separator: ","),
            durationDays: new.durationDays,
            timeZone: new.timeZone,
            startDate: new.startDate.description,
            endDate: new.endDate.description,
            endsAt: new.endsAt,
            createdAt: now,
            cancelledAt: nil,
            clientRequestID: clientRequestID,
            language: new.language.rawValue
        )
        let records = prompts.map { planned in
            PromptRecord(
                id: Self.newID(),
                taskID: task.id,
                userID: user,
                day: planned.day,
                localDate: planned.localDate.description,
                localTime: planned.time.text,
                timeOfDay: planned.time.partOfDay.rawValue,
                scheduledAt: planned.scheduledAt,
                expiresAt: planned.expiresAt,
                question: planned.question,
                context: planned.context,
                questionType: planned.questionType,
                priority: TaskRules.promptPriority,
                status: TaskRules.Status.open.rawValue,
                notifyAt: planned.scheduledAt
            )
        }
        return try await self.base.write { db in
            if let clientRequestID,
                let earlier = try Self.earlierTask(user: user, clientRequestID: clientRequestID, in: db)
            {
                return .made(task: earlier.task, prompts: earlier.prompts)
            }
            let active = try TaskRecord.all().active(of: user, at: now).fetchCount(db)
            guard active < TaskRules.maxActiveTasks else { return .tooManyActive }
            // The oldest of the last day's tasks, if the day is full: the next one may come
            // when it is a day old.
            if let oldest = try Date.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT created_at FROM task WHERE user_id = ? AND created_at > ? ORDER BY created_at DESC LIMIT 1 OFFSET ?"
                ),
                arguments: [user, now.addingTimeInterval(-86_400), TaskRules.maxTasksPerDay - 1]
            ) {
                return .tooManyToday(retryAfter: oldest.addingTimeInterval(86_400).timeIntervalSince(now))
            }
            try task.insert(db)
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO prompt (id, task_id, user_id, day, local_date, local_time, time_of_day, scheduled_at,
                        expires_at, question, context, question_type, priority, status, notify_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
            for prompt in records {
                try insert.execute(arguments: [
                    prompt.id, prompt.taskID, prompt.userID, prompt.day, prompt.localDate, prompt.localTime,
                    prompt.timeOfDay, prompt.scheduledAt, prompt.expiresAt, prompt.question, prompt.context,
                    prompt.questionType, prompt.priority, prompt.status, prompt.notifyAt,
                ])
            }
            return .made(task: task, prompts: records)
        }
    }

    /// The task (and its prompts) an earlier CreateTask with `clientRequestID` made, if any.
    func earlierTask(user: String, clientRequestID: String) async throws -> (task: TaskRecord, prompts: [PromptRecord])?
    {
        try self.base.read { db in try Self.earlierTask(user: user, clientRequestID: clientRequestID, in: db) }
    }

    static func earlierTask(user: String, clientRequestID: String, in db: Database) throws
        -> (task: TaskRecord, prompts: [PromptRecord])?
    {
        guard
            let task = try TaskRecord.filter(
                TaskRecord.Columns.userID == user && TaskRecord.Columns.clientRequestID == clientRequestID
            )
            .fetchOne(db)
        else { return nil }
        let prompts = try Self.prompts(ofTask: task.id, in: db)
        return (task, prompts)
    }

    /// The user's task; nil when it does not exist or is someone else's.
    func task(_ id: String, user: String) async throws -> TaskRecord? {
        try self.base.read { db in try Self.task(id, user: user, in: db) }
    }

    /// Up to `limit` of the user's tasks, newest first (the later made first among tasks made
    /// the same millisecond), after the cursor when given, in one state when given.
    func tasks(user: String, state: TaskState?, after cursor: PageCursor?, limit: Int, now: Date)
        async throws -> [TaskRecord]
    {
        try self.base.read { db in
            // Fixed SQL text in a few shapes (state, cursor), each prepared once per connection.
            var filter = "user_id = ?"
            var arguments: StatementArguments = [user]
            switch state {
            case .active?:
                filter += " AND cancelled_at IS NULL AND ends_at > ?"
                arguments += [now]
            case .completed?:
                filter += " AND cancelled_at IS NULL AND ends_at <= ?"
                arguments += [now]
            case .cancelled?:
                filter += " AND cancelled_at IS NOT NULL"
            case nil:
                break
            }
            if let cursor {
                // Tasks are never deleted, so the cursor's task is there to take its row id from.
                filter += " AND (created_at, rowid) < (?, (SELECT rowid FROM task WHERE id = ?))"
                arguments += [cursor.time, cursor.id]
            }
            return try TaskRecord.fetchAll(
                db.cachedStatement(
                    sql: "SELECT * FROM task WHERE \(filter) ORDER BY created_at DESC, rowid DESC LIMIT ?"
                ),
                arguments: arguments + [limit]
            )
        }
    }

    enum CancelOutcome: Sendable {
        case cancelled(TaskRecord, prompts: Int)
        case alreadyCancelled(TaskRecord)
        case completed(TaskRecord)
        case missing
    }

    /// Cancels an active task: its prompts neither answered, dismissed nor expired become
    /// CANCELLED (and are never pushed).
    func cancelTask(_ id: String, user: String, now: Date) async throws -> CancelOutcome {
        try await self.base.write { db in
            guard var task = try Self.task(id, user: user, in: db) else { return .missing }
            switch TaskRules.taskState(cancelledAt: task.cancelledAt, endsAt: task.endsAt, now: now) {
            case .cancelled: return .alreadyCancelled(task)
            case .completed: return .completed(task)
            case .active: break
            }
            task.cancelledAt = now
            try task.update(db, columns: ["cancelled_at"])
            let open = try String.fetchAll(
                db.cachedStatement(
                    sql: "SELECT id FROM prompt WHERE task_id = ? AND status = 'open' AND expires_at > ?"
                ),
                arguments: [id, now]
            )
            try db.cachedStatement(
                sql: """
                    UPDATE prompt SET status = 'cancelled', cancelled_at = ?, notify_at = NULL
                    WHERE task_id = ? AND status = 'open' AND expires_at > ?
                    """
            ).execute(arguments: [now, id, now])
            for promptID in open { try Outbox.withdraw(id: Self.pushID(promptID), in: db) }
            return .cancelled(task, prompts: open.count)
        }
    }

    // MARK: Helpers

    /// Stores a check-in and, in the same transaction, the activity forwarded to safety.
    static func record(
        _ answer: TaskRules.Answer,
        taskID: String,
        user: String,
        prompt: PromptRecord?,
        clientRequestID: String?,
        localDate: String,
        timeOfDay: Int,
        now: Date,
        in db: Database
    ) throws -> CheckInRecord {
        let checkIn = CheckInRecord(
            id: Self.newID(),
            taskID: taskID,
            userID: user,
            promptID: prompt?.id,
            clientRequestID: clientRequestID,
            recordedAt: now,
            localDate: localDate,
            timeOfDay: timeOfDay,
            question: prompt?.question ?? "",
            questionType: answer.questionType ?? prompt?.questionType ?? "",
            responseText: answer.text,
            energy: answer.energy,
            mood: answer.mood,
            focus: answer.focus,
            insights: CheckInRecord.encode(insights: answer.insights)
        )
        try checkIn.insertPrepared(db)
        try Relay.forwardActivity(source: "tasks", eventID: checkIn.id, user: user, at: now, in: db)
        return checkIn
    }

    static func task(_ id: String, user: String, in db: Database) throws -> TaskRecord? {
        try TaskRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM task WHERE id = ? AND user_id = ?"),
            arguments: [id, user]
        )
    }

    /// A task's prompts in time order.
    static func prompts(ofTask taskID: String, in db: Database) throws -> [PromptRecord] {
        try db.cachedStatement(sql: "\(PromptRecord.selection) FROM prompt WHERE task_id = ? ORDER BY scheduled_at, id")
            .fetchAll(binding: taskID, read: PromptRecord.init(columns:))
    }

    /// `user`'s prompt `id`, if there is one.
    static func prompt(_ id: String, user: String, in db: Database) throws -> PromptRecord? {
        try PromptRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM prompt WHERE id = ? AND user_id = ?"),
            arguments: [id, user]
        )
    }

    static func content(of checkIn: CheckInRecord) -> TaskRules.Answer {
        TaskRules.Answer(
            text: checkIn.responseText,
            energy: checkIn.energy,
            mood: checkIn.mood,
            focus: checkIn.focus,
            questionType: checkIn.questionType,
            insights: checkIn.insightList
        )
    }

    /// An answer as it would be stored (an unset question type takes the default).
    static func content(of answer: TaskRules.Answer, defaultType: String) -> TaskRules.Answer {
        var stored = answer
        stored.questionType = answer.questionType ?? defaultType
        return stored
    }

    static func newID() -> String { UUID().uuidString.lowercased() }

    /// The outbox id of a prompt's "check-in due" push (one per prompt).
    static func pushID(_ promptID: String) -> String { "tasks.prompt.\(promptID)" }
}
