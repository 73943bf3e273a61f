public import Foundation
public import GRDB

/// The current row of a statement, read column by column straight from SQLite.
///
/// For reads on a hot path: every fetch through GRDB's `Row` first indexes the statement's
/// column names (each one copied and lowercased into a dictionary), which cost more than the
/// read itself on the heartbeat's writer. Columns are taken by position, so the statement
/// selects them in the order its reader takes them. Values convert as SQLite converts them, as
/// they do through GRDB's rows. Valid only inside the reader it is given.
public struct StatementColumns {
    @usableFromInline let statement: SQLiteStatement

    @usableFromInline init(statement: SQLiteStatement) { self.statement = statement }

    /// The value at `index` (0-based).
    /// - Throws: ``StoredValueError`` when it is NULL.
    @inlinable public func value<T: StatementColumnConvertible>(_ index: Int) throws -> T {
        guard let value = T.fromStatement(self.statement, atUncheckedIndex: CInt(index)) else {
            throw StoredValueError(message: "column \(index) is NULL where a \(T.self) must be")
        }
        return value
    }

    /// The value at `index`, nil when NULL.
    @inlinable public func optional<T: StatementColumnConvertible>(_ index: Int) -> T? {
        T.fromStatement(self.statement, atUncheckedIndex: CInt(index))
    }

    /// The date at `index`, as a `Date` column stores it.
    /// - Throws: ``StoredValueError`` when it is NULL or not a date.
    public func date(_ index: Int) throws -> Date {
        guard let date = try self.optionalDate(index) else {
            throw StoredValueError(message: "column \(index) is NULL where a date must be")
        }
        return date
    }

    /// The date at `index`, nil when NULL.
    /// - Throws: ``StoredValueError`` when it is something other than a date.
    public func optionalDate(_ index: Int) throws -> Date? {
        let value = DatabaseValue(sqliteStatement: self.statement, index: CInt(index))
        if value.isNull { return nil }
        guard let date = StoredDate.fromDatabaseValue(value)?.date else {
            throw StoredValueError(message: "column \(index) holds \(value), not a date")
        }
        return date
    }
}

@available(*, unavailable)
extension StatementColumns: Sendable {}

/// A stored value that is not what its reader expects.
public struct StoredValueError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { self.message }

    public init(message: String) { self.message = message }
}

extension Statement {
    /// Every row of the statement run with `values` bound (see ``bind(_:)``), each made by
    /// `read` from its columns.
    @inlinable public func fetchAll<T, each Value: StatementBinding>(
        binding values: repeat each Value,
        read: (StatementColumns) throws -> T
    ) throws -> [T] {
        var rows: [T] = []
        try self.forEachRow(binding: repeat each values) { rows.append(try read($0)) }
        return rows
    }

    /// The first row, made by `read`; nil when there is none. The statement runs to its end,
    /// so that it is not left open in the transaction.
    @inlinable public func fetchOne<T, each Value: StatementBinding>(
        binding values: repeat each Value,
        read: (StatementColumns) throws -> T
    ) throws -> T? {
        var first: T?
        try self.forEachRow(binding: repeat each values) { columns in
            if first == nil { first = try read(columns) }
        }
        return first
    }

    /// Runs the statement with `values` bound (see ``bind(_:)``), calling `body` for each row.
    /// `body` must not run this same statement (a cached statement is one per SQL text).
    @inlinable public func forEachRow<each Value: StatementBinding>(
        binding values: repeat each Value,
        row body: (StatementColumns) throws -> Void
    ) throws {
        try self.bind(repeat each values)
        try self.forEachBoundRow(body)
    }

    /// Every row of the statement run with `arguments` (a list built at run time), each made by
    /// `read` from its columns.
    public func fetchAll<T>(arguments: StatementArguments, read: (StatementColumns) throws -> T) throws -> [T] {
        try self.setArguments(arguments)
        var rows: [T] = []
        try self.forEachBoundRow { rows.append(try read($0)) }
        return rows
    }

    /// Runs the statement with the values bound to it, calling `body` for each row.
    @inlinable func forEachBoundRow(_ body: (StatementColumns) throws -> Void) throws {
        try withoutActuallyEscaping(body) { body in
            do {
                let rows = ColumnCursor(statement: self, body: body)
                while try rows.next() != nil {}  // each step hands its row to `body`
            } catch {
                self.abandonRun()  // not left half run in the transaction
                throw error
            }
        }
    }
}

/// Steps a statement through GRDB's own cursor machinery (which keeps its bookkeeping of
/// what runs), handing each row's columns to `body`.
@usableFromInline final class ColumnCursor: DatabaseCursor {
    @usableFromInline typealias Element = Void
    @usableFromInline let _statement: Statement
    @usableFromInline var _isDone = false
    @usableFromInline let body: (StatementColumns) throws -> Void

    @usableFromInline init(statement: Statement, body: @escaping (StatementColumns) throws -> Void) {
        self._statement = statement
        self.body = body
    }

    @usableFromInline func _element(sqliteStatement: SQLiteStatement) throws {
        try self.body(StatementColumns(statement: sqliteStatement))
    }
}
