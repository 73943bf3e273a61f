import Foundation
import GRDB
import HearthPush
import HearthRelay
import HearthStore

struct TaskRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "task"
    var id: String
    var userID: String
    var title: String
    /// The check-in times in the order given, comma-separated (`MORNING`, `14:30`, ...).
    var checkInTimes: String
    var durationDays: Int
    var timeZone: String
    var startDate: String
    var endDate: String
    /// When its last day ends in its zone.
    var endsAt: Date
    var createdAt: Date
    var cancelledAt: Date?
    /// The client's id for the request that made it, if it gave one.
    var clientRequestID: String?
    /// ``UserLanguage`` raw value: its prompts and their pushes are in it.
    var language: String

    enum CodingKeys: String, CodingKey {
        case id, title, language
        case clientRequestID = "client_request_id"
        case userID = "user_id"
        case checkInTimes = "check_in_times"
        case durationDays = "duration_days"
        case timeZone = "time_zone"
        case startDate = "start_date"
        case endDate = "end_date"
        case endsAt = "ends_at"
        case createdAt = "created_at"
        case cancelledAt = "cancelled_at"
    }
}

extension TaskRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let userID = Column(CodingKeys.userID)
        static let cancelledAt = Column(CodingKeys.cancelledAt)
        static let endsAt = Column(CodingKeys.endsAt)
        static let clientRequestID = Column(CodingKeys.clientRequestID)
    }
}

extension DerivableRequest<TaskRecord> {
    /// `user`'s tasks neither cancelled nor ended at `now`.
    func active(of user: String, at now: Date) -> Self {
        self.filter(
            TaskRecord.Columns.userID == user && TaskRecord.Columns.cancelledAt == nil
                && TaskRecord.Columns.endsAt > now
        )
    }
}

/// One prompt. `status` is what happened to it; whether an open prompt is scheduled, due or
/// missed follows from the time (``TaskRules/state(_:scheduledAt:expiresAt:now:)``).
struct PromptRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "prompt"
    var id: String
    var taskID: String
    var userID: String
    var day: Int
    var localDate: String
    var localTime: String
    var timeOfDay: Int
    var scheduledAt: Date
    var expiresAt: Date
    var question: String
    var context: String
    var questionType: String
    var priority: Double
    var status: String
    var respondedAt: Date?
    var dismissedAt: Date?
    var cancelledAt: Date?
    /// When its "check-in due" push is to be decided; nil once decided (or never needed).
    var notifyAt: Date?
    var pushedAt: Date?

    enum CodingKeys: String, CodingKey {
        case id, day, question, context, priority, status
        case taskID = "task_id"
        case userID = "user_id"
        case localDate = "local_date"
        case localTime = "local_time"
        case timeOfDay = "time_of_day"
        case scheduledAt = "scheduled_at"
        case expiresAt = "expires_at"
        case questionType = "question_type"
        case respondedAt = "responded_at"
        case dismissedAt = "dismissed_at"
        case cancelledAt = "cancelled_at"
        case notifyAt = "notify_at"
        case pushedAt = "pushed_at"
    }

    var promptStatus: TaskRules.Status { TaskRules.Status(rawValue: self.status) ?? .open }
}

/// A check-in on a task: the answer to a prompt, or an extra one (no prompt).
struct CheckInRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "check_in"
    var id: String
    var taskID: String
    var userID: String
    var promptID: String?
    var clientRequestID: String?
    var recordedAt: Date
    var localDate: String
    var timeOfDay: Int
    var question: String
    var questionType: String
    var responseText: String
    var energy: Int?
    var mood: Int?
    var focus: Int?
    /// A JSON array of strings.
    var insights: String

    enum CodingKeys: String, CodingKey {
        case id, question, energy, mood, focus, insights
        case taskID = "task_id"
        case userID = "user_id"
        case promptID = "prompt_id"
        case clientRequestID = "client_request_id"
        case recordedAt = "recorded_at"
        case localDate = "local_date"
        case timeOfDay = "time_of_day"
        case questionType = "question_type"
        case responseText = "response_text"
    }

    var insightList: [String] {
        (try? JSONDecoder().decode([String].self, from: Data(self.insights.utf8))) ?? []
    }

    static func encode(insights: [String]) -> String {
        String(decoding: (try? JSONEncoder().encode(insights)) ?? Data("[]".utf8), as: UTF8.self)
    }
}

