public import Foundation
public import HearthRPC
import Logging
public import NIOCore
import NIOPosix
public import Testing

/// Polls `condition` every few milliseconds until it holds; records an issue and throws
/// after `limit`. Tests wait with this instead of sleeping a guessed time. The bound is
/// generous on purpose: a passing test returns as soon as the condition holds, and on two
/// cores shared by every suite of a debug build a 5 s bound was sometimes too short for things
/// that take milliseconds alone.
public func eventually(
    _ what: String,
    within limit: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while clock.now < end {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// The repository's root folder.
public let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// An executable product of this package (`hearth`, `hearth-store-probe`), from the build
/// folder the tests run from.
public func builtProduct(named name: String) throws -> URL {
    var folder = Bundle.main.bundleURL
    for _ in 0..<4 {
        let candidate = folder.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        folder.deleteLastPathComponent()
    }
    let fallback = repositoryRoot.appendingPathComponent(".build/debug/\(name)")
    try #require(FileManager.default.isExecutableFile(atPath: fallback.path), "\(name) is not built")
    return fallback
}

/// Runs blocking `work` (waiting for a child process, reading a pipe) on a thread of its own.
/// Swift's task pool has as many threads as cores (two here): a test that blocks one of them
/// stalls every test running beside it, and a stall of a second makes their timers fire before
/// their own work gets a thread.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// What a finished child process printed, and how it ended.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `executable` with `arguments` to completion (stdin closed) and captures its output,
/// waiting off the task pool.
public func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil)
    async throws -> ProcessOutput
{
    try await offThePool { try runToCompletion(executable, arguments, environment: environment) }
}

private func runToCompletion(_ executable: URL, _ arguments: [String], environment: [String: String]?) throws
    -> ProcessOutput
{
    let out = Pipe()
    let err = Pipe()
    let process = try ChildProcess(
        executable,
        arguments,
        environment: environment,
        output: .pipe(out),
        error: .pipe(err)
    )
    // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    return ProcessOutput(
        status: process.waitUntilExit().status,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self)
    )
}

/// Runs a server with `services` on a free loopback port for the duration of `body`, then
/// shuts it down gracefully and waits until it has stopped.
public func withServer<T>(
    configuration: ServerConfiguration = ServerConfiguration(),
    services: [any RPCService],
    interceptors: [any ServerInterceptor] = [],
    logger: Logger? = nil,
    _ body: (RPCServer, Int) async throws -> T
) async throws -> T {
    let logger =
        logger
        ?? {
            var quiet = Logger(label: "test")
            quiet.logLevel = .critical
            return quiet
        }()
    let server = RPCServer(configuration: configuration, services: services, interceptors: interceptors, logger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        let port = try await server.localAddress.port!
        do {
            let result = try await body(server, port)
            server.beginShutdown()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// Runs `body` with `value`, then `teardown(value)`, awaited, whether `body` throws or not: the
/// scoped form of a fixture, instead of a `defer` that cannot await.
public func using<Value, T>(
    _ value: Value,
    teardown: (Value) async -> Void,
    _ body: (Value) async throws -> T
) async throws -> T {
    do {
        let result = try await body(value)
        await teardown(value)
        return result
    } catch {
        await teardown(value)
        throw error
    }
}

/// Runs `body` with a client of the server at `port` on loopback, closed (and awaited)
/// afterwards, whether `body` throws or not.
public func withClient<T>(port: Int, _ body: (RPCClient) async throws -> T) async throws -> T {
    try await using(
        RPCClient(configuration: .init(host: "127.0.0.1", port: port)),
        teardown: { await $0.close() },
        body
    )
}

/// The fields that `body`'s INVALID_ARGUMENT names, in its order; empty when `body` succeeds.
/// Failing with another code is recorded as an issue.
public func violatedFields(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> [String] {
    do {
        try await body()
        return []
    } catch {
        let answer = RPCError(answering: error)
        #expect(answer.code == .invalidArgument, "\(answer)", sourceLocation: sourceLocation)
        return answer.violations.map(\.field)
    }
}

/// Expects `body` to fail with `code`: what the runtime would answer for the error it throws.
public func expectCode(
    _ code: StatusCode,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(code.name), got success", sourceLocation: sourceLocation)
    } catch {
        let answer = RPCError(answering: error)
        #expect(answer.code == code, "\(answer)", sourceLocation: sourceLocation)
    }
}

/// The context of a call that came through the gateway for `user`, for calling handlers directly;
/// with `language`, the app's `accept-language` as the gateway passes it on.
public func callContext(_ user: String, language: String? = nil) -> RPCContext {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let metadata: Metadata =
        language.map { [TrustedMetadata.user: user, RPCContext.languageKey: $0] } ?? [TrustedMetadata.user: user]
    return RPCContext(
        method: "test",
        metadata: metadata,
        deadline: nil,
        peer: "test",
        callID: 1,
        connectionTag: "t",
        logger: logger
    )
}

/// A self-signed certificate for localhost and 127.0.0.1, made by openssl in `folder`.
public func selfSignedCertificate(in folder: URL) async throws -> (certificate: String, key: String) {
    let certificate = folder.appendingPathComponent("cert.pem").path
    let key = folder.appendingPathComponent("key.pem").path
    let made = try await runProcess(
        URL(fileURLWithPath: "/usr/bin/openssl"),
        [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
    )
    try #require(made.status == 0, "openssl failed (scripts/bootstrap installs it): \(made.stderr)")
    return (certificate, key)
}

/// Sleeps even when the task is cancelled (`Task.sleep` would return at once, and a loop
/// around it would spin): for handlers that must run on after their call is cancelled.
public func sleepIgnoringCancellation(_ amount: TimeAmount) async {
    await withCheckedContinuation { continuation in
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: amount) { continuation.resume() }
    }
}

/// Runs `body` with a new empty folder under the temporary directory (named after `prefix`),
/// removed afterwards.
public func withScratchFolder<T>(_ prefix: String, _ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

extension [Caller] {
    /// One caller allowed every method: a test's server and the clients it calls it with.
    public static func anyMethod(_ credential: String) -> [Caller] {
        [Caller(name: "test", credential: credential, methods: .all)]
    }
}
