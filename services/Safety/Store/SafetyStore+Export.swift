import Foundation
import GRDB
import HearthStore

// A user's export (hearth.account.v1): what safety holds about them. The profile, contacts and
// status are read as their own calls read them (names and addresses opened); this reads what
// only an export shows, the check-ins kept.
extension SafetyStore {
    /// One check-in as its heartbeat row keeps it. Its request id (kept by source, only to know
    /// a retry) is not part of it.
    struct CheckInRow: Sendable, Equatable {
        /// When it happened: a forwarded activity's own time.
        var at: Date
        /// `app`, or the service that forwarded the activity (``SafetyRules/activitySources``).
        var source: String
        /// The zone it came with, or the profile's when it came without one.
        var timeZone: String
        var deviceInfo: String
        /// Whether it counted: one merged into the check-in before it, or over the rate limit,
        /// was kept without counting.
        var counted: Bool
    }

    /// The check-ins kept for `user` (``heartbeatRetention``: those of the last 30 days, until
    /// the hourly prune), oldest first. Nothing in them is sealed. On a reader thread: a user
    /// may have many thousands.
    func checkIns(of user: String) async throws -> [CheckInRow] {
        try await self.base.longRead { db in
            try db.cachedStatement(
                sql: """
                    SELECT at, source, time_zone, device_info, counted FROM heartbeat
                    WHERE user_id = ? ORDER BY at, request_id
                    """
            )
            .fetchAll(binding: user) { columns in
                CheckInRow(
                    at: try columns.date(0),
                    source: try columns.value(1),
                    timeZone: try columns.value(2),
                    deviceInfo: try columns.value(3),
                    counted: try columns.value(4)
                )
            }
        }
    }
}
