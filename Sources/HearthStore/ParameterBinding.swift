public import GRDB
import GRDBSQLite

extension Statement {
    /// Binds `values` to the statement's parameters, in order, straight into SQLite.
    ///
    /// For statements on a hot path. GRDB's `StatementArguments` boxes every value in an array
    /// of `DatabaseValue`s, and runs the statement through a generic recursion that instantiates
    /// type metadata on every call; without them the heartbeat's writer spends a tenth less CPU
    /// (BENCHMARKS.md). Each value binds here as it binds through GRDB (its own
    /// `StatementBinding`), so what is stored is the same. GRDB is told the statement's
    /// arguments are bound, so that its `execute()` and its cursors run it with these.
    ///
    /// Values go to parameters by position, named ones included (in the order they first
    /// appear), not by name as GRDB's arguments would bind them.
    /// - Throws: `DatabaseError` (`SQLITE_MISUSE`) when there are not as many values as
    ///   parameters, or the error of a value SQLite refuses (too big); nothing is bound then.
    public func bind<each Value: StatementBinding>(_ values: repeat each Value) throws {
        let statement = self.sqliteStatement
        var count: CInt = 0
        for _ in repeat each values { count += 1 }
        let parameters = sqlite3_bind_parameter_count(statement)
        guard count == parameters else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(count) values for \(parameters) statement parameters",
                sql: self.sql
            )
        }
        self.abandonRun()
        // Resets, clears the bindings, and records "no arguments, bound" in GRDB.
        self.setUncheckedArguments(StatementArguments())
        var index: CInt = 0
        for value in repeat each values {
            index += 1
            let code = value.bind(to: statement, at: index)
            guard code == SQLITE_OK else {
                sqlite3_clear_bindings(statement)  // not half bound: the statement binds NULLs
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(sqlite3_db_handle(statement))),
                    sql: self.sql
                )
            }
        }
    }

    /// Runs the statement to its end with `values` bound (see ``bind(_:)``).
    public func execute<each Value: StatementBinding>(binding values: repeat each Value) throws {
        try self.bind(repeat each values)
        try self.execute()
    }

    /// Resets a run left half done (its reader threw), whatever its last step answered: GRDB's
    /// own reset, in `setUncheckedArguments`, traps on a failed step's error code.
    @usableFromInline func abandonRun() {
        sqlite3_reset(self.sqliteStatement)
    }
}

/// SQLite's `SQLITE_TRANSIENT`: it copies the bound bytes before the call returns (the C macro
/// does not reach Swift).
var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
