import GRDB
import HearthStore

// The nests and sessions a call's access check reads, and the check-ins a page lists, by
// position straight from SQLite (GRDB's `Decodable` rows look every column up by name and parse
// dates through calendars: most of GetNestRole's and GetSession's reading, a fifth of a page of
// check-ins). Reads select `selection` and take the columns in its order.

extension NestRecord {
    static let selection = "SELECT id, name, owner_user_id, created_at"

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.name = try columns.value(1)
        self.ownerUserID = try columns.value(2)
        self.createdAt = try columns.date(3)
    }
}

extension SessionRecord {
    static let selection = """
        SELECT id, nest_id, owner_user_id, sitter_user_id, starts_at, ends_at, time_zone, created_at, owner_language
        """

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.nestID = try columns.value(1)
        self.ownerUserID = try columns.value(2)
        self.sitterUserID = try columns.value(3)
        self.startsAt = try columns.date(4)
        self.endsAt = try columns.date(5)
        self.timeZone = try columns.value(6)
        self.createdAt = try columns.date(7)
        self.ownerLanguage = try columns.value(8)
    }
}

extension CheckInRecord {
    static let selection = "SELECT " + columnNames.joined(separator: ", ")

    /// A row of ``selection`` (``columnNames``, in their order).
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.sessionID = try columns.value(1)
        self.submitterUserID = try columns.value(2)
        self.caption = try columns.value(3)
        self.capturedAt = try columns.date(4)
        self.createdAt = try columns.date(5)
        self.photoAltText = try columns.value(6)
        self.viewedAt = try columns.optionalDate(7)
        self.clientRequestID = try columns.value(8)
        self.photoFormat = columns.optional(9)
        self.photoWidth = columns.optional(10)
        self.photoHeight = columns.optional(11)
        self.photoBytes = columns.optional(12)
    }
}
