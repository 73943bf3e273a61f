import Foundation
public import HearthCore
public import HearthRPC
public import Logging
import NIOCore
public import ServiceLifecycle

/// The gateway: the one door for clients. It authenticates each call's bearer token, applies
/// the caller's rate limit, and forwards the payload bytes, never decoded, to a replica of
/// the service that owns the method's package, with the verified user id and the internal
/// credential that services require. The answer goes back on the client's call.
///
/// As a `Service` it health-checks ejected replicas once a second and readmits them.
public final class Gateway: Service, Sendable {
    public struct Configuration: Sendable {
        /// Method prefix (a package, e.g. `hearth.echo.`) -> replica addresses.
        public var routes: [String: [(host: String, port: Int)]]
        /// The longest a forwarded call may wait, whatever the client allows.
        public var routeTimeout: Duration
        public var rateLimit: RateLimiter.Limits
        public var ejection: EjectionPolicy
        /// Connections per replica.
        public var connectionsPerBackend: Int
        /// What services require in `x-hearth-internal`.
        public var internalCredential: String
        /// How often ejected replicas are health-checked.
        public var probeInterval: Duration

        public init(
            routes: [String: [(host: String, port: Int)]],
            internalCredential: String,
            routeTimeout: Duration = .seconds(15),
            rateLimit: RateLimiter.Limits = RateLimiter.Limits(),
            ejection: EjectionPolicy = EjectionPolicy(),
            connectionsPerBackend: Int = 2,
            probeInterval: Duration = .seconds(1)
        ) {
            self.routes = routes
            self.internalCredential = internalCredential
            self.routeTimeout = routeTimeout
            self.rateLimit = rateLimit
            self.ejection = ejection
            self.connectionsPerBackend = connectionsPerBackend
            self.probeInterval = probeInterval
        }
    }

    private let configuration: Configuration
    private let pools: [BackendPool]
    private let verifier: TokenVerifier
    private let limiter: RateLimiter
    private let logger: Logger

    public init(
        configuration: Configuration,
        verifier: TokenVerifier,
        clock: any WallClock = SystemClock(),
        logger: Logger
    ) {
        self.configuration = configuration
        self.verifier = verifier
        self.limiter = RateLimiter(limits: configuration.rateLimit, clock: clock)
        self.logger = logger
        // Longest prefix first, so that a more specific route wins.
        self.pools = configuration.routes.sorted { $0.key.count > $1.key.count }.map { prefix, addresses in
            BackendPool(
                prefix: prefix,
                replicas: addresses.map {
                    Replica(
                        host: $0.host,
                        port: $0.port,
                        connections: configuration.connectionsPerBackend,
                        policy: configuration.ejection
                    )
                },
                logger: logger
            )
        }
    }

    /// Replicas out of rotation right now (`host:port`), for operators and tests.
    public var ejectedBackends: [String] {
        self.pools.flatMap { pool in pool.replicas.filter(\.isEjected).map(\.address) }
    }

    /// The handler the gateway's server runs for every method it does not serve itself.
    public var handler: RawHandler {
        { payload, context in try await self.forward(payload, context: context) }
    }

    /// Runs the readmission checks until shutdown, then closes the backend connections.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: self.configuration.probeInterval)
                    for pool in self.pools { await pool.probeEjected() }
                }
            }
        } catch is CancellationError {
            // Graceful shutdown or cancellation: both end the loop normally.
        }
        for pool in self.pools { await pool.close() }
    }

    func forward(_ payload: Data, context: RPCContext) async throws -> Data {
        let start = ContinuousClock.now
        var user = "-"
        var code = StatusCode.ok
        defer {
            if context.logLevel <= .info {
                context.logger.info(
                    "call",
                    metadata: [
                        "method": "\(context.method)",
                        "code": "\(code.name)",
                        "duration_us": "\((ContinuousClock.now - start).microseconds)",
                        "user": "\(user)",
                    ]
                )
            }
        }
        do {
            guard let pool = self.pools.first(where: { context.method.hasPrefix($0.prefix) }) else {
                throw RPCError(.unimplemented, "no service serves \(context.method)")
            }
            user = try await self.verifier.userID(authorization: context.metadata["authorization"])
            if let wait = self.limiter.admit(user) {
                let limit = self.configuration.rateLimit
                throw RPCError(
                    .resourceExhausted,
                    "rate limit exceeded: \(Int(limit.perSecond)) calls a second, bursts of \(Int(limit.burst))",
                    retryAfter: .milliseconds(Int64((wait * 1000).rounded(.up)))
                )
            }
            var timeout = self.configuration.routeTimeout
            if let deadline = context.deadline {
                let remaining = deadline - .now()
                guard remaining > .zero else { throw RPCError(.deadlineExceeded, "deadline exceeded at the gateway") }
                timeout = min(timeout, .nanoseconds(remaining.nanoseconds))
            }
            var metadata: [String: String] = [:]
            for (key, value) in context.metadata
            where !key.hasPrefix(TrustedMetadata.prefix) && key != "authorization" {
                metadata[key] = value
            }
            metadata[TrustedMetadata.user] = user
            metadata[TrustedMetadata.credential] = self.configuration.internalCredential
            metadata["x-request-id"] = context.requestID
            return try await pool.call(
                context.method,
                payload: payload,
                options: CallOptions(timeout: timeout, metadata: metadata)
            )
        } catch {
            code = RPCError(answering: error).code
            throw error
        }
    }
}
