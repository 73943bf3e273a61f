import Foundation
import GRDB
import HearthCore
import HearthStore

// The switch's history: what no rule reads any more goes after a while.
extension SafetyStore {
    /// How long heartbeats are kept: the rate limit reads the last hour; a request id older
    /// than this is no longer recognised as a repeat.
    static let heartbeatRetention: TimeInterval = 30 * 86_400
    /// How long alerts of periods before the last check-in are kept (nothing reads them; they
    /// are there to look at).
    static let alertRetention: TimeInterval = 90 * 86_400

    /// Deletes history no rule reads any more: heartbeats older than ``heartbeatRetention``,
    /// and alerts older than ``alertRetention`` of periods before the user's last check-in (an
    /// all-clear reads every alert since it; the current period's stay whatever their age),
    /// never one pending or under way. Users in batches, a bounded number of rows a
    /// transaction (``UserBatches``). Returns how many rows of each went.
    func pruneHistory(
        now: Date,
        usersPerBatch: Int,
        rowsPerTransaction: Int
    ) async throws -> (heartbeats: Int, alerts: Int) {
        let heartbeatsBefore = StoredDate(now.addingTimeInterval(-Self.heartbeatRetention))
        let alertsBefore = StoredDate(now.addingTimeInterval(-Self.alertRetention))
        let deleted = try await UserBatches.prune(
            writer: self.db,
            usersPerBatch: usersPerBatch,
            rowsPerTransaction: rowsPerTransaction,
            users: { db, after, limit in
                // Through the primary key, with the epoch of each user's last check-in.
                try Row.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT user_id, check_in_epoch FROM profile WHERE user_id > ? ORDER BY user_id LIMIT ?"
                    ),
                    arguments: [after, limit]
                ).map { (user: $0["user_id"] as String, checkInEpoch: $0["check_in_epoch"] as Int) }
            },
            id: \.user,
            delete: { db, profile, budget in
                try db.cachedStatement(
                    sql: """
                        DELETE FROM heartbeat WHERE user_id = ? AND request_id IN (
                            SELECT request_id FROM heartbeat WHERE user_id = ? AND at < ? LIMIT ?)
                        """
                ).execute(arguments: [profile.user, profile.user, heartbeatsBefore, budget])
                let heartbeats = db.changesCount
                guard heartbeats < budget else { return ["heartbeats": heartbeats] }
                try db.cachedStatement(
                    sql: """
                        DELETE FROM alert WHERE rowid IN (
                            SELECT rowid FROM alert WHERE user_id = ? AND epoch < ? AND created_at < ?
                                AND state != 'pending' AND claimed_at IS NULL
                            LIMIT ?)
                        """
                ).execute(arguments: [profile.user, profile.checkInEpoch, alertsBefore, budget - heartbeats])
                return ["heartbeats": heartbeats, "alerts": db.changesCount]
            }
        )
        // The day's invitations are counted from these: older ones count for nothing.
        try await self.base.write { db in
            try db.cachedStatement(sql: "DELETE FROM invitation_sent WHERE at < ?")
                .execute(binding: StoredDate(now.addingTimeInterval(-86_400)))
        }
        return (deleted["heartbeats", default: 0], deleted["alerts", default: 0])
    }
}
