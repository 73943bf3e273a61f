public import HearthCore
public import Logging
import NIOPosix
import NIOSSL
public import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// A PostgreSQL store's pool of connections (PostgresNIO's `PostgresClient`), run as a lifecycle
/// service beside the process's server: calls lease a connection for a transaction or a read.
public struct PostgresPool: Service, Sendable {
    public let location: PostgresLocation
    public let logger: Logger
    /// The client in use: a fresh one once the server is back after an outage.
    let clients: PostgresClientSlot
    /// Calls under way, answered when their connection closes under them.
    let closing = ClosingConnections()

    /// How many times a transaction that lost a race with another (a serialization failure, a
    /// deadlock) is run again before its error is answered.
    static let conflictAttempts = 5

    public init(location: PostgresLocation, maximumConnections: Int = 20, logger: Logger) {
        var configuration = PostgresClient.Configuration(
            host: location.host,
            port: location.port,
            username: location.user,
            password: location.password,
            database: location.database,
            tls: location.clientTLS
        )
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = 1
        configuration.options.connectTimeout = .seconds(3)
        let settings = configuration
        self.clients = PostgresClientSlot(
            logger: logger,
            make: { PostgresClient(configuration: settings, backgroundLogger: logger) },
            probe: {
                (try? await Self.withSetupConnection(location, logger: logger) { _ in true }) ?? false
            }
        )
        self.location = location
        self.logger = logger
    }

    /// Runs the pool until cancelled or shut down gracefully; calls fail after. A process stops
    /// it last (``ServiceModule/foundations``), once the work that uses it has stopped.
    public func run() async throws {
        await self.clients.run()
    }

    /// How many of its connections are watched for closing, and how many calls wait on them.
    public var watched: (connections: Int, calls: Int) { self.closing.watched }

    /// How many times the pool was replaced by a fresh one after an outage.
    public var replacements: Int { self.clients.replacements }

    /// Opens one connection of its own (the pool need not run), runs `body` on it and closes it:
    /// a store is migrated and checked before it serves.
    public static func withSetupConnection<T: Sendable>(
        _ location: PostgresLocation,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await PostgresConnection.connect(
            configuration: PostgresConnection.Configuration(
                host: location.host,
                port: location.port,
                username: location.user,
                password: location.password,
                database: location.database,
                tls: try location.connectionTLS()
            ),
            id: 0,
            logger: logger
        )
        let value: T
        do {
            value = try await body(connection)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return value
    }

    /// How long a call waits for a connection before it is answered UNAVAILABLE: with the
    /// server down, the pool would hold it until its attempts to connect give up (a minute).
    public static let leaseWait: Duration = .seconds(2)

    /// Runs `body` in a transaction on a leased connection; run again (up to
    /// ``conflictAttempts`` times in all) when it lost a race with another transaction.
    /// - Throws: ``PostgresUnavailable`` when no connection came within ``leaseWait``.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        var attempt = 1
        while true {
            do {
                return try await self.leased { connection in
                    try await connection.inTransaction(logger: self.logger) { try await body($0) }
                }
            } catch let error as PSQLError where error.isConflict && attempt < Self.conflictAttempts {
                attempt += 1
            }
        }
    }

    /// Runs `body` on a leased connection, outside any transaction of its own.
    /// - Throws: ``PostgresUnavailable`` when no connection came within ``leaseWait``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws
        -> T
    {
        try await self.leased(body)
    }

    /// Runs `body` on a connection of the pool, unless none comes within ``leaseWait``: then
    /// the wait is given up (`body` never runs). Once `body` runs, only its connection closing
    /// under it cuts it short (``ClosingConnections``).
    private func leased<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let began = LeaseBegan()
        let clients = self.clients
        let client = clients.client
        do {
            let value = try await self.leased(from: client, began: began, body)
            clients.served(by: client)
            return value
        } catch let error as PostgresUnavailable where error.cause != nil {
            clients.sawServerGone(from: client)
            throw error
        } catch let error as PSQLError where error.isConnectionLost {
            clients.sawServerGone(from: client)
            throw error
        }
    }

    private func leased<T: Sendable>(
        from client: PostgresClient,
        began: LeaseBegan,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    began.mark()
                    return try await self.closing.run(body, on: connection)
                }
            }
            group.addTask {
                try await Task.sleep(for: Self.leaseWait)
                return nil
            }
            do {
                while let next = try await group.next() {
                    if let value = next {
                        group.cancelAll()
                        return value
                    }
                    // The wait is over: given up unless `body` has its connection.
                    if !began.marked {
                        group.cancelAll()
                        throw PostgresUnavailable(cause: nil)
                    }
                }
            } catch let error as PSQLError {
                throw error
            } catch let error as PostgresUnavailable {
                throw error
            } catch let error as CancellationError {
                // The caller gave up (a deadline, a cancel, a shutdown): not the database's fault.
                throw error
            } catch  where Task.isCancelled {
                throw CancellationError()
            } catch  where !began.marked {
                // The pool's own refusal (its breaker tripped after failed connects, it closed).
                group.cancelAll()
                throw PostgresUnavailable(cause: error)
            }
            throw PostgresUnavailable(cause: nil)
        }
    }
}

extension PostgresLocation {
    var clientTLS: PostgresClient.Configuration.TLS {
        switch self.tls {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        switch self.tls {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }
}

/// Whether a leased call's body has begun.
private final class LeaseBegan: Sendable {
    private let state = Mutex(false)

    func mark() { self.state.withLock { $0 = true } }
    var marked: Bool { self.state.withLock { $0 } }
}

/// No connection to the database came in time: the server is down, unreachable, or refuses
/// connections. Answered UNAVAILABLE: a client may try again.
public struct PostgresUnavailable: StorageFailure, CustomStringConvertible {
    /// The pool's own error, when it gave one.
    public let cause: (any Error)?

    public var mayPass: Bool { true }
    /// Only when the pool could not connect: a wait that ran out while connections were busy is
    /// load, and must not make health say NOT_SERVING.
    public var isStoreFault: Bool { self.cause != nil }

    public var description: String {
        "no connection to PostgreSQL came in time" + (self.cause.map { ": \($0)" } ?? "")
    }
}
