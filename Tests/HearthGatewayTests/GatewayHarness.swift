import EchoService
import Foundation
import HearthContracts
import HearthCore
import HearthGateway
import HearthRPC
import HearthTestSupport
import Logging
import NIOCore
import Synchronization
import Testing

let quietLogger: Logger = {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}()

let credential = "test-internal-credential"
let jwtSecret = "test-jwt-secret-of-at-least-thirty-two-bytes"

/// Events the replicas report, for tests to wait on.
final class Events: Sendable {
    private let seen = Mutex<Set<String>>([])

    func record(_ event: String) {
        _ = self.seen.withLock { $0.insert(event) }
    }

    func contains(_ event: String) -> Bool {
        self.seen.withLock { $0.contains(event) }
    }
}

/// Reports which replica served a call and what reached it: the user id and metadata keys.
/// `Hold` sleeps `sleep_ms` and records when it starts and when it is cancelled. `Stubborn`
/// records when it starts and runs until the test records `open:<text>` (60 s at most: a
/// loaded CI machine can stall a test for over 10), whatever becomes of its call.
struct ProbeService: RPCService {
    static let method = "hearth.probe.v1.Probe/Who"
    static let hold = "hearth.probe.v1.Probe/Hold"
    static let stubborn = "hearth.probe.v1.Probe/Stubborn"
    let name: String
    let events: Events

    var serviceName: String { "hearth.probe.v1.Probe" }

    var methods: [RPCMethod] {
        [
            .unary(Self.method) { (_: Hearth_Echo_V1_EchoRequest, context) in
                var response = Hearth_Echo_V1_EchoResponse()
                response.text = [
                    self.name, context.userID ?? "-", context.metadata.keys.sorted().joined(separator: ","),
                ]
                .joined(separator: "|")
                return response
            },
            .unary(Self.hold) { (request: Hearth_Echo_V1_EchoRequest, _) in
                self.events.record("started:\(request.text)")
                do {
                    try await Task.sleep(for: .milliseconds(Int64(request.sleepMs)))
                } catch {
                    self.events.record("cancelled:\(request.text)")
                    throw error
                }
                return Hearth_Echo_V1_EchoResponse()
            },
            .unary(Self.stubborn) { (request: Hearth_Echo_V1_EchoRequest, _) in
                self.events.record("started:\(request.text)")
                let end = ContinuousClock.now + .seconds(60)
                while !self.events.contains("open:\(request.text)"), ContinuousClock.now < end {
                    await sleepIgnoringCancellation(.milliseconds(2))
                }
                self.events.record("done:\(request.text)")
                return Hearth_Echo_V1_EchoResponse()
            },
        ]
    }
}

/// A backend replica: echo and probe, requiring the internal credential.
final class Replica: Sendable {
    let name: String
    let server: RPCServer
    private let run: Task<Void, any Error>

    init(
        name: String,
        host: String = "127.0.0.1",
        port: Int = 0,
        events: Events = Events(),
        callsPerConnection: Int = ServerConfiguration.defaultMaxConcurrentCallsPerConnection
    ) {
        self.name = name
        let server = RPCServer(
            configuration: ServerConfiguration(
                host: host,
                port: port,
                maxConcurrentCallsPerConnection: callsPerConnection,
                callers: .anyMethod(credential)
            ),
            services: [EchoService(), ProbeService(name: name, events: events)],
            logger: quietLogger
        )
        self.server = server
        self.run = Task { try await server.run() }
    }

    var port: Int {
        get async throws { try await self.server.localAddress.port! }
    }

    func stop() async {
        self.server.beginShutdown()
        _ = try? await self.run.value
    }

    /// Stops at once, closing every connection under the calls in flight.
    func kill() async {
        self.run.cancel()
        _ = try? await self.run.value
    }
}

/// Replicas behind a gateway, all on free loopback ports, and a client of the gateway.
struct GatewayHarness {
    let replicas: [Replica]
    let gateway: Gateway
    let gatewayServer: RPCServer
    /// What the gateway counted of the calls it forwarded.
    let metrics: MethodMetrics
    let client: RPCClient
    let clock: ManualClock
    let events: Events

    /// A token for `user`, valid from the clock's now for an hour unless told otherwise.
    func token(
        for user: String = "alice",
        issuedAt: Date? = nil,
        expiresAt: Date? = nil,
        notBefore: Date? = nil,
        secret: String = jwtSecret
    ) async throws -> String {
        let now = issuedAt ?? self.clock.now()
        return try await TokenSigner(hmacSecret: secret).token(
            for: HearthClaims(
                subject: user,
                issuedAt: now,
                expiresAt: expiresAt ?? now.addingTimeInterval(3600),
                notBefore: notBefore
            )
        )
    }

    func call(
        _ method: String = ProbeService.method,
        _ request: Hearth_Echo_V1_EchoRequest = Hearth_Echo_V1_EchoRequest(),
        authorization: String?,
        metadata: [String: String] = [:],
        timeout: Duration? = nil
    ) async throws -> Hearth_Echo_V1_EchoResponse {
        var metadata = metadata
        metadata["authorization"] = authorization
        return try await self.client.call(
            method,
            request,
            as: Hearth_Echo_V1_EchoResponse.self,
            options: CallOptions(timeout: timeout, metadata: metadata)
        )
    }