extension CheckInRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let taskID = Column(CodingKeys.taskID)
        static let promptID = Column(CodingKeys.promptID)
        static let clientRequestID = Column(CodingKeys.clientRequestID)
    }
}

extension CheckInRecord: ColumnWrites {
    static let columnNames = [
        "id", "task_id", "user_id", "prompt_id", "client_request_id", "recorded_at", "local_date", "time_of_day",
        "question", "question_type", "response_text", "energy", "mood", "focus", "insights",
    ]
    static let insertSQL = makeInsertSQL()

    var columnValues: [(any DatabaseValueConvertible)?] {
        [
            self.id, self.taskID, self.userID, self.promptID, self.clientRequestID, self.recordedAt.stored,
            self.localDate, self.timeOfDay, self.question, self.questionType, self.responseText, self.energy,
            self.mood, self.focus, self.insights,
        ]
    }

    func encode(to container: inout PersistenceContainer) throws { self.encodeColumns(to: &container) }
}

enum TaskMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: tasks, prompts, check-ins") { db in
            try db.execute(
                sql: """
                    CREATE TABLE task (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        check_in_times TEXT NOT NULL,
                        duration_days INTEGER NOT NULL,
                        time_zone TEXT NOT NULL,
                        start_date TEXT NOT NULL,
                        end_date TEXT NOT NULL,
                        ends_at DATETIME NOT NULL,
                        created_at DATETIME NOT NULL,
                        cancelled_at DATETIME
                    );
                    CREATE INDEX task_by_user ON task(user_id, created_at);

                    CREATE TABLE prompt (
                        id TEXT PRIMARY KEY NOT NULL,
                        task_id TEXT NOT NULL REFERENCES task(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        day INTEGER NOT NULL,
                        local_date TEXT NOT NULL,
                        local_time TEXT NOT NULL,
                        time_of_day INTEGER NOT NULL,
                        scheduled_at DATETIME NOT NULL,
                        expires_at DATETIME NOT NULL,
                        question TEXT NOT NULL,
                        context TEXT NOT NULL,
                        question_type TEXT NOT NULL,
                        priority REAL NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('open', 'responded', 'dismissed', 'cancelled')),
                        responded_at DATETIME,
                        dismissed_at DATETIME,
                        cancelled_at DATETIME,
                        notify_at DATETIME,
                        pushed_at DATETIME
                    );
                    CREATE INDEX prompt_by_task ON prompt(task_id, scheduled_at);
                    CREATE INDEX prompt_open_by_user ON prompt(user_id, scheduled_at) WHERE status = 'open';
                    CREATE INDEX prompt_to_notify ON prompt(notify_at) WHERE notify_at IS NOT NULL;

                    CREATE TABLE check_in (
                        id TEXT PRIMARY KEY NOT NULL,
                        task_id TEXT NOT NULL REFERENCES task(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        prompt_id TEXT UNIQUE REFERENCES prompt(id) ON DELETE CASCADE,
                        client_request_id TEXT,
                        recorded_at DATETIME NOT NULL,
                        local_date TEXT NOT NULL,
                        time_of_day INTEGER NOT NULL,
                        question TEXT NOT NULL,
                        question_type TEXT NOT NULL,
                        response_text TEXT NOT NULL,
                        energy INTEGER,
                        mood INTEGER,
                        focus INTEGER,
                        insights TEXT NOT NULL
                    );
                    CREATE INDEX check_in_by_task ON check_in(task_id, recorded_at);
                    CREATE UNIQUE INDEX check_in_request ON check_in(task_id, client_request_id)
                        WHERE client_request_id IS NOT NULL;
                    """
            )
        }
        Outbox.registerMigration(in: &migrator)
        Relay.registerMigration(in: &migrator)
        ActivityMigrations.register(in: &migrator)
        migrator.registerMigration("v3: a task's client_request_id") { db in
            try db.execute(
                sql: """
                    ALTER TABLE task ADD COLUMN client_request_id TEXT;
                    CREATE UNIQUE INDEX task_request ON task(user_id, client_request_id)
                        WHERE client_request_id IS NOT NULL;
                    """
            )
        }
        ActivityMigrations.registerRepeatReasons(in: &migrator)
        TaskStore.registerErasureMigration(in: &migrator)
        ActivityMigrations.registerOfferTriggers(in: &migrator)
        ActivityMigrations.registerOptInAndDwell(in: &migrator)
        migrator.registerMigration("v9: a task's language") { db in
            // Tasks from before: English, as their prompts were written.
            try db.execute(sql: "ALTER TABLE task ADD COLUMN language TEXT NOT NULL DEFAULT 'en'")
        }
        ActivityMigrations.registerOptInOffersCancelled(in: &migrator)
        return migrator
    }
}

