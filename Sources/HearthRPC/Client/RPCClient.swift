public import Foundation
import HearthCore
public import NIOCore
import NIOPosix
public import SwiftProtobuf
import Synchronization

/// Per-call settings.
public struct CallOptions: Sendable {
    /// How long the caller waits; sent as `timeout_ms`. nil: no deadline.
    public var timeout: Duration?
    /// Extra request metadata (lower-case keys).
    public var metadata: [String: String]

    public init(timeout: Duration? = nil, metadata: [String: String] = [:]) {
        self.timeout = timeout
        self.metadata = metadata
    }
}

/// Wraps every call a client makes (access log, metrics, credentials).
public protocol ClientInterceptor: Sendable {
    func intercept(
        method: String,
        payload: Data,
        options: CallOptions,
        next: @Sendable (String, Data, CallOptions) async throws -> Data
    ) async throws -> Data
}

/// A client of one server address: a pool of connections used round-robin, each carrying
/// many concurrent calls. A lost connection is replaced on the next call; connect failures
/// back off exponentially with jitter, and calls meanwhile fail fast with UNAVAILABLE.
public final class RPCClient: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// Connections in the pool, used round-robin.
        public var connections: Int
        /// Further connections, each opened only when every one before it holds
        /// `maxCallsPerConnection` calls: a client that many callers share (the gateway's, to a
        /// replica) opens another rather than have the server refuse the call. 0: none. The
        /// count is exact for calls started on the connections' own loop (the gateway's); one
        /// started from another thread counts once that loop has sent it.
        public var extraConnections: Int
        /// The calls one connection takes: the server's `maxConcurrentCallsPerConnection`.
        /// Matters only with `extraConnections`.
        public var maxCallsPerConnection: Int
        /// The largest frame taken from the server (answers).
        public var maxFrameSize: Int
        /// The largest request frame sent (what the server takes); nil: `maxFrameSize`. A larger
        /// request is answered RESOURCE_EXHAUSTED and never sent, since the server would close
        /// the connection that other calls share.
        public var maxRequestFrameSize: Int?
        /// The largest request frame the server takes on a connection until a call on it has
        /// passed authentication (the gateway's, 64 KiB by default). A larger request on a
        /// connection with no such call first calls `hearth.gateway.v1.Gateway/Authenticate`
        /// there, with the request's token, then goes on that same connection. Nil: the server has no such limit
        /// (Hearth's services).
        public var maxFrameSizeBeforeAuthentication: Int?
        public var connectTimeout: TimeAmount
        public var backoff: Backoff
        /// A connection the server closes (or refuses new calls on) this soon after it was made,
        /// before answering anything, was refused: the next one waits out a backoff. Later, it
        /// is an idle connection the server let go, replaced at once.
        public var refusalWindow: TimeAmount
        /// Runs first on every new connection (TLS).
        public var connectionSetup: (@Sendable (any Channel) throws -> Void)?
        /// The clock backoffs and the refusal window are measured on (tests move one by hand).
        public var now: @Sendable () -> NIODeadline = { .now() }

        public init(
            host: String,
            port: Int,
            connections: Int = 1,
            extraConnections: Int = 0,
            maxCallsPerConnection: Int = ServerConfiguration.defaultMaxConcurrentCallsPerConnection,
            maxFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
            maxRequestFrameSize: Int? = nil,
            connectTimeout: TimeAmount = .seconds(5),
            backoff: Backoff = Backoff(),
            refusalWindow: TimeAmount = .seconds(10),
            connectionSetup: (@Sendable (any Channel) throws -> Void)? = nil
        ) {
            self.host = host
            self.port = port
            self.connections = max(1, connections)
            self.extraConnections = max(0, extraConnections)
            self.maxCallsPerConnection = max(1, maxCallsPerConnection)
            self.maxFrameSize = maxFrameSize
            self.maxRequestFrameSize = maxRequestFrameSize
            self.connectTimeout = connectTimeout
            self.backoff = backoff
            self.refusalWindow = refusalWindow
            self.connectionSetup = connectionSetup
        }
    }

    public let configuration: Configuration
    /// What a client of Hearth's gateway sets as ``Configuration/maxFrameSizeBeforeAuthentication``:
    /// the smallest limit the gateway can be given (16 KiB), so that it need not know the setting.
    public static let gatewayFrameSizeBeforeAuthentication = 16 * 1024
    let slots: ConnectionSlots
    private let invoke: @Sendable (String, Data, CallOptions) async throws -> Data

    public init(
        configuration: Configuration,
        interceptors: [any ClientInterceptor] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        let slots = ConnectionSlots(configuration: configuration, group: group)
        self.slots = slots
        let base: @Sendable (String, Data, CallOptions) async throws -> Data = {
            [slots] method, payload, options in
            let metadata = Metadata(options.metadata)
            // One deadline for the call, its connecting and its one retry.
            let deadline = options.timeout.map { ContinuousClock.now + $0 }
            func attempt() async throws -> Data {
                if Task.isCancelled { throw RPCError(.cancelled, "the call was cancelled", cause: CallNotSent()) }
                let timeout = deadline.map { $0 - ContinuousClock.now }
                if let timeout, timeout <= .zero {
                    throw RPCError(.deadlineExceeded, "deadline exceeded", cause: CallNotSent())
                }
                // The retry picks again: a connection the server said was full is passed over.
                let slot = slots.next()
                if let limit = configuration.maxFrameSizeBeforeAuthentication,
                    Self.frameSize(method, payload: payload, metadata: metadata) > limit
                {
                    return try await Self.callAuthenticated(
                        on: slot,
                        method,
                        payload: payload,
                        metadata: metadata,
                        deadline: deadline
                    )
                }
                return try await slot.start(
                    method,
                    payload: payload,
                    metadata: metadata,
                    timeout: timeout,
                    on: nil
                ).value
            }
            do {
                return try await attempt()
            } catch let error as RPCError where error.mayRetryAtOnce || error.refusedForConnectionLimit {
                return try await attempt()
            }
        }
        self.invoke = interceptors.reversed().reduce(base) { next, interceptor in
            { method, payload, options in
                try await interceptor.intercept(method: method, payload: payload, options: options, next: next)
            }
        }
    }

    /// A call whose frame is larger than the server takes before authentication: on a
    /// connection that a call has authenticated, after `Gateway/Authenticate` when the slot's
    /// connection has had none.
    private static func callAuthenticated(
        on slot: ConnectionSlot,
        _ method: String,
        payload: Data,
        metadata: Metadata,
        deadline: ContinuousClock.Instant?
    ) async throws -> Data {
        func remaining() throws -> Duration? {
            let left = deadline.map { $0 - ContinuousClock.now }
            if let left, left <= .zero { throw RPCError(.deadlineExceeded, "deadline exceeded", cause: CallNotSent()) }
            return left
        }
        if !slot.hasAuthenticatedConnection {
            // Only the token: the rest of the call's metadata is for its method.
            _ = try await slot.start(
                Hearth_Gateway_V1_Gateway.Method.authenticate.name,
                payload: Data(),
                metadata: Metadata(metadata["authorization"].map { ["authorization": $0] } ?? [:]),
                timeout: try remaining(),
                on: nil
            ).value
        }
        // On that same connection: a new one would take no large frame yet.
        return try await slot.startOnAuthenticatedConnection(
            method,
            payload: payload,
            metadata: metadata,
            timeout: try remaining()
        ).value
    }

    /// At least the size of a REQUEST frame for a call: its payload, method and metadata, and
    /// room for the fields around them.
    static func frameSize(_ method: String, payload: Data, metadata: Metadata) -> Int {
        let perEntry = 8
        let entries = metadata.entries.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + perEntry }
        return payload.count + method.utf8.count + entries + 64
    }

    /// A convenience for `host:port` with defaults.
    public convenience init(host: String, port: Int, connections: Int = 1, interceptors: [any ClientInterceptor] = []) {
        self.init(
            configuration: Configuration(host: host, port: port, connections: connections),
            interceptors: interceptors
        )
    }

    /// Calls `method` with serialized `payload`; returns the serialized response.
    /// - Throws: ``RPCError`` (the server's status, or UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED).
    public func callRaw(_ method: String, payload: Data, options: CallOptions = CallOptions()) async throws -> Data {
        try await self.invoke(method, payload, options)
    }

    /// Starts a call without a task: for callers on an event loop that must not start one per
    /// call (the gateway forwards with it). On the round-robin turn's connection; when that
    /// must be made or waited for first, the call goes out once it is (at most `timeout` in
    /// all) and the response completes on `loop`. Interceptors do not apply, and a call the
    /// connection refused before sending it is not tried again here.
    public func start(
        _ method: String,
        payload: Data,
        metadata: Metadata,
        timeout: Duration?,
        on loop: any EventLoop
    ) -> StartedCall {
        self.slots.next().start(method, payload: payload, metadata: metadata, timeout: timeout, on: loop)
    }

    /// Whether a call started now goes out at once on a connection that takes calls. When not,
    /// the connections it lacks are started in the background (those not backing off after a
    /// failure), so that a caller with somewhere else to go need not wait for them; each
    /// connect this starts is handed to `connectStarted`, to learn how it ends. Each connection
    /// the server closed soon after it was made and before answering anything (a backend that
    /// accepts and drops), found now, goes to `refused`: once per connection.
    public func prepareForCalls(
        connectStarted: (EventLoopFuture<RPCConnection>) -> Void,
        refused: (RPCError) -> Void
    ) -> Bool {
        var ready = true
        for slot in self.slots.regular {
            let prepared = slot.prepare()
            if let connect = prepared.connectStarted { connectStarted(connect) }
            if let error = prepared.refused { refused(error) }
            ready = ready && prepared.ready
        }
        return self.slots.readyForCall(regularReady: ready)
    }

    /// Calls a unary method with typed messages.
    /// - Throws: ``RPCError``; INTERNAL when the response does not decode as `Response`.
    public func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: String,
        _ request: Request,
        as: Response.Type = Response.self,
        options: CallOptions = CallOptions()
    ) async throws -> Response {
        let payload = try await self.callRaw(method, payload: request.serializedData(), options: options)
        do {
            return try Response(serializedBytes: payload)
        } catch {
            throw RPCError(
                .internal,
                "response does not decode as \(Response.protoMessageName): \(error)",
                cause: error
            )
        }
    }

    /// Closes every connection; calls in flight fail with UNAVAILABLE.
    public func close() async {
        for slot in self.slots.regular + self.slots.extra { await slot.close() }
    }

    /// Whether every pooled connection is open and taking calls (for tests and diagnostics).
    var allConnectionsAcceptCalls: Bool {
        self.slots.regular.allSatisfy { $0.readyConnection != nil }
    }
}

