public import Logging
public import PostgresNIO

/// One named step of a store's schema, in plain SQL, one statement a string. Named and
/// append-only, as the SQLite stores' migrations: a shipped step is never edited.
public struct PostgresMigration: Sendable {
    public let name: String
    public let statements: [String]

    public init(_ name: String, _ statements: [String]) {
        self.name = name
        self.statements = statements
    }
}

/// The database was migrated by a Hearth that knows steps this one does not (or named them
/// otherwise): running on it could misread what it holds.
public struct PostgresSchemaUnknown: Error, CustomStringConvertible {
    public let applied: [String]
    public let known: [String]

    public var description: String {
        "the database's schema was migrated by another version of Hearth (its steps: "
            + self.applied.joined(separator: "; ") + "; this version's: " + self.known.joined(separator: "; ")
            + "): run the version that migrated it, or a newer one"
    }
}

extension PostgresConnection {
    /// Applies the steps of `migrations` not applied yet, in order, in one transaction that
    /// holds an advisory lock: replicas starting together migrate once, the others wait and
    /// find it done. Steps applied are recorded in `hearth_migration`.
    /// - Throws: ``PostgresSchemaUnknown`` when the applied steps are not a beginning of
    ///   `migrations`; the server's errors.
    public func migrate(_ migrations: [PostgresMigration], lockKey: Int64, logger: Logger) async throws {
        try await self.inTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS hearth_migration (
                    position INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """,
                logger: logger
            )
            var applied: [String] = []
            for try await name in try await connection.query(
                "SELECT name FROM hearth_migration ORDER BY position",
                logger: logger
            ).decode(String.self) {
                applied.append(name)
            }
            let known = migrations.map(\.name)
            guard applied.count <= known.count, Array(known.prefix(applied.count)) == applied else {
                throw PostgresSchemaUnknown(applied: applied, known: known)
            }
            for (position, migration) in migrations.enumerated().dropFirst(applied.count) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO hearth_migration (position, name) VALUES (\(position + 1), \(migration.name))",
                    logger: logger
                )
                logger.notice("store migrated", metadata: ["step": "\(migration.name)"])
            }
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws, its
    /// error passed on as it is (PostgresNIO's own `withTransaction` wraps it).
    public func inTransaction<T>(
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try await self.query("BEGIN", logger: logger)
        let value: T
        do {
            value = try await body(self)
        } catch {
            // The error that matters is the body's; a failed rollback ends the connection anyway.
            _ = try? await self.query("ROLLBACK", logger: logger)
            throw error
        }
        try await self.query("COMMIT", logger: logger)
        return value
    }
}
