import Foundation
import GRDB
import HearthPush
import HearthRelay
import HearthStore

struct NestRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "nest"
    var id: String
    var name: String
    var ownerUserID: String
    var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, name
        case ownerUserID = "owner_user_id"
        case createdAt = "created_at"
    }
}

extension NestRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let ownerUserID = Column(CodingKeys.ownerUserID)
    }
}

struct SessionRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "session"
    var id: String
    var nestID: String
    var ownerUserID: String
    var sitterUserID: String
    var startsAt: Date
    var endsAt: Date
    var timeZone: String
    var createdAt: Date
    /// The language the owner asked for when they created it (``UserLanguage``): the check-in
    /// pushes they get are in it.
    var ownerLanguage: String

    enum CodingKeys: String, CodingKey {
        case id
        case nestID = "nest_id"
        case ownerUserID = "owner_user_id"
        case ownerLanguage = "owner_language"
        case sitterUserID = "sitter_user_id"
        case startsAt = "starts_at"
        case endsAt = "ends_at"
        case timeZone = "time_zone"
        case createdAt = "created_at"
    }

    func isParticipant(_ user: String) -> Bool {
        user == self.ownerUserID || user == self.sitterUserID
    }
}

struct CheckInRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "check_in"
    var id: String
    var sessionID: String
    var submitterUserID: String
    var caption: String
    var capturedAt: Date
    var createdAt: Date
    var photoAltText: String
    var viewedAt: Date?
    var clientRequestID: String
    /// The stored photo's format, size and dimensions; nil without a photo.
    var photoFormat: String?
    var photoWidth: Int?
    var photoHeight: Int?
    var photoBytes: Int?

    enum CodingKeys: String, CodingKey {
        case id, caption
        case photoFormat = "photo_format"
        case photoWidth = "photo_width"
        case photoHeight = "photo_height"
        case photoBytes = "photo_bytes"
        case sessionID = "session_id"
        case submitterUserID = "submitter_user_id"
        case capturedAt = "captured_at"
        case createdAt = "created_at"
        case photoAltText = "photo_alt_text"
        case viewedAt = "viewed_at"
        case clientRequestID = "client_request_id"
    }
}

struct TemplateRecord: Codable, FetchableRecord, PersistableRecord, Equatable {
    static let databaseTableName = "template"
    var id: String
    var nestID: String
    var text: String
    var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, text
        case nestID = "nest_id"
        case createdAt = "created_at"
    }
}

enum CheckinMigrations {
    /// Named and append-only: a shipped migration is never edited.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: nests, sessions, check-ins, templates") { db in
            try db.execute(
                sql: """
                    CREATE TABLE nest (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        owner_user_id TEXT NOT NULL,
                        created_at DATETIME NOT NULL
                    );
                    CREATE INDEX nest_owner ON nest(owner_user_id);

                    CREATE TABLE session (
                        id TEXT PRIMARY KEY NOT NULL,
                        nest_id TEXT NOT NULL REFERENCES nest(id) ON DELETE CASCADE,
                        owner_user_id TEXT NOT NULL,
                        sitter_user_id TEXT NOT NULL,
                        starts_at DATETIME NOT NULL,
                        ends_at DATETIME NOT NULL,
                        time_zone TEXT NOT NULL,
                        created_at DATETIME NOT NULL
                    );
                    CREATE INDEX session_nest ON session(nest_id, starts_at);
                    CREATE INDEX session_sitter ON session(sitter_user_id, nest_id);

                    CREATE TABLE check_in (
                        id TEXT PRIMARY KEY NOT NULL,
                        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                        submitter_user_id TEXT NOT NULL,
                        caption TEXT NOT NULL,
                        captured_at DATETIME NOT NULL,
                        created_at DATETIME NOT NULL,
                        photo_alt_text TEXT NOT NULL,
                        viewed_at DATETIME,
                        client_request_id TEXT NOT NULL
                    );
                    CREATE INDEX check_in_timeline ON check_in(session_id, captured_at, id);

                    -- Kept after a check-in is deleted: a retry of its request must not create another.
                    CREATE TABLE check_in_request (
                        submitter_user_id TEXT NOT NULL,
                        client_request_id TEXT NOT NULL,
                        check_in_id TEXT NOT NULL,
                        PRIMARY KEY (submitter_user_id, client_request_id)
                    );

                    -- Check-ins per session and local day; deleting one does not give its place back.
                    CREATE TABLE daily_count (
                        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                        local_day TEXT NOT NULL,
                        count INTEGER NOT NULL,
                        PRIMARY KEY (session_id, local_day)
                    );

                    CREATE TABLE template (
                        id TEXT PRIMARY KEY NOT NULL,
                        nest_id TEXT NOT NULL REFERENCES nest(id) ON DELETE CASCADE,
                        text TEXT NOT NULL COLLATE NOCASE,
                        created_at DATETIME NOT NULL,
                        UNIQUE (nest_id, text)
                    );
                    """
            )
        }
        Outbox.registerMigration(in: &migrator)
        migrator.registerMigration("v2: photos") { db in
            try db.execute(
                sql: """
                    ALTER TABLE check_in ADD COLUMN photo_format TEXT;
                    ALTER TABLE check_in ADD COLUMN photo_width INTEGER;
                    ALTER TABLE check_in ADD COLUMN photo_height INTEGER;
                    ALTER TABLE check_in ADD COLUMN photo_bytes INTEGER;

                    -- Read only when a photo is asked for; goes with its check-in.
                    CREATE TABLE photo (
                        check_in_id TEXT PRIMARY KEY NOT NULL REFERENCES check_in(id) ON DELETE CASCADE,
                        full BLOB NOT NULL,
                        thumbnail BLOB NOT NULL,
                        thumbnail_width INTEGER NOT NULL,
                        thumbnail_height INTEGER NOT NULL,
                        format TEXT NOT NULL
                    );
                    """
            )
        }
        Relay.registerMigration(in: &migrator)
        migrator.registerMigration("v3: sessions by sitter and end") { db in
            // A sitter's nests (ListMyNests) are read from the sessions not yet ended, not every
            // session that ever named them.
            try db.execute(sql: "CREATE INDEX session_sitter_open ON session(sitter_user_id, ends_at)")
        }
        CheckinStore.registerErasedNestsMigration(in: &migrator)
        migrator.registerMigration("v5: the owner's language on a session") { db in
            // Sessions from before: English, as their pushes were.
            try db.execute(sql: "ALTER TABLE session ADD COLUMN owner_language TEXT NOT NULL DEFAULT 'en'")
        }
        return migrator
    }
}

