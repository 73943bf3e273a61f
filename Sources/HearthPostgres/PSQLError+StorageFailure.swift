public import HearthCore
public import PostgresNIO

extension PSQLError: StorageFailure {
    /// The server gone, restarting or refusing connections, a transaction that lost a race (a
    /// serialization failure, a deadlock), a full disk or memory: the database's state, not the
    /// request's. The RPC runtime answers UNAVAILABLE, which a client may try again.
    public var mayPass: Bool {
        switch self.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
            .queryCancelled:
            true
        case .server:
            self.sqlState.map(Self.passingStates) ?? false
        default:
            false
        }
    }

    public var isStoreFault: Bool {
        switch self.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: true
        case .server: self.sqlState.map(Self.faultStates) ?? false
        default: false
        }
    }

    /// Whether the session ended under the call: the server stopped, restarted or went out of
    /// reach (its shutdown's 57P01-57P03 included).
    public var isConnectionLost: Bool {
        switch self.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: true
        case .server: self.sqlState.map { $0.hasPrefix("57P") || $0.hasPrefix("08") } ?? false
        default: false
        }
    }

    /// The error's SQLSTATE, when the server sent one.
    public var sqlState: String? { self.serverInfo?[.sqlState] }

    /// Whether the transaction failed only for running beside another (serialization failure,
    /// deadlock): run again, it may succeed.
    public var isConflict: Bool { self.sqlState == "40001" || self.sqlState == "40P01" }

    /// Connection exceptions (08), a transaction rolled back by the server (40), a timeout, insufficient
    /// resources (53), an operator's intervention such as a shutdown (57P), system errors (58).
    private static func passingStates(_ state: String) -> Bool {
        // 57014: a statement timeout; 55P03: a lock not obtained in time. Not 40002 (an
        // integrity violation found at commit: it stays).
        state == "57014" || state == "55P03"
            || (state.hasPrefix("40") && state != "40002")
            || ["08", "53", "57P", "58"].contains { state.hasPrefix($0) }
    }

    private static func faultStates(_ state: String) -> Bool {
        ["08", "53", "57P", "58"].contains { state.hasPrefix($0) }
    }
}
