import Foundation
import GRDB
import Testing

@testable import HearthStore

@Suite("Column reads")
struct ColumnReadsTests {
    private func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, at DATETIME, flag BOOLEAN)")
            try db.execute(
                sql: "INSERT INTO t VALUES (1, 'one', ?, 1), (2, NULL, NULL, 0), (3, 'three', ?, 0)",
                arguments: [Date(timeIntervalSince1970: 1_767_225_600.5).stored, Date(timeIntervalSince1970: 0).stored]
            )
        }
        return queue
    }

    @Test("rows read by position: values, NULLs, dates as GRDB reads them")
    func readsByPosition() throws {
        try self.database().write { db in
            let statement = try db.cachedStatement(sql: "SELECT id, name, at, flag FROM t WHERE id >= ? ORDER BY id")
            let rows = try statement.fetchAll(binding: 1) { columns in
                (
                    try columns.value(0) as Int, columns.optional(1) as String?, try columns.optionalDate(2),
                    try columns.value(3) as Bool
                )
            }
            #expect(rows.map(\.0) == [1, 2, 3])
            #expect(rows.map(\.1) == ["one", nil, "three"])
            #expect(
                rows.map(\.2) == [Date(timeIntervalSince1970: 1_767_225_600.5), nil, Date(timeIntervalSince1970: 0)]
            )
            #expect(rows.map(\.2) == (try Date?.fetchAll(db, sql: "SELECT at FROM t ORDER BY id")))
            #expect(rows.map(\.3) == [true, false, false])
        }
    }

    @Test("a NULL where a value must be is an error, not a default")
    func nullIsAnError() throws {
        try self.database().read { db in
            let statement = try db.cachedStatement(sql: "SELECT name, at FROM t WHERE id = ?")
            #expect(throws: StoredValueError.self) {
                _ = try statement.fetchOne(binding: 2) { try $0.value(0) as String }
            }
            #expect(throws: StoredValueError.self) {
                _ = try statement.fetchOne(binding: 2) { try $0.date(1) }
            }
        }
    }

    @Test("a reader that throws leaves no statement running; a non-date where a date must be is an error")
    func throwingReader() throws {
        try self.database().write { db in
            let statement = try db.cachedStatement(sql: "SELECT name, flag FROM t ORDER BY id")
            #expect(throws: StoredValueError.self) {
                try statement.forEachRow { columns in _ = try columns.date(0) }
            }
            #expect(throws: StoredValueError.self) {
                _ = try statement.fetchOne { try $0.optionalDate(0) }
            }
            try db.execute(sql: "DROP TABLE t")
        }
    }

    @Test("fetchOne takes the first row, leaves the statement finished and ready for other arguments")
    func fetchOneFinishes() throws {
        try self.database().write { db in
            let statement = try db.cachedStatement(sql: "SELECT id FROM t WHERE id >= ? ORDER BY id")
            #expect(try statement.fetchOne(binding: 2) { try $0.value(0) as Int } == 2)
            #expect(try statement.fetchOne(binding: 4) { try $0.value(0) as Int } == nil)
            #expect(try statement.fetchOne(binding: 1) { try $0.value(0) as Int } == 1)
            // Nothing is left running: the table can be dropped in the same transaction.
            try db.execute(sql: "DROP TABLE t")
        }
    }
}
