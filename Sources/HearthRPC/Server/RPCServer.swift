public import Logging
public import NIOCore
import NIOPosix
public import ServiceLifecycle
import Synchronization

/// A Hearth RPC server: listens on TCP, serves the given services plus health checks, and
/// drains gracefully (GOAWAY, in-flight calls finish, then close) when shut down.
///
/// Run it in a `ServiceGroup` (it is a `Service`), or call ``run()`` and ``beginShutdown()``.
public final class RPCServer: Service, Sendable {
    private struct State {
        var listener: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// Open connections by the peer's IP address (when there is a per-address cap).
        var perAddress: [String: Int] = [:]
        var shuttingDown = false
        var listenerClosed = false
    }

    public let configuration: ServerConfiguration
    /// Which services this server reports SERVING for.
    public let health: HealthState
    private let router: MethodRouter
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex(State())
    private let callCounter = CallCounter()
    private let partialFrames: PartialFrameBudget
    private let acceptLimiter: AcceptLimiter?
    private let bound: EventLoopPromise<SocketAddress>
    private let stopped: EventLoopPromise<Void>

    /// - Parameters:
    ///   - services: what to serve; `hearth.health.v1.Health` is added to every server.
    ///   - forwarder: sends on every call to a method no service registers (the gateway);
    ///     without it such methods are answered UNIMPLEMENTED.
    ///   - interceptors: wrap every call to the services' methods, the first one outermost.
    public init(
        configuration: ServerConfiguration = ServerConfiguration(),
        services: [any RPCService],
        forwarder: (any CallForwarder)? = nil,
        interceptors: [any ServerInterceptor] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.acceptLimiter = configuration.acceptRatePerAddress.map { AcceptLimiter(rate: $0) }
        self.partialFrames = PartialFrameBudget(
            limit: configuration.maxPartialFrameBytes,
            perAddressLimit: configuration.maxPartialFrameBytesPerAddress
        )
        self.group = group
        self.logger = logger
        self.health = HealthState(
            serving: services.map(\.serviceName),
            storageFaultHold: configuration.storageFaultHold
        )
        let all: [any RPCService] = services + [HealthService(state: self.health)]
        var handlers: [String: RawHandler] = [:]
        for method in all.flatMap(\.methods) {
            precondition(handlers[method.name] == nil, "method \(method.name) registered twice")
            handlers[method.name] = chain(method.handler, through: interceptors)
        }
        self.router = MethodRouter(
            handlers: handlers,
            forwarder: forwarder,
            publicMethods: [HealthService.checkMethod],
            callers: configuration.callers,
            logger: logger
        )
        let loop = group.next()
        self.bound = loop.makePromise()
        self.stopped = loop.makePromise()
    }

    deinit {
        // A server that never ran still completes its promises (NIO traps on leaked ones).
        self.bound.fail(CancellationError())
        self.stopped.succeed()
    }

    /// The address the server listens on, once it is bound (the real port when 0 was asked for).
    public var localAddress: SocketAddress {
        get async throws { try await self.bound.futureResult.get() }
    }

    /// Calls being served right now, over all connections.
    public var callsInFlight: Int { self.callCounter.current }

    /// Open client connections.
    public var openConnections: Int { self.state.withLock { $0.connections.count } }

    /// Bytes of frames still arriving, over all connections (``ServerConfiguration/maxPartialFrameBytes``).
    public var partialFrameBytes: Int { self.partialFrames.inUse }

