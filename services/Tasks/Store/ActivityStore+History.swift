import Foundation
import GRDB
import HearthCore
import HearthStore

// Housekeeping: the location history no rule reads any more.
extension ActivityStore {
    /// How long location events, their repeats and offers are kept: longer than any rule reads
    /// them (the ledger looks two days back, statistics a year), so GetOfferStats covers the
    /// last 400 days.
    static let historyRetention: TimeInterval = 400 * 86_400

    /// The tables pruned, each with the time its rows age by (indexed after `user_id`).
    private static let history = [
        (table: "location_event", time: "occurred_at"),
        (table: "location_event_repeat", time: "occurred_at"),
        (table: "offer", time: "deliver_at"),
    ]

    /// Deletes the rows of ``history`` older than ``historyRetention``, user by user through
    /// their `(user_id, time)` indexes (users found by index seeks), in bounded transactions
    /// (``UserBatches``). Answers how many rows went from each table.
    func pruneHistory(now: Date, usersPerBatch: Int = 500, rowsPerTransaction: Int = 5000) async throws
        -> [String: Int]
    {
        let before = now.addingTimeInterval(-Self.historyRetention)
        var deleted: [String: Int] = [:]
        for (table, time) in Self.history {
            let gone = try await UserBatches.prune(
                writer: self.base.writer,
                usersPerBatch: usersPerBatch,
                rowsPerTransaction: rowsPerTransaction,
                users: { db, after, limit in
                    var users: [String] = []
                    let next = try db.cachedStatement(
                        sql: "SELECT user_id FROM \(table) WHERE user_id > ? ORDER BY user_id LIMIT 1"
                    )
                    while users.count < limit, let user = try String.fetchOne(next, arguments: [users.last ?? after]) {
                        users.append(user)
                    }
                    return users
                },
                id: { $0 },
                delete: { db, user, budget in
                    try db.cachedStatement(
                        sql: """
                            DELETE FROM \(table) WHERE rowid IN (
                                SELECT rowid FROM \(table) WHERE user_id = ? AND \(time) < ? LIMIT ?)
                            """
                    ).execute(arguments: [user, before, budget])
                    return [table: db.changesCount]
                }
            )
            deleted.merge(gone, uniquingKeysWith: +)
        }
        return deleted
    }
}
