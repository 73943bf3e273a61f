import GRDB
import HearthStore

// The prompts GetTask and ListPrompts read, by position straight from SQLite
// (GRDB's rows look every column up by name: most of a task's reading). Reads select `selection`
// and take the columns in its order.

extension PromptRecord {
    static let selection = """
        SELECT id, task_id, user_id, day, local_date, local_time, time_of_day, scheduled_at, expires_at, question,
          context, question_type, priority, status, responded_at, dismissed_at, cancelled_at, notify_at, pushed_at
        """

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.taskID = try columns.value(1)
        self.userID = try columns.value(2)
        self.day = try columns.value(3)
        self.localDate = try columns.value(4)
        self.localTime = try columns.value(5)
        self.timeOfDay = try columns.value(6)
        self.scheduledAt = try columns.date(7)
        self.expiresAt = try columns.date(8)
        self.question = try columns.value(9)
        self.context = try columns.value(10)
        self.questionType = try columns.value(11)
        self.priority = try columns.value(12)
        self.status = try columns.value(13)
        self.respondedAt = try columns.optionalDate(14)
        self.dismissedAt = try columns.optionalDate(15)
        self.cancelledAt = try columns.optionalDate(16)
        self.notifyAt = try columns.optionalDate(17)
        self.pushedAt = try columns.optionalDate(18)
    }
}

// The check-ins GetTask pages through, by position.
extension CheckInRecord {
    static let selection = "SELECT " + columnNames.joined(separator: ", ")

    /// A row of ``selection`` (``columnNames``, in their order).
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.taskID = try columns.value(1)
        self.userID = try columns.value(2)
        self.promptID = columns.optional(3)
        self.clientRequestID = columns.optional(4)
        self.recordedAt = try columns.date(5)
        self.localDate = try columns.value(6)
        self.timeOfDay = try columns.value(7)
        self.question = try columns.value(8)
        self.questionType = try columns.value(9)
        self.responseText = try columns.value(10)
        self.energy = columns.optional(11)
        self.mood = columns.optional(12)
        self.focus = columns.optional(13)
        self.insights = try columns.value(14)
    }
}
