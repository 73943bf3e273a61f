import Foundation
import GRDB
import HearthRelay
import HearthStore

struct RoutineRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "routine"
    var id: String
    var nestID: String
    var title: String
    var category: String
    var createdAt: Date
    var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case id, title, category
        case nestID = "nest_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

extension RoutineRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let nestID = Column(CodingKeys.nestID)
    }
}

/// An action; a removed one stays (with `removedAt`) so past days keep their counts.
struct ActionRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "action"
    var id: String
    var routineID: String
    var text: String
    /// Creation order within the routine (there is no reordering).
    var position: Int
    var createdAt: Date
    var removedAt: Date?

    enum CodingKeys: String, CodingKey {
        case id, text, position
        case routineID = "routine_id"
        case createdAt = "created_at"
        case removedAt = "removed_at"
    }
}

extension ActionRecord {
    /// The columns queries name, from the coding keys.
    enum Columns {
        static let routineID = Column(CodingKeys.routineID)
        static let removedAt = Column(CodingKeys.removedAt)
        static let position = Column(CodingKeys.position)
    }
}

extension DerivableRequest<ActionRecord> {
    /// The actions of `routines` not removed, in their order.
    func current(of routines: [String]) -> Self {
        self.filter(routines.contains(ActionRecord.Columns.routineID) && ActionRecord.Columns.removedAt == nil)
            .order(ActionRecord.Columns.position)
    }
}

/// One user's tick of one action on one local date (the date where it was made).
struct CompletionRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "completion"
    var routineID: String
    var actionID: String
    var userID: String
    var localDate: String
    var doneAt: Date
    var timeZone: String

    enum CodingKeys: String, CodingKey {
        case routineID = "routine_id"
        case actionID = "action_id"
        case userID = "user_id"
        case localDate = "local_date"
        case doneAt = "done_at"
        case timeZone = "time_zone"
    }
}

/// A routine with its current actions, in creation order.
struct RoutineWithActions: Sendable, Equatable {
    var routine: RoutineRecord
    var actions: [ActionRecord]
}

enum RoutineMigrations {
    /// Named and append-only: a shipped migration is never edited.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: routines, actions, completions") { db in
            try db.execute(
                sql: """
                    CREATE TABLE routine (
                        id TEXT PRIMARY KEY NOT NULL,
                        nest_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        category TEXT NOT NULL,
                        created_at DATETIME NOT NULL,
                        updated_at DATETIME NOT NULL
                    );
                    CREATE INDEX routine_nest ON routine(nest_id, category);

                    CREATE TABLE action (
                        id TEXT PRIMARY KEY NOT NULL,
                        routine_id TEXT NOT NULL REFERENCES routine(id) ON DELETE CASCADE,
                        text TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        created_at DATETIME NOT NULL,
                        removed_at DATETIME
                    );
                    CREATE UNIQUE INDEX action_order ON action(routine_id, position);

                    CREATE TABLE completion (
                        routine_id TEXT NOT NULL REFERENCES routine(id) ON DELETE CASCADE,
                        action_id TEXT NOT NULL REFERENCES action(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        local_date TEXT NOT NULL,
                        done_at DATETIME NOT NULL,
                        time_zone TEXT NOT NULL,
                        PRIMARY KEY (routine_id, user_id, local_date, action_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX completion_action ON completion(action_id);
                    """
            )
        }
        Relay.registerMigration(in: &migrator)
        return migrator
    }
}

extension RoutineRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.nestID = try row.decode(String.self, forColumn: "nest_id")
        self.title = try row.decode(String.self, forColumn: "title")
        self.category = try row.decode(String.self, forColumn: "category")
        self.createdAt = try row.date("created_at")
        self.updatedAt = try row.date("updated_at")
    }
}

extension ActionRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.routineID = try row.decode(String.self, forColumn: "routine_id")
        self.text = try row.decode(String.self, forColumn: "text")
        self.position = try row.decode(Int.self, forColumn: "position")
        self.createdAt = try row.date("created_at")
        self.removedAt = try row.optionalDate("removed_at")
    }
}

extension CompletionRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.routineID = try row.decode(String.self, forColumn: "routine_id")
        self.actionID = try row.decode(String.self, forColumn: "action_id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.localDate = try row.decode(String.self, forColumn: "local_date")
        self.doneAt = try row.date("done_at")
        self.timeZone = try row.decode(String.self, forColumn: "time_zone")
    }
}