/// A client's connections: the regular ones, used in turn, and the extra ones, each used only
/// when every one before it is full.
final class ConnectionSlots: Sendable {
    let regular: [ConnectionSlot]
    let extra: [ConnectionSlot]
    private let turn = RoundRobin()
    private let maxCallsPerConnection: Int

    init(configuration: RPCClient.Configuration, group: any EventLoopGroup) {
        self.regular = (0..<configuration.connections).map { _ in
            ConnectionSlot(configuration: configuration, group: group)
        }
        self.extra = (0..<configuration.extraConnections).map { _ in
            ConnectionSlot(configuration: configuration, group: group)
        }
        self.maxCallsPerConnection = configuration.maxCallsPerConnection
    }

    /// Where the next call goes: the regular connection whose turn it is, unless it is full;
    /// then the first regular or extra one with room (one backing off after a failed connect is
    /// passed over); the turn's, when none has: the server refuses the call.
    func next() -> ConnectionSlot {
        let slot = self.turn.pick(from: self.regular)
        let limit = self.maxCallsPerConnection
        guard !self.extra.isEmpty, slot.room(at: limit) == .full else { return slot }
        let hasRoom = { (other: ConnectionSlot) in other.room(at: limit) == .free }
        return self.regular.first(where: hasRoom) ?? self.extra.first(where: hasRoom) ?? slot
    }

