public import Foundation
public import HearthPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a PostgreSQL server of its own (``PostgresServer``), and stops it and deletes
/// its files afterwards, awaited, whether `body` throws or not.
public func withPostgresServer<T>(_ body: (PostgresServer) async throws -> T) async throws -> T {
    let server = try await PostgresServer()
    return try await using(server, teardown: { await $0.remove() }, body)
}

/// A real PostgreSQL server (Debian's `postgresql`, installed by scripts/bootstrap) on a free
/// loopback port, its cluster in a temporary folder: copied from one made by `initdb` once per
/// test process. PostgreSQL refuses to run as root: when the tests do, it runs as `nobody`.
/// Made for tests only: no fsync (the tests stop it cleanly), trust authentication on loopback.
public final class PostgresServer: Sendable {
    public let port: Int
    /// The cluster's folder (its parent is removed with it).
    public let dataFolder: URL
    private let process: Mutex<ChildProcess?>

    /// Where the store's tables go: the cluster's `postgres` database, as the user `hearth`.
    public var location: PostgresLocation {
        PostgresLocation(
            host: "127.0.0.1",
            port: self.port,
            user: "hearth",
            database: "postgres",
            password: nil,
            tls: .disable
        )
    }

    /// Starts a new server (a fresh cluster) and waits until it answers queries.
    public init() async throws {
        let template = try await Self.template()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pg-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.handOver(folder)
        self.dataFolder = folder.appendingPathComponent("data")
        try await Self.run("/bin/cp", ["-a", template.path, self.dataFolder.path], asServerUser: false)
        self.port = try freeLoopbackPort()
        self.process = Mutex(nil)
        try await self.start()
    }

    /// Starts the server on its folder and port (again, after ``stop()``), and waits until it
    /// answers queries.
    public func start() async throws {
        let child = try ChildProcess(
            Self.serverUser.launcher ?? Self.binary("postgres"),
            Self.serverUser.prefix(Self.binary("postgres").path) + [
                "-D", self.dataFolder.path, "-p", "\(self.port)",
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
            ]
        )
        self.process.withLock { $0 = child }
        try await eventually("PostgreSQL on port \(self.port) answers") {
            guard child.isRunning else { throw PostgresServerFailed(description: "postgres exited at its start") }
            return await self.answers()
        }
    }

    /// Stops the server (a fast shutdown: sessions are ended, what was committed is kept) and
    /// waits until it has exited.
    public func stop() async {
        guard let child = self.process.withLock({ $0.take() }) else { return }
        child.send(SIGINT)
        _ = try? await offThePool { child.waitUntilExit() }
    }

    /// Stops the server and deletes its files.
    public func remove() async {
        await self.stop()
        try? FileManager.default.removeItem(at: self.dataFolder.deletingLastPathComponent())
    }

    private func answers() async -> Bool {
        var logger = Logger(label: "postgres-test")
        logger.logLevel = .critical
        guard
            let connection = try? await PostgresConnection.connect(
                configuration: .init(
                    host: "127.0.0.1",
                    port: self.port,
                    username: "hearth",
                    password: nil,
                    database: "postgres",
                    tls: .disable
                ),
                id: 0,
                logger: logger
            )
        else { return false }
        let answered = (try? await connection.query("SELECT 1", logger: logger)) != nil
        try? await connection.close()
        return answered
    }

    // MARK: The cluster made once

    private static let madeTemplate = Mutex<Task<URL, any Error>?>(nil)

    /// A cluster made by `initdb` once per test process; each server starts from a copy.
    private static func template() async throws -> URL {
        let task = Self.madeTemplate.withLock { made in
            if let made { return made }
            let task = Task {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "hearth-pg-template-\(UUID())"
                )
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Self.handOver(folder)
                let data = folder.appendingPathComponent("data")
                try await Self.run(
                    Self.binary("initdb").path,
                    ["-D", data.path, "-U", "hearth", "--auth=trust", "--no-sync", "--no-locale", "-E", "UTF8"],
                    asServerUser: true
                )
                return data
            }
            made = task
            return task
        }
        return try await task.value
    }

    /// Debian's binaries of the newest PostgreSQL installed.
    private static func binary(_ name: String) throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for version in versions.compactMap(Int.init).sorted(by: >) {
            let candidate = root.appendingPathComponent("\(version)/bin/\(name)")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw PostgresServerFailed(description: "no \(name) under /usr/lib/postgresql: run scripts/bootstrap")
    }

    /// Who the server runs as: this process's user, or `nobody` when that is root.
    private enum ServerUser {
        case same
        case nobody

        /// `setpriv` execs the server itself: the child's pid is the server's.
        var launcher: URL? { self == .nobody ? URL(fileURLWithPath: "/usr/bin/setpriv") : nil }

        func prefix(_ executable: String) -> [String] {
            switch self {
            case .same: []
            case .nobody: ["--reuid=65534", "--regid=65534", "--clear-groups", "--", executable]
            }
        }
    }

    private static let serverUser: ServerUser = getuid() == 0 ? .nobody : .same

    /// Makes `folder` the server user's.
    private static func handOver(_ folder: URL) throws {
        guard Self.serverUser == .nobody else { return }
        guard chown(folder.path, 65534, 65534) == 0 else {
            throw PostgresServerFailed(description: "could not give \(folder.path) to nobody (errno \(errno))")
        }
    }

    private static func run(_ executable: String, _ arguments: [String], asServerUser: Bool) async throws {
        let user: ServerUser = asServerUser ? Self.serverUser : .same
        let child = try ChildProcess(
            user.launcher ?? URL(fileURLWithPath: executable),
            user.prefix(executable) + arguments
        )
        let ended = try await offThePool { child.waitUntilExit() }
        guard ended == .exited(0) else {
            throw PostgresServerFailed(description: "\(executable) \(arguments.joined(separator: " ")) ended \(ended)")
        }
    }
}

public struct PostgresServerFailed: Error, CustomStringConvertible {
    public let description: String
}

/// A loopback TCP port free at the time of asking (the kernel's choice for a socket bound to
/// port 0), for a server that must be told its port before it starts.
public func freeLoopbackPort() throws -> Int {
    let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketFD >= 0 else { throw PostgresServerFailed(description: "socket: errno \(errno)") }
    defer { close(socketFD) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            bind(socketFD, generic, length) == 0 && getsockname(socketFD, generic, &length) == 0
        }
    }
    guard bound else { throw PostgresServerFailed(description: "bind: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
