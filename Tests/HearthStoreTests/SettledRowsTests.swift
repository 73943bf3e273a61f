import Foundation
import GRDB
import Testing

@testable import HearthStore

@Suite("Settled outbox rows")
struct SettledRowsTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let day: TimeInterval = 86_400

    private func table() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql: "CREATE TABLE box (id TEXT PRIMARY KEY NOT NULL, delivered_at DATETIME, failed_at DATETIME)"
            )
            try db.execute(sql: SettledRows.indexSQL(table: "box"))
        }
        return queue
    }

    private func add(_ queue: DatabaseQueue, _ count: Int, delivered: Date? = nil, failed: Date? = nil) throws {
        try queue.write { db in
            for _ in 0..<count {
                try db.execute(
                    sql: "INSERT INTO box VALUES (?, ?, ?)",
                    arguments: [UUID().uuidString, delivered, failed]
                )
            }
        }
    }

    @Test("rows settled before the retention go, in batches; pending and recent ones stay; once an interval")
    func prunes() async throws {
        let queue = try self.table()
        let settled = SettledRows(table: "box", retention: 7 * self.day, interval: 3600)
        let cutoff = self.now - 7 * self.day
        try self.add(queue, 2 * SettledRows.batch + 500, delivered: cutoff - 1)
        try self.add(queue, 10, failed: cutoff - 60)
        try self.add(queue, 5)  // pending however old
        try self.add(queue, 3, delivered: cutoff)  // exactly at the retention: kept
        try self.add(queue, 2, failed: self.now)

        #expect(try await settled.pruneIfDue(now: self.now, writer: queue) == 2 * SettledRows.batch + 510)
        #expect(try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM box") } == 10)

        try self.add(queue, 1, delivered: cutoff - 1)
        #expect(try await settled.pruneIfDue(now: self.now + 3599, writer: queue) == 0, "not within the interval")
        // An hour on, the new row and the three that were exactly at the retention go.
        #expect(try await settled.pruneIfDue(now: self.now + 3600, writer: queue) == 4)
        #expect(try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM box") } == 7)
    }

    @Test("the rows to delete are found through the index, not by reading the table")
    func usesTheIndex() throws {
        let plan = try self.table().read { db in
            try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN \(SettledRows.settledBeforeSQL(table: "box")) LIMIT \(SettledRows.batch)",
                arguments: [self.now]
            ).map { $0["detail"] as String }.joined(separator: "\n")
        }
        #expect(
            plan.contains("USING INDEX box_settled") || plan.contains("USING COVERING INDEX box_settled"),
            "\(plan)"
        )
    }
}
