import Foundation
import HearthPostgres
import HearthStore
import PostgresNIO

/// A row's columns taken by position, on either store: what a record's reading needs, so that
/// each record reads its select list once, for SQLite (``StatementColumns``) and PostgreSQL
/// (``PostgresCells``) alike.
protocol StoredColumns {
    func string(_ index: Int) throws -> String
    func int(_ index: Int) throws -> Int
    func bool(_ index: Int) throws -> Bool
    func bytes(_ index: Int) throws -> Data
    func date(_ index: Int) throws -> Date
    func optionalDate(_ index: Int) throws -> Date?
}

extension StatementColumns: StoredColumns {
    func string(_ index: Int) throws -> String { try self.value(index) }
    func int(_ index: Int) throws -> Int { try self.value(index) }
    func bool(_ index: Int) throws -> Bool { try self.value(index) }
    func bytes(_ index: Int) throws -> Data { try self.value(index) }
}

extension PostgresCells: StoredColumns {
    func string(_ index: Int) throws -> String { try self.value(index) }
    func int(_ index: Int) throws -> Int { try self.value(index) }
    func bool(_ index: Int) throws -> Bool { try self.value(index) }
    func bytes(_ index: Int) throws -> Data { try self.value(index) }
}