extension NestRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.name = try row.decode(String.self, forColumn: "name")
        self.ownerUserID = try row.decode(String.self, forColumn: "owner_user_id")
        self.createdAt = try row.date("created_at")
    }
}

extension SessionRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.nestID = try row.decode(String.self, forColumn: "nest_id")
        self.ownerUserID = try row.decode(String.self, forColumn: "owner_user_id")
        self.sitterUserID = try row.decode(String.self, forColumn: "sitter_user_id")
        self.startsAt = try row.date("starts_at")
        self.endsAt = try row.date("ends_at")
        self.timeZone = try row.decode(String.self, forColumn: "time_zone")
        self.createdAt = try row.date("created_at")
        self.ownerLanguage = try row.decode(String.self, forColumn: "owner_language")
    }
}

extension CheckInRecord: ColumnWrites {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.sessionID = try row.decode(String.self, forColumn: "session_id")
        self.submitterUserID = try row.decode(String.self, forColumn: "submitter_user_id")
        self.caption = try row.decode(String.self, forColumn: "caption")
        self.capturedAt = try row.date("captured_at")
        self.createdAt = try row.date("created_at")
        self.photoAltText = try row.decode(String.self, forColumn: "photo_alt_text")
        self.viewedAt = try row.optionalDate("viewed_at")
        self.clientRequestID = try row.decode(String.self, forColumn: "client_request_id")
        self.photoFormat = try row.decode(String?.self, forColumn: "photo_format")
        self.photoWidth = try row.decode(Int?.self, forColumn: "photo_width")
        self.photoHeight = try row.decode(Int?.self, forColumn: "photo_height")
        self.photoBytes = try row.decode(Int?.self, forColumn: "photo_bytes")
    }

    static let columnNames = [
        "id", "session_id", "submitter_user_id", "caption", "captured_at", "created_at", "photo_alt_text",
        "viewed_at", "client_request_id", "photo_format", "photo_width", "photo_height", "photo_bytes",
    ]
    static let insertSQL = makeInsertSQL()

    var columnValues: [(any DatabaseValueConvertible)?] {
        [
            self.id, self.sessionID, self.submitterUserID, self.caption, self.capturedAt.stored,
            self.createdAt.stored, self.photoAltText, self.viewedAt?.stored, self.clientRequestID,
            self.photoFormat, self.photoWidth, self.photoHeight, self.photoBytes,
        ]
    }

    func encode(to container: inout PersistenceContainer) throws { self.encodeColumns(to: &container) }
}

extension TemplateRecord {
    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.nestID = try row.decode(String.self, forColumn: "nest_id")
        self.text = try row.decode(String.self, forColumn: "text")
        self.createdAt = try row.date("created_at")
    }
}
