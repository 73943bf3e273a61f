import Foundation
import GRDB
import HearthStore

/// What a ``ColumnWrites`` record's hand-written column list is checked against: the columns
/// its `Codable` conformance names, and what a read of the inserted row gives back.
public enum ColumnWritesCheck {
    /// Inserts `record` with ``ColumnWrites/insertPrepared(_:)`` into a fresh copy of the
    /// schema `migrator` makes (foreign keys off: the record stands alone), reads the row back
    /// by its rowid, and returns it with the keys `Codable` encodes and the columns written.
    /// Give a record whose optional fields are all set, so that `Codable` encodes every key.
    public static func roundTrip<Record: ColumnWrites & FetchableRecord & Encodable>(
        _ record: Record,
        migrator: DatabaseMigrator
    ) throws -> (readBack: Record?, codableKeys: Set<String>, columns: Set<String>) {
        let queue = try DatabaseQueue()
        try migrator.migrate(queue)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA foreign_keys = OFF") }
        let readBack = try queue.write { db in
            try record.insertPrepared(db)
            return try Record.fetchOne(
                db,
                sql: "SELECT * FROM \(Record.databaseTableName) WHERE rowid = ?",
                arguments: [db.lastInsertedRowID]
            )
        }
        return (readBack, try Self.codableKeys(record), Set(Record.columnNames))
    }

    /// The keys `record`'s `Codable` conformance encodes (nil optionals left out).
    public static func codableKeys(_ record: some Encodable) throws -> Set<String> {
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(record)) as? [String: Any] ?? [:]
        return Set(json.keys)
    }
}
