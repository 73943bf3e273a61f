public import Foundation
public import Logging
public import PostgresNIO

/// A row's columns taken by position, as the SQLite stores read theirs: the query's select list
/// fixes the order.
public struct PostgresCells {
    let row: PostgresRandomAccessRow

    public func value<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T {
        try self.row[index].decode(T.self)
    }

    public func date(_ index: Int) throws -> Date {
        try self.row[index].decode(PostgresTime.self).date
    }

    public func optionalDate(_ index: Int) throws -> Date? {
        try self.row[index].decode(PostgresTime?.self)?.date
    }
}

extension PostgresConnection {
    /// Queries are not logged by the stores (their values may be personal).
    public static let quietLogger = Logger(label: "hearth.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `query`, reading nothing back.
    public func run(_ query: PostgresQuery) async throws {
        try await self.query(query, logger: Self.quietLogger)
    }

    /// Every row of `query`, each made by `make`.
    public func rows<T>(_ query: PostgresQuery, _ make: (PostgresCells) throws -> T) async throws -> [T] {
        var all: [T] = []
        for try await row in try await self.query(query, logger: Self.quietLogger) {
            all.append(try make(PostgresCells(row: row.makeRandomAccess())))
        }
        return all
    }

    /// The first row of `query`, made by `make`; nil when it has none.
    public func first<T>(_ query: PostgresQuery, _ make: (PostgresCells) throws -> T) async throws -> T? {
        try await self.rows(query, make).first
    }

    /// How many rows `query` answered: a count of what an `UPDATE ... RETURNING 1` changed.
    public func count(_ query: PostgresQuery) async throws -> Int {
        try await self.rows(query) { _ in () }.count
    }

    /// Holds the transaction's lock on `key` (another transaction asking for it waits until this
    /// one ends): what serializes changes to one user's rows across processes.
    public func lock(_ key: String) async throws {
        // Read to the end: an error while waiting (a timeout, a cancel) must reach the caller.
        _ = try await self.count("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))")
    }

    /// Takes the transaction's lock on `key` if no one holds it; false when someone does.
    public func tryLock(_ key: String) async throws -> Bool {
        try await self.first("SELECT pg_try_advisory_xact_lock(hashtextextended(\(key), 0))") {
            try $0.value(0, as: Bool.self)
        } ?? false
    }

    /// Holds the transaction's locks on every one of `keys`, taken in their sorted order in one
    /// statement: two transactions that lock sets of keys this way never wait on each other in
    /// a circle.
    public func lock(_ keys: some Collection<String>) async throws {
        guard !keys.isEmpty else { return }
        // Read to the end (an error while waiting must reach the caller), as for one key.
        try await self.run(Locks(keys: Array(keys)))
    }

    /// Takes the transaction's lock on each of `keys` that no one holds, in one statement;
    /// answers the keys it holds now.
    public func tryLock(_ keys: some Collection<String>) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return Set(try await self.rows(TryLocks(keys: Array(keys))) { try $0.value(0, as: String.self) })
    }
}

/// The locks on `keys`, taken in their sorted order (``PostgresConnection/lock(_:)-(some Collection<String>)``).
struct Locks: PreparedSQL {
    static let sql = Self(keys: []).query.sql
    let keys: [String]

    var query: PostgresQuery {
        // The subquery's order is the order the locks are taken in (an aggregate over it reads
        // its rows as sorted).
        """
        SELECT count(pg_advisory_xact_lock(hashtextextended(key, 0)))
        FROM (SELECT DISTINCT key FROM unnest(\(self.keys)::text[]) AS key ORDER BY key) AS sorted
        """
    }
}

/// The locks on those of `keys` no one holds (``PostgresConnection/tryLock(_:)-(some Collection<String>)``).
struct TryLocks: PreparedSQL {
    static let sql = Self(keys: []).query.sql
    let keys: [String]

    var query: PostgresQuery {
        """
        SELECT key FROM (SELECT DISTINCT key FROM unnest(\(self.keys)::text[]) AS key ORDER BY key) AS sorted
        WHERE pg_try_advisory_xact_lock(hashtextextended(key, 0))
        """
    }
}
