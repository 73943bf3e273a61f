import Foundation
public import HearthCore
public import HearthRPC
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle

/// The gateway: the one door for clients. It authenticates each call's bearer token, applies
/// the caller's rate limit, and forwards the payload bytes, never decoded, to a replica of
/// the service that owns the method's package, with the verified user id and the internal
/// credential that services require. The answer goes back on the client's call.
///
/// As a `Service` it health-checks ejected replicas once a second and readmits them, and looks up
/// again the backends given as host names (``ReplicaDiscovery``).
public final class Gateway: Service, CallForwarder, Sendable {
    public struct Configuration: Sendable {
        /// Method prefix (a package, e.g. `hearth.echo.`) -> replica addresses.
        public var routes: [String: [(host: String, port: Int)]]
        /// The longest a forwarded call may wait, whatever the client allows.
        public var routeTimeout: Duration
        public var rateLimit: RateLimiter.Limits
        public var ejection: EjectionPolicy
        /// Connections to each replica from each event loop.
        public var connectionsPerBackend: Int
        /// Further connections to a replica from one event loop, each opened only when the ones
        /// before it hold `callsPerBackendConnection` calls: every user behind the loop shares
        /// them, and one connection's limit must not refuse one user's call for another's.
        public var extraConnectionsPerBackend: Int
        /// The calls a replica takes on one connection: its `maxConcurrentCallsPerConnection`,
        /// which Hearth's services leave at the default. A replica that takes fewer refuses the
        /// call past its limit, running none of it, and the gateway sends it once more on
        /// another connection.
        public var callsPerBackendConnection: Int
        /// What each route's replicas require in `x-hearth-internal`, by route prefix: the
        /// credential of the gateway's link to the service behind it.
        public var credentials: [String: String]
        /// How often ejected replicas are health-checked.
        public var probeInterval: Duration
        /// How long a connection to a replica may take before it counts as a failure (its
        /// calls are then tried on another replica, and enough failures eject it).
        public var connectTimeout: Duration
        /// The largest answer frame taken from a replica: as large as the gateway's own
        /// server takes.
        public var maxFrameSize: Int
        /// The largest request frame each route's replicas take, by route prefix (checkins
        /// takes photos); a route not named gets DESIGN's 4 MiB, which every Hearth server
        /// takes. A larger request is answered RESOURCE_EXHAUSTED by the gateway and never
        /// sent: the replica would close the connection that other callers' calls share.
        public var maxRequestFrameSizes: [String: Int]
        /// Methods for Hearth's own services, which reach each other directly (their contracts
        /// say "Internal"): refused to clients, PERMISSION_DENIED. The gateway knows no contract;
        /// `hearth serve gateway` names them.
        public var internalMethods: Set<String>
        /// How a backend given as a host name is looked up (every address it has is a replica).
        public var resolver: any AddressResolver
        /// How often those names are looked up again (and soon after a replica failed to connect).
        public var discoveryInterval: Duration

        public init(
            routes: [String: [(host: String, port: Int)]],
            credentials: [String: String],
            routeTimeout: Duration = .seconds(15),
            rateLimit: RateLimiter.Limits = RateLimiter.Limits(),
            ejection: EjectionPolicy = EjectionPolicy(),
            connectionsPerBackend: Int = 1,
            extraConnectionsPerBackend: Int = 15,
            callsPerBackendConnection: Int = ServerConfiguration.defaultMaxConcurrentCallsPerConnection,
            probeInterval: Duration = .seconds(1),
            connectTimeout: Duration = .seconds(2),
            maxFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
            maxRequestFrameSizes: [String: Int] = [:],
            internalMethods: Set<String> = [],
            resolver: any AddressResolver = SystemResolver(),
            discoveryInterval: Duration = .seconds(5)
        ) {
            self.routes = routes
            self.credentials = credentials
            self.routeTimeout = routeTimeout
            self.rateLimit = rateLimit
            self.ejection = ejection
            self.connectionsPerBackend = connectionsPerBackend
            self.extraConnectionsPerBackend = extraConnectionsPerBackend
            self.callsPerBackendConnection = callsPerBackendConnection
            self.probeInterval = probeInterval
            self.connectTimeout = connectTimeout
            self.maxFrameSize = maxFrameSize
            self.maxRequestFrameSizes = maxRequestFrameSizes
            self.internalMethods = internalMethods
            self.resolver = resolver
            self.discoveryInterval = discoveryInterval
        }
    }

    private let configuration: Configuration
    private let pools: [BackendPool]
    /// The pools whose backends are found by name, each with how.
    private let discoveries: [(pool: BackendPool, discovery: ReplicaDiscovery)]
    let verifier: TokenVerifier
    let limiter: RateLimiter
    private let metrics: MethodMetrics
    private let logger: Logger