    /// Binds, serves until a graceful shutdown (SIGTERM/SIGINT in a `ServiceGroup`, or
    /// ``beginShutdown()``) has drained every connection, and returns. Cancelling it closes
    /// every connection at once.
    public func run() async throws {
        let listener: any Channel
        do {
            listener = try await self.bind()
        } catch {
            self.bound.fail(error)
            self.stopped.succeed()
            throw error
        }
        let address = listener.localAddress!
        self.bound.succeed(address)
        self.logger.info("listening", metadata: ["address": "\(address)"])
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await self.stopped.futureResult.get()
            } onGracefulShutdown: {
                self.beginShutdown()
            }
        } onCancel: {
            self.stopNow()
        }
    }

    /// Stops accepting connections, sends GOAWAY on every open one, lets in-flight calls finish
    /// (at most `drainTimeout`: those still running then are answered UNAVAILABLE), then closes
    /// them; ``run()`` returns when all are closed.
    public func beginShutdown() {
        let (listener, connections) = self.state.withLock { state -> ((any Channel)?, [any Channel]) in
            guard !state.shuttingDown else { return (nil, []) }
            state.shuttingDown = true
            return (state.listener, Array(state.connections.values))
        }
        self.health.setServing(false)
        guard let listener else {
            self.finishIfStopped()
            return
        }
        self.logger.info("draining", metadata: ["connections": "\(connections.count)"])
        listener.close(promise: nil)
        for connection in connections {
            connection.eventLoop.execute {
                connection.pipeline.fireUserInboundEventTriggered(DrainEvent())
            }
        }
        self.group.next().scheduleTask(in: self.configuration.drainTimeout) {
            let left = self.state.withLock { Array($0.connections.values) }
            if !left.isEmpty {
                self.logger.warning("drain timeout: closing connections", metadata: ["connections": "\(left.count)"])
            }
            for connection in left {
                connection.eventLoop.execute {
                    connection.pipeline.fireUserInboundEventTriggered(DrainTimeoutEvent())
                }
                // Whatever the peer does with those answers, the connection goes.
                connection.eventLoop.scheduleTask(in: Self.drainAnswerWait) { connection.close(promise: nil) }
            }
        }
    }

    /// How long the answers to calls cut off by the drain's end may take to go out.
    static let drainAnswerWait = TimeAmount.seconds(1)

    /// Closes the listener and every connection now, cancelling in-flight calls.
    func stopNow() {
        let (listener, connections) = self.state.withLock { state in
            state.shuttingDown = true
            return (state.listener, Array(state.connections.values))
        }
        self.health.setServing(false)
        listener?.close(promise: nil)
        for connection in connections { connection.close(promise: nil) }
        self.finishIfStopped()
    }

    // MARK: Binding and connections

    private func bind() async throws -> any Channel {
        let configuration = self.configuration
        let bootstrap = ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                self.initialize(connection: channel)
            }
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            throw ListenFailed(
                what: self.logger[metadataKey: "process"].map { "\($0)" } ?? "the server",
                host: configuration.host,
                port: configuration.port,
                reason: error
            )
        }
        let alreadyStopping = self.state.withLock { state in
            state.listener = listener
            return state.shuttingDown
        }
        listener.closeFuture.whenComplete { _ in
            self.state.withLock { $0.listenerClosed = true }
            self.finishIfStopped()
        }
        if alreadyStopping { listener.close(promise: nil) }
        return listener
    }

    private func initialize(connection channel: any Channel) -> EventLoopFuture<Void> {
        let cap = self.configuration.maxConnectionsPerAddress
        let counted =
            cap != nil || self.configuration.maxPartialFrameBytesPerAddress != nil || self.acceptLimiter != nil
        let address = counted ? PeerAddressKey.of(channel.remoteAddress) : nil
        if let limiter = self.acceptLimiter, let address, let wait = limiter.admit(address) {
            let rate = limiter.rate
            return self.refuse(
                channel,
                RPCError(
                    .resourceExhausted,
                    "connections from \(address) come faster than \(rate)",
                    retryAfter: .milliseconds(Int64((wait * 1000).rounded(.up)))
                )
            )
        }
        let refusal = self.state.withLock { state -> RPCError? in
            if state.shuttingDown { return RPCError(.unavailable, "server is shutting down") }
            guard state.connections.count < self.configuration.maxConnections else {
                return RPCError(.resourceExhausted, "too many connections (limit \(self.configuration.maxConnections))")
            }
            if let cap, let address {
                guard state.perAddress[address, default: 0] < cap else {
                    return RPCError(.resourceExhausted, "too many connections from \(address) (limit \(cap))")
                }
            }
            if let address { state.perAddress[address, default: 0] += 1 }
            state.connections[ObjectIdentifier(channel)] = channel
            return nil
        }
        if let refusal {
            return self.refuse(channel, refusal)
        }
        channel.closeFuture.whenComplete { _ in
            self.state.withLock { state in
                _ = state.connections.removeValue(forKey: ObjectIdentifier(channel))
                if let address {
                    state.perAddress[address, default: 1] -= 1
                    if state.perAddress[address] == 0 { state.perAddress[address] = nil }
                }
            }
            self.finishIfStopped()
        }
        return channel.eventLoop.makeCompletedFuture {
            try self.configuration.connectionSetup?(channel)
            try channel.pipeline.syncOperations.addServerConnectionHandlers(
                router: self.router,
                configuration: self.configuration,
                callsInFlight: self.callCounter,
                partialFrames: self.partialFrames,
                peerAddress: address,
                health: self.health,
                logger: self.logger
            )
        }
    }

    /// Over a connection limit (or shutting down): GOAWAY with the reason, then close.
    private func refuse(_ channel: any Channel, _ reason: RPCError) -> EventLoopFuture<Void> {
        var frame = WireFrame()
        frame.kind = .goaway
        frame.status = reason.wireStatus
        if let buffer = try? channel.allocator.buffer(framing: frame) {
            channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    private func finishIfStopped() {
        let done = self.state.withLock { state in
            state.shuttingDown && (state.listener == nil || state.listenerClosed) && state.connections.isEmpty
        }
        if done { self.stopped.succeed() }
    }
}

/// A server could not take its address: which one, where, and why ("address already in use"
/// alone does not say which of a host's six ports).
public struct ListenFailed: Error, CustomStringConvertible {
    public var what: String
    public var host: String
    public var port: Int
    public var reason: any Error

    public var description: String {
        let why = (self.reason as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(self.reason)"
        return "\(self.what) cannot listen on \(self.host):\(self.port): \(why)"
    }
}
