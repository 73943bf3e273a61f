public import GRDB

/// A record written column by column: its columns and their values in one order, so that it
/// is inserted with one prepared statement (``insertPrepared(_:)``) and saved by GRDB's
/// `update`/`insert` without the `Encodable` path (``encodeColumns(to:)``). GRDB's own insert
/// of a `Codable` record builds its statement, an `Encodable` container and, for each date, a
/// `DateFormatter` string on every call: a fifth of ReportLocationEvent's CPU.
///
/// Dates go in as ``StoredDate`` (`date.stored`), which GRDB reads back as it reads its own.
public protocol ColumnWrites: TableRecord {
    /// The table's columns this record writes, in the order of ``columnValues``.
    static var columnNames: [String] { get }
    /// `INSERT INTO table (columnNames) VALUES (?, ...)`: `static let insertSQL = insertSQL()`.
    static var insertSQL: String { get }
    /// The values of ``columnNames``, in their order.
    var columnValues: [(any DatabaseValueConvertible)?] { get }
}

extension ColumnWrites {
    /// The INSERT statement of ``columnNames``, to keep in ``insertSQL``.
    public static func makeInsertSQL() -> String {
        let columns = Self.columnNames.joined(separator: ", ")
        let marks = Array(repeating: "?", count: Self.columnNames.count).joined(separator: ", ")
        return "INSERT INTO \(Self.databaseTableName) (\(columns)) VALUES (\(marks))"
    }

    /// Inserts the record with a statement prepared once per connection.
    public func insertPrepared(_ db: Database) throws {
        try db.cachedStatement(sql: Self.insertSQL).execute(arguments: StatementArguments(self.columnValues))
    }

    /// For `encode(to:)`: the columns and their values, without `Encodable`.
    public func encodeColumns(to container: inout PersistenceContainer) {
        for (name, value) in zip(Self.columnNames, self.columnValues) { container[name] = value }
    }
}
