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
            clientRequestID: clientRequestID
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

    private static func earlierTask(user: String, clientRequestID: String, in db: Database) throws
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

    // MARK: Prompts

    /// The user's due prompts (time reached, not expired, open), highest priority first,
    /// then earliest; and how many there are in all.
    func pendingPrompts(user: String, taskID: String?, now: Date, limit: Int) async throws -> (
        prompts: [PromptRecord], total: Int
    ) {
        // An open prompt is due from scheduled_at until scheduled_at + lifetime: a bounded
        // range of the (user_id, scheduled_at) index, whatever else the user has stored.
        let earliest = now.addingTimeInterval(-TaskRules.promptLifetime)
        var filter = "user_id = ? AND status = 'open' AND scheduled_at > ? AND scheduled_at <= ? AND expires_at > ?"
        var arguments: StatementArguments = [user, earliest, now, now]
        if let taskID {
            filter += " AND task_id = ?"
            arguments += [taskID]
        }
        return try self.base.read { [filter, arguments] db in
            // Two shapes of `filter` (with a task or not): each prepared once per connection.
            let total = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM prompt WHERE \(filter)"),
                arguments: arguments
            )
            let prompts = try PromptRecord.fetchAll(
                db.cachedStatement(
                    sql: "SELECT * FROM prompt WHERE \(filter) ORDER BY priority DESC, scheduled_at, id LIMIT ?"
                ),
                arguments: arguments + [limit]
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
            let checkIns = try CheckInRecord.fetchPage(
                db,
                where: "task_id = ?",
                arguments: [id],
                orderedBy: "recorded_at",
                descending: false,
                after: cursor,
                limit: limit
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
        case missing
    }

    /// Answers a prompt: in one transaction the prompt becomes RESPONDED and the check-in is
    /// recorded (with the activity for safety). The same answer again is the same result.
    func respond(promptID: String, user: String, answer: TaskRules.Answer, now: Date) async throws -> RespondOutcome {
        try await self.base.write { db in
            guard
                var prompt = try Self.prompt(promptID, user: user, in: db)
            else { return .missing }
            switch prompt.promptStatus {
            case .responded:
                guard let earlier = try CheckInRecord.filter(CheckInRecord.Columns.promptID == promptID).fetchOne(db)
                else {
                    return .missing
                }
                let same = Self.content(of: earlier) == Self.content(of: answer, defaultType: prompt.questionType)
                return same ? .answered(prompt, earlier, new: false) : .differentAnswer(earlier)
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
    private static func prompts(ofTask taskID: String, in db: Database) throws -> [PromptRecord] {
        try PromptRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM prompt WHERE task_id = ? ORDER BY scheduled_at, id"),
            arguments: [taskID]
        )
    }

    /// `user`'s prompt `id`, if there is one.
    private static func prompt(_ id: String, user: String, in db: Database) throws -> PromptRecord? {
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

    private static func newID() -> String { UUID().uuidString.lowercased() }

    /// The outbox id of a prompt's "check-in due" push (one per prompt).
    static func pushID(_ promptID: String) -> String { "tasks.prompt.\(promptID)" }
}
