public import Logging
import NIOPosix
import NIOSSL
public import PostgresNIO
public import ServiceLifecycle

/// A PostgreSQL store's pool of connections (PostgresNIO's `PostgresClient`), run as a lifecycle
/// service beside the process's server: calls lease a connection for a transaction or a read.
public struct PostgresPool: Service, Sendable {
    public let client: PostgresClient
    public let location: PostgresLocation
    let logger: Logger

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
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.location = location
        self.logger = logger
    }

    /// Runs the pool until cancelled or shut down gracefully; calls fail after. A process stops
    /// it last (``ServiceModule/foundations``), once the work that uses it has stopped.
    public func run() async throws {
        await self.client.run()
    }

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

    /// Runs `body` in a transaction on a leased connection; run again (up to
    /// ``conflictAttempts`` times in all) when it lost a race with another transaction.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await self.client.withConnection { connection in
                    try await connection.inTransaction(logger: self.logger) { try await body($0) }
                }
            } catch let error as PSQLError where error.isConflict && attempt < Self.conflictAttempts {
                attempt += 1
            }
        }
    }

    /// Runs `body` on a leased connection, outside any transaction of its own.
    public func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await self.client.withConnection { try await body($0) }
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