    /// - Parameters:
    ///   - metrics: where forwarded calls are counted (server interceptors do not see them).
    ///   - group: the event loops of the gateway's server; each keeps its own backend
    ///     connections, so a call goes out on the thread it came in on.
    public init(
        configuration: Configuration,
        verifier: TokenVerifier,
        clock: any WallClock = SystemClock(),
        metrics: MethodMetrics = MethodMetrics(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.metrics = metrics
        self.verifier = verifier
        self.limiter = RateLimiter(limits: configuration.rateLimit, clock: clock)
        self.logger = logger
        // Longest prefix first, so that a more specific route wins.
        let routes = configuration.routes.sorted { $0.key.count > $1.key.count }
        let loops = Array(group.makeIterator())
        let discoveries = routes.map { prefix, addresses in
            ReplicaDiscovery(
                backends: addresses,
                resolver: configuration.resolver,
                drainLimit: configuration.routeTimeout,
                recheckAfter: configuration.discoveryInterval,
                logger: logger
            ) { host, port, origin in
                Replica(
                    host: host,
                    port: port,
                    origin: origin,
                    connections: configuration.connectionsPerBackend,
                    extraConnections: configuration.extraConnectionsPerBackend,
                    callsPerConnection: configuration.callsPerBackendConnection,
                    connectTimeout: configuration.connectTimeout,
                    maxFrameSize: configuration.maxFrameSize,
                    maxRequestFrameSize: configuration.maxRequestFrameSizes[prefix]
                        ?? ServerConfiguration.defaultMaxFrameSize,
                    policy: configuration.ejection,
                    loops: loops
                )
            }
        }
        self.pools = zip(routes, discoveries).map { route, discovery in
            // Until the first lookup, a name is one replica, connected to by name.
            BackendPool(
                prefix: route.key,
                credential: configuration.credentials[route.key] ?? "",
                replicas: route.value.map { discovery.makeReplica($0.host, $0.port, $0.host) },
                logger: logger
            )
        }
        self.discoveries = zip(self.pools, discoveries).filter { $0.1.findsByName }.map { ($0.0, $0.1) }
    }

    /// How many calls `user` has in flight through this gateway (for tests).
    func callsInFlight(of user: String) -> Int { self.limiter.inFlight(user) }

    /// Replicas out of rotation right now (`host:port`), for operators and tests.
    public var ejectedBackends: [String] {
        self.pools.flatMap { pool in pool.replicas.filter(\.isEjected).map(\.address) }
    }

    /// Runs the readmission checks and the lookups of backends given by name until shutdown,
    /// then closes the backend connections. The lookups run apart: a slow one holds back no
    /// readmission.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.readmitEjected() }
                    if !self.discoveries.isEmpty { group.addTask { try await self.lookUpNames() } }
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch is CancellationError {
            // Graceful shutdown or cancellation: both end the loops normally.
        }
        for pool in self.pools { await pool.close() }
    }

    /// Health-checks the ejected replicas, and closes the retired ones whose calls have ended.
    private func readmitEjected() async throws {
        while true {
            try await Task.sleep(for: self.configuration.probeInterval)
            for pool in self.pools {
                await pool.probeEjected()
                await pool.closeDrained()
            }
        }
    }

    /// Looks up the backends given by name every `discoveryInterval`, and a pool's soon after
    /// one of its replicas failed to connect.
    private func lookUpNames() async throws {
        var next = ContinuousClock.now
        while true {
            let now = ContinuousClock.now
            let due = now >= next
            for (pool, discovery) in self.discoveries where pool.takeLookUpRequest() || due {
                await discovery.refresh(pool)
            }
            if due { next = now + self.configuration.discoveryInterval }
            try await Task.sleep(for: self.configuration.probeInterval)
        }
    }

    /// Replicas of the route `prefix` retired and not closed yet (for tests).
    func retiringBackends(of prefix: String) -> Int {
        self.pools.first { $0.prefix == prefix }?.retiring ?? 0
    }

    /// The replicas of the route `prefix` in rotation now (`host:port`), for tests.
    func backends(of prefix: String) -> [String] {
        self.pools.first { $0.prefix == prefix }?.replicas.map(\.address) ?? []
    }

