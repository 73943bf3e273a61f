import Foundation
import GRDB
import Testing

@testable import HearthStore

@Suite("Parameter binding")
struct ParameterBindingTests {
    private func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, count INTEGER, flag BOOLEAN, at DATETIME)"
            )
        }
        return queue
    }

    /// Each stored value with its SQLite type, as text, so that any difference shows.
    private func stored(_ db: Database, id: Int) throws -> [String] {
        try Row.fetchOne(
            db,
            sql: """
                SELECT typeof(name) || ':' || ifnull(name, ''), typeof(count) || ':' || ifnull(count, ''),
                  typeof(flag) || ':' || ifnull(flag, ''), typeof(at) || ':' || ifnull(at, '')
                FROM t WHERE id = ?
                """,
            arguments: [id]
        ).map { row in (0..<4).map { row[$0] as String } } ?? []
    }

    @Test("values are stored as GRDB's arguments store them, dates in and out of StoredDate's range included")
    func storedAsGRDBStoresThem() throws {
        let dates = [
            Date(timeIntervalSince1970: 1_767_225_600.5),
            Date(timeIntervalSince1970: -0.0005),
            Date(timeIntervalSince1970: -5_000_000_000),  // 1811: GRDB's formatter, not StoredDate's
            Date(timeIntervalSince1970: 300_000_000_000),  // past 9999
        ]
        try self.database().write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)")
            for (offset, date) in dates.enumerated() {
                let name: String? = offset.isMultiple(of: 2) ? "名前 \(offset)" : nil
                try insert.execute(binding: offset * 2, name, Int64(offset - 2), offset == 1, date.stored)
                try db.execute(
                    sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                    arguments: [offset * 2 + 1, name, Int64(offset - 2), offset == 1, date]
                )
                #expect(try self.stored(db, id: offset * 2) == self.stored(db, id: offset * 2 + 1))
            }
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") == 2 * dates.count)
        }
    }

    @Test("as many values as parameters, or an error and nothing bound; the statement still runs after")
    func countMustMatch() throws {
        try self.database().write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (id, name) VALUES (?, ?)")
            for wrong in [{ try insert.execute(binding: 1) }, { try insert.execute(binding: 1, "a", "b") }] {
                let error = try #require(throws: DatabaseError.self, performing: wrong)
                #expect(error.resultCode == .SQLITE_MISUSE)
            }
            let query = try db.cachedStatement(sql: "SELECT COUNT(*) FROM t")
            #expect(try query.fetchOne { try $0.value(0) as Int } == 0)
            try insert.execute(binding: 1, "a")
            #expect(try query.fetchOne { try $0.value(0) as Int } == 1)
        }
    }

    @Test("a statement bound here runs again with GRDB's own arguments, and the other way round")
    func mixesWithGRDBArguments() throws {
        try self.database().write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO t (id, name) VALUES (?, ?)")
            try insert.execute(binding: 1, "bound")
            try insert.execute(arguments: [2, "grdb"])
            try insert.execute(binding: 3, "bound again")
            // No new values: GRDB runs it with the ones bound last (id 3 again: a duplicate key).
            #expect(throws: DatabaseError.self) { try insert.execute() }
            let names = try String.fetchAll(db, sql: "SELECT name FROM t ORDER BY id")
            #expect(names == ["bound", "grdb", "bound again"])
        }
    }
}