    /// Starts a `Hold` call of `milliseconds` (or another method of the probe's) named `text`;
    /// returns once the backend runs it.
    func hold(
        _ text: String,
        for milliseconds: UInt32 = 0,
        method: String = ProbeService.hold,
        authorization: String
    ) async throws -> Task<Hearth_Echo_V1_EchoResponse, any Error> {
        var request = Hearth_Echo_V1_EchoRequest()
        request.text = text
        request.sleepMs = milliseconds
        let call = Task { try await self.call(method, request, authorization: authorization) }
        try await eventually("the backend started the call") { self.events.contains("started:\(text)") }
        return call
    }

    /// Runs `body` against `replicaCount` replicas behind a gateway, then stops everything.
    /// `unservedPorts` are further backends of the same routes that no replica serves;
    /// `backends`, the routes' backends instead (names looked up with `resolver`).
    /// `backendConnections`: the calls each replica takes on a connection, and the extra
    /// connections the gateway may open to it from a loop. `connectTimeout`: long, as a connect
    /// to a live loopback replica may be kept off a loaded CI machine's CPUs for seconds.
    static func run(
        replicas replicaCount: Int = 2,
        limits: RateLimiter.Limits = RateLimiter.Limits(),
        ejection: EjectionPolicy = EjectionPolicy(),
        routeTimeout: Duration = .seconds(15),
        eddsaPublicKey: String? = nil,
        connectTimeout: Duration = .seconds(30),
        unservedPorts: [Int] = [],
        gatewayFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
        frameSizeBeforeAuthentication: Int? = nil,
        internalMethods: Set<String> = [],
        backendConnections: (calls: Int, extra: Int) = (ServerConfiguration.defaultMaxConcurrentCallsPerConnection, 15),
        backends: [(host: String, port: Int)]? = nil,
        resolver: any AddressResolver = SystemResolver(),
        discoveryInterval: Duration = .seconds(5),
        _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        let clock = ManualClock(Date())
        let events = Events()
        let replicas = (0..<replicaCount).map {
            Replica(name: "replica-\($0)", events: events, callsPerConnection: backendConnections.calls)
        }
        var addresses: [(host: String, port: Int)] = []
        for replica in replicas { addresses.append(("127.0.0.1", try await replica.port)) }
        addresses += unservedPorts.map { ("127.0.0.1", $0) }
        if let backends { addresses = backends }
        let metrics = MethodMetrics()
        let gateway = Gateway(
            configuration: Gateway.Configuration(
                routes: ["hearth.echo.": addresses, "hearth.probe.": addresses],
                credentials: ["hearth.echo.": credential, "hearth.probe.": credential],
                routeTimeout: routeTimeout,
                rateLimit: limits,
                ejection: ejection,
                connectionsPerBackend: 1,
                extraConnectionsPerBackend: backendConnections.extra,
                callsPerBackendConnection: backendConnections.calls,
                probeInterval: .milliseconds(20),
                connectTimeout: connectTimeout,
                maxFrameSize: gatewayFrameSize,
                internalMethods: internalMethods,
                resolver: resolver,
                discoveryInterval: discoveryInterval
            ),
            verifier: try await TokenVerifier(hmacSecret: jwtSecret, eddsaPublicKey: eddsaPublicKey, clock: clock),
            clock: clock,
            metrics: metrics,
            logger: quietLogger
        )
        var serverConfiguration = ServerConfiguration(maxFrameSize: gatewayFrameSize)
        serverConfiguration.maxFrameSizeBeforeAuthentication = frameSizeBeforeAuthentication
        let server = RPCServer(
            configuration: serverConfiguration,
            services: [gateway],
            forwarder: gateway,
            logger: quietLogger
        )
        let gatewayRun = Task { try await gateway.run() }
        let serverRun = Task { try await server.run() }
        var clientConfiguration = RPCClient.Configuration(
            host: "127.0.0.1",
            port: try await server.localAddress.port!,
            maxFrameSize: gatewayFrameSize
        )
        clientConfiguration.maxFrameSizeBeforeAuthentication = frameSizeBeforeAuthentication
        let client = RPCClient(configuration: clientConfiguration)
        let harness = GatewayHarness(
            replicas: replicas,
            gateway: gateway,
            gatewayServer: server,
            metrics: metrics,
            client: client,
            clock: clock,
            events: events
        )
        do {
            try await body(harness)
        } catch {
            await harness.stop(gatewayRun: gatewayRun, serverRun: serverRun)
            throw error
        }
        await harness.stop(gatewayRun: gatewayRun, serverRun: serverRun)
    }

    private func stop(gatewayRun: Task<Void, any Error>, serverRun: Task<Void, any Error>) async {
        await self.client.close()
        self.gatewayServer.beginShutdown()
        _ = try? await serverRun.value
        gatewayRun.cancel()
        _ = try? await gatewayRun.value
        for replica in self.replicas { await replica.stop() }
    }
}