extension TaskRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.title = try row.decode(String.self, forColumn: "title")
        self.checkInTimes = try row.decode(String.self, forColumn: "check_in_times")
        self.durationDays = try row.decode(Int.self, forColumn: "duration_days")
        self.timeZone = try row.decode(String.self, forColumn: "time_zone")
        self.startDate = try row.decode(String.self, forColumn: "start_date")
        self.endDate = try row.decode(String.self, forColumn: "end_date")
        self.endsAt = try row.date("ends_at")
        self.createdAt = try row.date("created_at")
        self.cancelledAt = try row.optionalDate("cancelled_at")
        self.clientRequestID = try row.decode(String?.self, forColumn: "client_request_id")
        self.language = try row.decode(String.self, forColumn: "language")
    }
}

extension PromptRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.taskID = try row.decode(String.self, forColumn: "task_id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.day = try row.decode(Int.self, forColumn: "day")
        self.localDate = try row.decode(String.self, forColumn: "local_date")
        self.localTime = try row.decode(String.self, forColumn: "local_time")
        self.timeOfDay = try row.decode(Int.self, forColumn: "time_of_day")
        self.scheduledAt = try row.date("scheduled_at")
        self.expiresAt = try row.date("expires_at")
        self.question = try row.decode(String.self, forColumn: "question")
        self.context = try row.decode(String.self, forColumn: "context")
        self.questionType = try row.decode(String.self, forColumn: "question_type")
        self.priority = try row.decode(Double.self, forColumn: "priority")
        self.status = try row.decode(String.self, forColumn: "status")
        self.respondedAt = try row.optionalDate("responded_at")
        self.dismissedAt = try row.optionalDate("dismissed_at")
        self.cancelledAt = try row.optionalDate("cancelled_at")
        self.notifyAt = try row.optionalDate("notify_at")
        self.pushedAt = try row.optionalDate("pushed_at")
    }
}

extension CheckInRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.taskID = try row.decode(String.self, forColumn: "task_id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.promptID = try row.decode(String?.self, forColumn: "prompt_id")
        self.clientRequestID = try row.decode(String?.self, forColumn: "client_request_id")
        self.recordedAt = try row.date("recorded_at")
        self.localDate = try row.decode(String.self, forColumn: "local_date")
        self.timeOfDay = try row.decode(Int.self, forColumn: "time_of_day")
        self.question = try row.decode(String.self, forColumn: "question")
        self.questionType = try row.decode(String.self, forColumn: "question_type")
        self.responseText = try row.decode(String.self, forColumn: "response_text")
        self.energy = try row.decode(Int?.self, forColumn: "energy")
        self.mood = try row.decode(Int?.self, forColumn: "mood")
        self.focus = try row.decode(Int?.self, forColumn: "focus")
        self.insights = try row.decode(String.self, forColumn: "insights")
    }
}
