import EchoService
import Foundation
import HearthContracts
import HearthRPC
@_exported import HearthTestSupport
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

let testLogger: Logger = {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}()

/// A server with the echo and misbehaving test services (see `withServer`).
func withTestServer<T>(
    configuration: ServerConfiguration = ServerConfiguration(),
    services: [any RPCService] = [EchoService(), TestService()],
    interceptors: [any ServerInterceptor] = [],
    logger: Logger? = nil,
    _ body: (RPCServer, Int) async throws -> T
) async throws -> T {
    try await withServer(
        configuration: configuration,
        services: services,
        interceptors: interceptors,
        logger: logger,
        body
    )
}

/// A client of the test server on `port`, with quick reconnects.
func makeClient(port: Int, connections: Int = 1) -> RPCClient {
    RPCClient(
        configuration: .init(
            host: "127.0.0.1",
            port: port,
            connections: connections,
            backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50))
        )
    )
}

/// Records events from handlers, for tests to wait on.
final class Signals: Sendable {
    private let events = Mutex<[String]>([])

    func send(_ event: String) {
        self.events.withLock { $0.append(event) }
    }

    func contains(_ event: String) -> Bool {
        self.events.withLock { $0.contains(event) }
    }
}

struct TestDomainError: RPCErrorConvertible {
    var rpcError: RPCError { RPCError(.failedPrecondition, "domain rule broken") }
}

struct SecretFailure: Error, CustomStringConvertible {
    var description: String { "secret internal detail" }
}

/// Handlers that misbehave on purpose, for the runtime's tests. Method names under
/// `hearth.test.v1.Test/`; requests and responses reuse the echo messages.
struct TestService: RPCService {
    let signals: Signals

    init(signals: Signals = Signals()) {
        self.signals = signals
    }

    var serviceName: String { "hearth.test.v1.Test" }

    var methods: [RPCMethod] {
        let signals = self.signals
        return [
            // Sleeps for sleep_ms; reports when it started and when it was cancelled.
            .unary("hearth.test.v1.Test/Observed") { (request: Hearth_Echo_V1_EchoRequest, context) in
                signals.send("started:\(request.text)")
                do {
                    try await Task.sleep(for: .milliseconds(Int64(request.sleepMs)))
                } catch {
                    signals.send("cancelled:\(request.text)")
                    throw error
                }
                var response = Hearth_Echo_V1_EchoResponse()
                response.text = "\(request.text) request-id=\(context.requestID) peer-set=\(!context.peer.isEmpty)"
                return response
            },
            // Holds the call open until the test sends "open:<text>" (at most 60 s: a loaded CI
            // machine can stall a test for over 10), ignoring cancellation; reports
            // "gate-done:<text>" when it ends.
            .unary("hearth.test.v1.Test/Gate") { (request: Hearth_Echo_V1_EchoRequest, _) in
                signals.send("started:\(request.text)")
                let clock = ContinuousClock()
                let end = clock.now + .seconds(60)
                while !signals.contains("open:\(request.text)"), clock.now < end {
                    await sleepIgnoringCancellation(.milliseconds(2))
                }
                signals.send("gate-done:\(request.text)")
                var response = Hearth_Echo_V1_EchoResponse()
                response.text = request.text
                return response
            },
            // Answers with `sleep_ms` bytes of text: a response as large as asked.
            .unary("hearth.test.v1.Test/Big") { (request: Hearth_Echo_V1_EchoRequest, _) in
                var response = Hearth_Echo_V1_EchoResponse()
                response.text = String(repeating: "x", count: Int(request.sleepMs))
                return response
            },
            .unary("hearth.test.v1.Test/Domain") {
                (_: Hearth_Echo_V1_EchoRequest, _) -> Hearth_Echo_V1_EchoResponse in
                throw TestDomainError()
            },
            .unary("hearth.test.v1.Test/Crash") {
                (_: Hearth_Echo_V1_EchoRequest, _) -> Hearth_Echo_V1_EchoResponse in
                throw SecretFailure()
            },
        ]
    }
}

/// An echo request with the given fields.
func echoRequest(
    text: String = "",
    sleepMs: UInt32 = 0,
    failWithCode: UInt32 = 0,
    payload: Data = Data()
) -> Hearth_Echo_V1_EchoRequest {
    var request = Hearth_Echo_V1_EchoRequest()
    request.text = text
    request.sleepMs = sleepMs
    request.failWithCode = failWithCode
    request.payload = payload
    return request
}