    /// Sends one call on, on the calling connection's event loop. A client's calls after its
    /// first (whose token was verified then) start no task: the token is known, and the
    /// replica's connection is ready.
    public func forward(_ payload: Data, context: RPCContext, on loop: any EventLoop) -> StartedCall {
        let start = NIODeadline.now()
        let authorization = context.metadata["authorization"]
        var user: String?
        let call: StartedCall
        // The token first: a caller without one learns nothing else, not even which methods
        // exist, and any answer but UNAUTHENTICATED tells the listener the caller proved who
        // they are (its authentication window counts on it).
        do {
            user = try self.verifier.knownUserID(authorization: authorization)
            if let user {
                call = try self.admitAndForward(
                    payload,
                    context: context,
                    user: user,
                    to: try self.pool(serving: context.method),
                    on: loop
                )
            } else {
                // The first call with this token: checking its signature awaits.
                call = .task(on: loop) {
                    let user = try await self.verifier.userID(authorization: authorization)
                    try Task.checkCancellation()
                    return try await self.admitAndForward(
                        payload,
                        context: context,
                        user: user,
                        to: try self.pool(serving: context.method),
                        on: loop
                    ).value
                }
            }
        } catch {
            call = .answered(.failure(error), on: loop)
        }
        call.response.whenComplete { [user] result in
            var code = StatusCode.ok
            if case .failure(let error) = result { code = RPCError(answering: error).code }
            // Method names are the caller's: only one a service answered OK is shown to exist.
            // The user is looked up only for the access log (a token verified in the task is
            // known by now).
            context.recordServed(
                code: code,
                since: start,
                user: user ?? (try? self.verifier.knownUserID(authorization: authorization)),
                in: self.metrics,
                countsApart: code == .ok
            )
        }
        return call
    }

    /// The replicas of the service whose package `method` is in.
    private func pool(serving method: String) throws -> BackendPool {
        guard let pool = self.pools.first(where: { method.hasPrefix($0.prefix) }) else {
            throw RPCError(.unimplemented, "no service serves \(method)")
        }
        return pool
    }

    /// Applies the user's limits (rate, calls in flight), then forwards the call; it counts as
    /// in flight until its answer, whatever it is.
    private func admitAndForward(
        _ payload: Data,
        context: RPCContext,
        user: String,
        to pool: BackendPool,
        on loop: any EventLoop
    ) throws -> StartedCall {
        // After the token's check: a caller without one learns that first.
        guard !self.configuration.internalMethods.contains(context.method) else {
            throw RPCError(.permissionDenied, "\(context.method) is for Hearth's own services, not for clients")
        }
        try self.admit(user)
        let request: ForwardedRequest
        do {
            request = try self.request(payload, context: context, user: user, credential: pool.credential)
        } catch {
            self.limiter.finished(user)
            throw error
        }
        let call = pool.startOnReplica(request, on: loop)
        call.response.whenComplete { _ in self.limiter.finished(user) }
        return call
    }

    /// Counts a call of `user`'s in flight, if their limits (rate, calls in flight) allow one
    /// more; ``RateLimiter/finished(_:)`` ends it.
    func admit(_ user: String) throws {
        let limit = self.configuration.rateLimit
        switch self.limiter.admit(user) {
        case nil:
            break
        case .rate(let wait):
            throw RPCError(
                .resourceExhausted,
                "rate limit exceeded: \(Int(limit.perSecond)) calls a second, bursts of \(Int(limit.burst))",
                retryAfter: .retryAfter(seconds: wait)
            )
        case .inFlight:
            throw RPCError(
                .resourceExhausted,
                "too many calls in flight: at most \(limit.maxInFlight) at once; wait for an answer before the next"
            )
        }
    }

    /// The call as it goes to a replica: the route's deadline, the verified user and the
    /// route's credential in place of what the client sent.
    private func request(_ payload: Data, context: RPCContext, user: String, credential: String) throws
        -> ForwardedRequest
    {
        let now = NIODeadline.now()
        var deadline = now + .nanoseconds(self.configuration.routeTimeout.nanoseconds)
        if let callerDeadline = context.deadline {
            // The replica is waited for until just before the caller gives up, so that its
            // silence ends the forwarded call (and has the replica checked) rather than the
            // caller's deadline cancelling it first, which would blame no one.
            guard callerDeadline > now else { throw RPCError(.deadlineExceeded, "deadline exceeded at the gateway") }
            let withMargin = callerDeadline - Self.deadlineMargin
            deadline = min(deadline, withMargin > now ? withMargin : callerDeadline)
        }
        let metadata = context.metadata.filtered(
            keeping: { key in
                !key.hasPrefix(TrustedMetadata.prefix) && key != "authorization" && key != "x-request-id"
            },
            adding: [
                TrustedMetadata.user: user,
                TrustedMetadata.credential: credential,
                "x-request-id": context.requestID,
            ]
        )
        guard metadata.count <= Metadata.maxEntries else {
            throw RPCError(
                .invalidArgument,
                "too many metadata entries: \(metadata.count - Self.addedMetadata) besides authorization, "
                    + "at most \(Metadata.maxEntries - Self.addedMetadata) (the gateway adds \(Self.addedMetadata))"
            )
        }
        return ForwardedRequest(method: context.method, payload: payload, metadata: metadata, deadline: deadline)
    }

    /// How much sooner than its caller the gateway stops waiting for a replica's answer.
    static let deadlineMargin = TimeAmount.milliseconds(1)

    /// The entries the gateway adds to a forwarded call: user, credential, request id.
    static let addedMetadata = 3
}
