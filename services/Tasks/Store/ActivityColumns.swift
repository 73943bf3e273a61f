import GRDB
import HearthStore

// The records ReportLocationEvent reads in its write transaction, read by position straight
// from SQLite (GRDB's rows index every column name on each fetch: 15% of that call's CPU).
// Reads select `selection` and take the columns in its order.

extension ActivityRecord {
    static let selection =
        "SELECT id, user_id, title, repeat_kind, priority, created_at, updated_at, last_completed_at"

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.id = try columns.value(0)
        self.userID = try columns.value(1)
        self.title = try columns.value(2)
        self.repeatKind = try columns.value(3)
        self.priority = try columns.value(4)
        self.createdAt = try columns.date(5)
        self.updatedAt = try columns.date(6)
        self.lastCompletedAt = try columns.optionalDate(7)
    }
}

extension RuleRecord {
    static let selection = """
        SELECT activity_id, label, latitude, longitude, radius_m, trigger, delay_minutes, cooldown_minutes,
          only_if_incomplete, enabled, updated_at, min_dwell_minutes
        """

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.activityID = try columns.value(0)
        self.label = try columns.value(1)
        self.latitude = try columns.value(2)
        self.longitude = try columns.value(3)
        self.radiusM = try columns.value(4)
        self.trigger = try columns.value(5)
        self.delayMinutes = try columns.value(6)
        self.cooldownMinutes = columns.optional(7)
        self.onlyIfIncomplete = try columns.value(8)
        self.enabled = try columns.value(9)
        self.updatedAt = try columns.date(10)
        self.minDwellMinutes = try columns.value(11)
    }
}

extension PreferencesRecord {
    static let selection = """
        SELECT user_id, enabled, daily_cap, min_spacing_minutes, default_cooldown_minutes, quiet_start, quiet_end,
          time_zone, updated_at
        """

    /// A row of ``selection``.
    init(columns: StatementColumns) throws {
        self.userID = try columns.value(0)
        self.enabled = try columns.value(1)
        self.dailyCap = try columns.value(2)
        self.minSpacingMinutes = try columns.value(3)
        self.defaultCooldownMinutes = try columns.value(4)
        self.quietStart = columns.optional(5)
        self.quietEnd = columns.optional(6)
        self.timeZone = try columns.value(7)
        self.updatedAt = try columns.date(8)
    }
}
