public import PostgresNIO
import Synchronization

/// A statement PostgreSQL parses once a connection, and plans once when a generic plan serves:
/// PostgresNIO prepares it under its type's name the first time a connection runs it, and each
/// run after sends only its values. For the statements an alarm storm runs for every batch,
/// where parsing, analyzing and planning their texts again took a third of PostgreSQL's CPU.
///
/// The text is written once, interpolated as a query is; the type's ``sql`` is a sample's (the
/// values bound do not change it):
///
///     struct ProfilesOfUsers: PreparedSQL {
///         static let sql = Self(users: []).query.sql
///         let users: [String]
///         var query: PostgresQuery { "SELECT ... FROM profile WHERE user_id = ANY(\(self.users))" }
///     }
///
/// - A conforming type is not private: its name (the module's and its own) names the statement
///   on the connection, and must be unique and at most 63 bytes.
/// - The parameters' types are those of the first run's values: a value that may be NULL is
///   cast in the text (a NULL is bound without a type).
/// - A preparation that failed stays failed on its connection (PostgresNIO remembers it): after
///   a failure a preparation may have caused, the statement is prepared again under a new name
///   (``PreparedSQLNames``).
public protocol PreparedSQL: PostgresPreparedStatement where Row == PostgresRow {
    /// The statement, its values bound.
    var query: PostgresQuery { get }
}

extension PreparedSQL {
    public static var name: String { PreparedSQLNames.name(of: Self.self) }

    public func makeBindings() -> PostgresBindings {
        let query = self.query
        assert(query.sql == Self.sql, "\(Self.self): its text must not depend on its values")
        return query.binds
    }

    public func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

/// The names prepared statements go by: a type's, then a new one each time a run failed in a
/// way its preparation can (the transaction already failed, a cancel or a lock timeout while
/// preparing, the server short of resources), so that a connection whose preparation failed
/// prepares it again rather than answering that failure for the rest of its life. Failures of
/// the statement's run itself (a conflict, a constraint) keep the name: each new name is one
/// more statement held by every connection.
enum PreparedSQLNames {
    private struct Name {
        let base: String
        var renames = 0
        var current: String { self.renames == 0 ? self.base : "\(self.base)#\(self.renames)" }
    }

    /// Each statement type's name, made once (it is asked for at every run).
    private static let names = Mutex<[ObjectIdentifier: Name]>([:])

    static func name(of type: (some PreparedSQL).Type) -> String {
        Self.names.withLock { Self.entry(of: type, in: &$0).current }
    }

    /// Whether `error` may have come from preparing a statement, and stayed with it.
    static func mayHaveFailedPreparing(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.sqlState else { return false }
        return ["25P02", "57014", "55P03"].contains(state) || state.hasPrefix("53") || state.hasPrefix("58")
    }

    static func failed(_ type: (some PreparedSQL).Type, with error: any Error) {
        guard let error = error as? PSQLError, Self.mayHaveFailedPreparing(error) else { return }
        Self.names.withLock { names in
            var name = Self.entry(of: type, in: &names)
            name.renames += 1
            names[ObjectIdentifier(type)] = name
        }
    }

    private static func entry(of type: (some PreparedSQL).Type, in names: inout [ObjectIdentifier: Name]) -> Name {
        if let known = names[ObjectIdentifier(type)] { return known }
        let name = Name(base: String(reflecting: type))
        assert(name.base.utf8.count <= 60, "\(name.base): PostgreSQL cuts a statement's name at 63 bytes")
        names[ObjectIdentifier(type)] = name
        return name
    }
}

extension PostgresConnection {
    /// Runs `statement`, reading nothing back.
    public func run<Statement: PreparedSQL>(_ statement: Statement) async throws {
        _ = try await self.rows(statement) { _ in () }
    }

    /// Every row of `statement`, each made by `make`.
    public func rows<Statement: PreparedSQL, T>(_ statement: Statement, _ make: (PostgresCells) throws -> T)
        async throws -> [T]
    {
        var all: [T] = []
        do {
            for try await row in try await self.execute(statement, logger: Self.quietLogger) {
                all.append(try make(PostgresCells(row: row.makeRandomAccess())))
            }
        } catch {
            PreparedSQLNames.failed(Statement.self, with: error)
            throw error
        }
        return all
    }
}
