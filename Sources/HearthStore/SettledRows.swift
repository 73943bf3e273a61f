public import Foundation
public import GRDB
import HearthCore

/// Keeps an outbox table (`delivered_at`, `failed_at`) from growing without end: rows settled
/// (delivered, or given up) longer than `retention` ago are deleted, a bounded batch per
/// transaction so that the writer is never held for long, at most once per `interval`.
/// Pending rows are never touched. The table needs ``indexSQL(table:)``.
public final class SettledRows: Sendable {
    public let table: String
    public let retention: TimeInterval
    private let gate: IntervalGate

    /// Rows deleted per transaction.
    static let batch = 1000

    public init(table: String, retention: TimeInterval, interval: TimeInterval = 3600) {
        self.table = table
        self.retention = retention
        self.gate = IntervalGate(interval: interval)
    }

    /// The index pruning reads by: settled rows by when they settled.
    public static func indexSQL(table: String) -> String {
        """
        CREATE INDEX \(table)_settled ON \(table)(COALESCE(delivered_at, failed_at))
            WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL
        """
    }

    /// The rows of `table` settled before the one argument, found through the index.
    static func settledBeforeSQL(table: String) -> String {
        """
        SELECT rowid FROM \(table)
        WHERE (delivered_at IS NOT NULL OR failed_at IS NOT NULL) AND COALESCE(delivered_at, failed_at) < ?
        """
    }

    /// Deletes what settled before `now - retention`, unless it did so less than `interval`
    /// ago; returns how many rows went.
    @discardableResult
    public func pruneIfDue(now: Date, writer: any DatabaseWriter) async throws -> Int {
        guard self.gate.admits(now: now) else { return 0 }
        let cutoff = now.addingTimeInterval(-self.retention)
        let sql =
            "DELETE FROM \(self.table) WHERE rowid IN (\(Self.settledBeforeSQL(table: self.table)) LIMIT \(Self.batch))"
        var deleted = 0
        while true {
            let count = try await writer.write { db in
                try db.execute(sql: sql, arguments: [cutoff])
                return db.changesCount
            }
            deleted += count
            if count < Self.batch { return deleted }
        }
    }
}