    /// Whether a call started now goes out at once: some connection takes calls with room
    /// (the regular ones all ready, or, when they are full, an extra one).
    func readyForCall(regularReady: Bool) -> Bool {
        guard regularReady, !self.extra.isEmpty else { return regularReady }
        let limit = self.maxCallsPerConnection
        return self.regular.contains { $0.room(at: limit) != .full }
            || self.extra.contains { $0.isReady(withRoomAt: limit) }
    }
}

/// Hands out the items of an array in turn, from any thread.
final class RoundRobin: Sendable {
    private let counter = Atomic<Int>(0)

    /// The next of `items` in turn (a lone item without touching the counter).
    func pick<Item>(from items: [Item]) -> Item {
        guard items.count > 1 else { return items[0] }
        return items[(self.counter.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max) % items.count]
    }
}

/// Jittered exponential backoff between connection attempts.
public struct Backoff: Sendable {
    public var initial: TimeAmount
    public var multiplier: Double
    public var maximum: TimeAmount
    /// Each delay is scaled by a random factor in 1 ± jitter.
    public var jitter: Double

    public init(
        initial: TimeAmount = .milliseconds(100),
        multiplier: Double = 1.6,
        maximum: TimeAmount = .seconds(5),
        jitter: Double = 0.2
    ) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The wait after `failures` consecutive failed attempts (1 or more).
    public func delay(afterFailures failures: Int) -> TimeAmount {
        let exponent = Double(max(failures - 1, 0))
        let base = min(
            Double(self.initial.nanoseconds) * pow(self.multiplier, exponent),
            Double(self.maximum.nanoseconds)
        )
        let factor = 1 + Double.random(in: -self.jitter...self.jitter)
        return .nanoseconds(Int64(min(max(base * factor, 0), Double(Int64.max / 2))))
    }
}
