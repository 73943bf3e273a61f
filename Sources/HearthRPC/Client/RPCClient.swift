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
        public var maxFrameSize: Int
        public var connectTimeout: TimeAmount
        public var backoff: Backoff
        /// Runs first on every new connection (TLS).
        public var connectionSetup: (@Sendable (any Channel) throws -> Void)?

        public init(
            host: String,
            port: Int,
            connections: Int = 1,
            maxFrameSize: Int = 4 * 1024 * 1024,
            connectTimeout: TimeAmount = .seconds(5),
            backoff: Backoff = Backoff(),
            connectionSetup: (@Sendable (any Channel) throws -> Void)? = nil
        ) {
            self.host = host
            self.port = port
            self.connections = max(1, connections)
            self.maxFrameSize = maxFrameSize
            self.connectTimeout = connectTimeout
            self.backoff = backoff
            self.connectionSetup = connectionSetup
        }
    }

    public let configuration: Configuration
    private let slots: [ConnectionSlot]
    private let turn: RoundRobin
    private let invoke: @Sendable (String, Data, CallOptions) async throws -> Data

    public init(
        configuration: Configuration,
        interceptors: [any ClientInterceptor] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        let slots = (0..<configuration.connections).map { _ in
            ConnectionSlot(configuration: configuration, group: group)
        }
        self.slots = slots
        let turn = RoundRobin()
        self.turn = turn
        let base: @Sendable (String, Data, CallOptions) async throws -> Data = {
            [slots, turn] method, payload, options in
            let slot = turn.pick(from: slots)
            func attempt() async throws -> Data {
                let connection = try await slot.connection(timeout: options.timeout)
                return try await connection.call(
                    method: method,
                    payload: payload,
                    metadata: options.metadata,
                    timeout: options.timeout
                )
            }
            do {
                return try await attempt()
            } catch let error as RPCError where error.mayRetryAtOnce {
                return try await attempt()
            }
        }
        self.invoke = interceptors.reversed().reduce(base) { next, interceptor in
            { method, payload, options in
                try await interceptor.intercept(method: method, payload: payload, options: options, next: next)
            }
        }
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
    /// call (the gateway forwards with it). On the round-robin turn's connection when it is
    /// ready (the response completes on that connection's loop); otherwise a task connects
    /// first, waiting at most `timeout` (the response completes on `loop`). Interceptors do not
    /// apply, and a call the connection refused before sending it is not tried again here.
    public func start(
        _ method: String,
        payload: Data,
        metadata: Metadata,
        timeout: Duration?,
        on loop: any EventLoop
    ) -> StartedCall {
        let slot = self.turn.pick(from: self.slots)
        if let connection = slot.readyConnection {
            return connection.start(method: method, payload: payload, metadata: metadata, timeout: timeout)
        }
        return .task(on: loop) {
            let connection = try await slot.connection(timeout: timeout)
            try Task.checkCancellation()
            return try await connection.start(method: method, payload: payload, metadata: metadata, timeout: timeout)
                .value
        }
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
        for slot in self.slots { await slot.close() }
    }

    /// Whether every pooled connection is open and taking calls (for tests and diagnostics).
    var allConnectionsAcceptCalls: Bool {
        self.slots.allSatisfy { $0.readyConnection != nil }
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

/// One pooled connection and how to get it back when it is lost.
final class ConnectionSlot: Sendable {
    private enum State {
        case idle(failures: Int)
        case connecting(EventLoopFuture<RPCConnection>, failures: Int)
        /// `failures`: connections in a row before this one that the server refused at once.
        case ready(RPCConnection, failures: Int)
        case backingOff(until: NIODeadline, failures: Int, error: any Error)
        case closed
    }

    private let configuration: RPCClient.Configuration
    private let group: any EventLoopGroup
    private let state = Mutex(State.idle(failures: 0))

    init(configuration: RPCClient.Configuration, group: any EventLoopGroup) {
        self.configuration = configuration
        self.group = group
    }

    /// A connection that accepts calls: the current one, or a new one. The decision and the
    /// state change it implies happen under one lock, so two callers never both connect.
    /// Waiting for a new connection is bounded by `timeout` and by cancellation of the caller.
    func connection(timeout: Duration?) async throws -> RPCConnection {
        enum Next {
            case use(RPCConnection)
            case wait(EventLoopFuture<RPCConnection>)
            case fail(RPCError)
            case connect(EventLoopPromise<RPCConnection>, failures: Int)
        }
        let next = self.state.withLock { state -> Next in
            let failures: Int
            switch state {
            case .ready(let connection, _) where connection.isAcceptingCalls:
                return .use(connection)
            case .connecting(let future, _):
                return .wait(future)
            case .closed:
                return .fail(RPCError(.unavailable, "client is closed", cause: CallNotSent()))
            case .backingOff(let until, let count, let error):
                let now = NIODeadline.now()
                guard now >= until else {
                    return .fail(
                        RPCError(
                            .unavailable,
                            "cannot connect to \(self.target): \(describe(connectError: error))",
                            retryAfter: .nanoseconds((until - now).nanoseconds),
                            cause: CallNotSent(underlying: error)
                        )
                    )
                }
                failures = count
            case .idle(let count):
                failures = count
            case .ready(let connection, let count):
                // It stopped taking calls (GOAWAY): replace it, after a backoff if the server
                // refused it before answering anything.
                guard !connection.hasAnswered else {
                    failures = 0
                    break
                }
                let delay = self.configuration.backoff.delay(afterFailures: count + 1)
                let error = RPCError(
                    .unavailable,
                    "\(self.target) refuses new calls",
                    retryAfter: .nanoseconds(delay.nanoseconds),
                    cause: CallNotSent()
                )
                state = .backingOff(until: .now() + delay, failures: count + 1, error: error)
                return .fail(error)
            }
            let promise = self.group.next().makePromise(of: RPCConnection.self)
            state = .connecting(promise.futureResult, failures: failures)
            return .connect(promise, failures: failures)
        }
        switch next {
        case .use(let connection):
            return connection
        case .fail(let error):
            throw error
        case .wait(let future):
            return try await self.await(future, timeout: timeout)
        case .connect(let promise, let failures):
            self.connect(fulfilling: promise, failures: failures)
            return try await self.await(promise.futureResult, timeout: timeout)
        }
    }

    private var target: String { "\(self.configuration.host):\(self.configuration.port)" }

    private func await(_ future: EventLoopFuture<RPCConnection>, timeout: Duration?) async throws -> RPCConnection {
        // The connection attempt goes on for other callers; this caller stops waiting at its
        // deadline or when its task is cancelled.
        let loop = future.eventLoop
        let waited = loop.makePromise(of: RPCConnection.self)
        future.cascade(to: waited)
        let timer = timeout.map { timeout in
            loop.scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
                waited.fail(
                    RPCError(
                        .deadlineExceeded,
                        "deadline exceeded while connecting to \(self.target)",
                        cause: CallNotSent()
                    )
                )
            }
        }
        defer { timer?.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await waited.futureResult.get()
            } onCancel: {
                waited.fail(RPCError(.cancelled, "the call was cancelled", cause: CallNotSent()))
            }
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError(
                .unavailable,
                "cannot connect to \(self.target): \(describe(connectError: error))",
                cause: CallNotSent(underlying: error)
            )
        }
    }

    private func connect(fulfilling promise: EventLoopPromise<RPCConnection>, failures: Int) {
        RPCConnection.connect(
            host: self.configuration.host,
            port: self.configuration.port,
            group: self.group,
            maxFrameSize: self.configuration.maxFrameSize,
            connectTimeout: self.configuration.connectTimeout,
            connectionSetup: self.configuration.connectionSetup
        ).whenComplete { result in
            switch result {
            case .success(let connection):
                let kept = self.state.withLock { state -> Bool in
                    if case .closed = state { return false }
                    state = .ready(connection, failures: failures)
                    return true
                }
                guard kept else {
                    connection.channel.close(promise: nil)
                    promise.fail(RPCError(.unavailable, "client is closed", cause: CallNotSent()))
                    return
                }
                connection.channel.closeFuture.whenComplete { _ in
                    self.state.withLock { state in
                        guard case .ready(let current, let count) = state, current === connection else { return }
                        if current.hasAnswered {
                            state = .idle(failures: 0)
                        } else {
                            // Closed before answering anything: count it as a failed attempt.
                            let delay = self.configuration.backoff.delay(afterFailures: count + 1)
                            let error = RPCError(.unavailable, "\(self.target) closed the connection at once")
                            state = .backingOff(until: .now() + delay, failures: count + 1, error: error)
                        }
                    }
                }
                promise.succeed(connection)
            case .failure(let error):
                let attempts = failures + 1
                let delay = self.configuration.backoff.delay(afterFailures: attempts)
                self.state.withLock { state in
                    if case .closed = state { return }
                    state = .backingOff(until: .now() + delay, failures: attempts, error: error)
                }
                promise.fail(error)
            }
        }
    }

    /// The current connection when it takes calls, without waiting; nil when one must be
    /// made, or waited for, first.
    var readyConnection: RPCConnection? {
        self.state.withLock { state in
            if case .ready(let connection, _) = state, connection.isAcceptingCalls { return connection }
            return nil
        }
    }

    func close() async {
        let previous = self.state.withLock { state -> State in
            let previous = state
            state = .closed
            return previous
        }
        switch previous {
        case .ready(let connection, _):
            await connection.close()
        case .connecting(let future, _):
            if let connection = try? await future.get() { await connection.close() }
        default:
            break
        }
    }
}

/// A connect error in a few words: NIO's own description lists every address it tried.
func describe(connectError error: any Error) -> String {
    if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
        return "\(first.error)"
    }
    return "\(error)"
}
