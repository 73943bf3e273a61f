import Foundation
import HearthPostgres
import HearthTestSupport
import Logging
import PostgresNIO
import Testing

/// ``BoundRows`` on a real PostgreSQL: rows bound as one array a column come back as they were
/// bound, NULLs and empty values included, and the statement's text does not depend on how many
/// rows it carries.
@Suite("Rows bound as arrays", .timeLimit(.minutes(2)))
struct BoundRowsTests {
    static let logger = Logger(label: "bound-rows", factory: { _ in SwiftLogNoOpLogHandler() })

    struct Written: Equatable {
        var id: String
        var note: String?
        var count: Int?
        var flag: Bool?
        var bytes: [UInt8]?
        var at: Date?
    }

    static let t0 = Date(timeIntervalSince1970: 1_773_144_000.123)

    static let written = [
        Written(id: "a", note: "héllo, 'quoted' \"too\"", count: -7, flag: true, bytes: [0, 1, 255], at: t0),
        Written(id: "b", note: nil, count: nil, flag: nil, bytes: nil, at: nil),
        Written(id: "c", note: "", count: Int.max, flag: false, bytes: [], at: Date(timeIntervalSince1970: -86_400.5)),
    ]

    static func rows(_ written: [Written]) -> BoundRows {
        var rows = BoundRows(columns: .text, .text, .int8, .bool, .bytea, .timestamptz)
        for row in written {
            rows.append {
                $0.bind(row.id)
                $0.bind(row.note)
                $0.bind(row.count)
                $0.bind(row.flag)
                $0.bind(row.bytes.map { ByteBuffer(bytes: $0) })
                $0.bind(row.at.postgres)
            }
        }
        return rows
    }

    static func insert(_ rows: BoundRows) -> PostgresQuery {
        rows.query { "INSERT INTO bound (id, note, count, flag, bytes, at) \($0)" }
    }

    static func readBack(_ db: PostgresConnection) async throws -> [Written] {
        try await db.rows("SELECT id, note, count, flag, bytes, at FROM bound ORDER BY id") {
            Written(
                id: try $0.value(0),
                note: try $0.value(1),
                count: try $0.value(2),
                flag: try $0.value(3),
                bytes: try $0.value(4, as: ByteBuffer?.self).map { Array($0.readableBytesView) },
                at: try $0.optionalDate(5)
            )
        }
    }

    @Test("rows come back as bound, NULLs and empty values included, whatever their number")
    func roundTrip() async throws {
        try await withPostgresServer { server in
            try await PostgresPool.withSetupConnection(server.location, logger: Self.logger) { db in
                try await db.run(
                    """
                    CREATE TABLE bound (id TEXT PRIMARY KEY, note TEXT, count BIGINT, flag BOOLEAN, bytes BYTEA,
                        at TIMESTAMPTZ)
                    """
                )
                try await db.run(Self.insert(Self.rows(Self.written)))
                let expected = Self.written.map { row in
                    var row = row
                    row.at = row.at.map(PostgresTime.rounded)
                    return row
                }
                #expect(try await Self.readBack(db) == expected)
                // One row or three: the same text, bound differently.
                #expect(
                    Self.insert(Self.rows(Array(Self.written.prefix(1)))).sql
                        == Self.insert(Self.rows(Self.written)).sql
                )
            }
        }
    }

    @Test("values bound for the rest of the statement are numbered apart from the columns")
    func valuesBesideTheRows() async throws {
        try await withPostgresServer { server in
            try await PostgresPool.withSetupConnection(server.location, logger: Self.logger) { db in
                try await db.run("CREATE TABLE bound (id TEXT PRIMARY KEY, note TEXT, count BIGINT)")
                try await db.run("INSERT INTO bound VALUES ('a', 'x', 1), ('b', 'y', 2), ('c', 'z', 3)")
                var rows = BoundRows(columns: .text, .int8)
                let suffix = rows.bind("!")
                for (id, count) in [("a", 10), ("c", 30)] {
                    rows.append {
                        $0.bind(id)
                        $0.bind(count)
                    }
                }
                let prefix = rows.bind(">")
                let updated = try await db.count(
                    rows.query { values in
                        """
                        UPDATE bound SET note = \(prefix) || bound.note || \(suffix), count = v.count
                        FROM (\(values)) AS v(id, count) WHERE bound.id = v.id RETURNING 1
                        """
                    }
                )
                #expect(updated == 2)
                let all = try await db.rows("SELECT id, note, count FROM bound ORDER BY id") {
                    "\(try $0.value(0, as: String.self)) \(try $0.value(1, as: String.self)) \(try $0.value(2, as: Int.self))"
                }
                #expect(all == ["a >x! 10", "b y 2", "c >z! 30"])
            }
        }
    }
}

/// A ``PreparedSQL`` statement on a real PostgreSQL: prepared once a connection and run many
/// times (past the five runs after which PostgreSQL may keep a generic plan), inside a
/// transaction too; and after its preparation failed on a connection, prepared again under a
/// new name rather than failing there for the connection's life.
@Suite("Prepared statements", .timeLimit(.minutes(2)))
struct PreparedSQLTests {
    struct NotesOf: PreparedSQL {
        static let sql = Self(ids: []).query.sql
        let ids: [String]

        var query: PostgresQuery { "SELECT id, note FROM prepared WHERE id = ANY(\(self.ids)) ORDER BY id" }
    }

    struct FirstInFailedTransaction: PreparedSQL {
        static let sql = Self(id: "").query.sql
        let id: String
        var query: PostgresQuery { "SELECT note FROM prepared WHERE id = \(self.id)" }
    }

    static func notes(_ ids: [String], on db: PostgresConnection) async throws -> [String] {
        try await db.rows(NotesOf(ids: ids)) {
            "\(try $0.value(0, as: String.self))=\(try $0.value(1, as: String.self))"
        }
    }

    @Test("run many times, in and out of a transaction; prepared again after its preparation failed")
    func preparedOnceAndAgain() async throws {
        try await withPostgresServer { server in
            try await PostgresPool.withSetupConnection(server.location, logger: BoundRowsTests.logger) { db in
                try await db.run("CREATE TABLE prepared (id TEXT PRIMARY KEY, note TEXT NOT NULL)")
                try await db.run("INSERT INTO prepared VALUES ('a', 'x'), ('b', 'y'), ('c', 'z')")
                for round in 0..<8 {
                    let ids = round % 2 == 0 ? ["a", "c"] : ["b"]
                    #expect(try await Self.notes(ids, on: db) == (round % 2 == 0 ? ["a=x", "c=z"] : ["b=y"]))
                }
                let seen = try await db.inTransaction(logger: BoundRowsTests.logger) { db in
                    try await db.run("UPDATE prepared SET note = 'w' WHERE id = 'a'")
                    return try await Self.notes(["a"], on: db)
                }
                #expect(seen == ["a=w"])
                // A statement first prepared in a transaction that has already failed: its
                // preparation fails (25P02) and would stay failed on this connection.
                let nameBefore = FirstInFailedTransaction.name
                await #expect(throws: PSQLError.self) {
                    try await db.inTransaction(logger: BoundRowsTests.logger) { db in
                        _ = try? await db.run("SELECT 1 / 0")
                        try await db.run(FirstInFailedTransaction(id: "a"))
                    }
                }
                #expect(FirstInFailedTransaction.name != nameBefore)
                let after = try await db.rows(FirstInFailedTransaction(id: "b")) { try $0.value(0, as: String.self) }
                #expect(after == ["y"])
            }
        }
    }
}
