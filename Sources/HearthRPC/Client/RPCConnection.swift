public import Foundation
import HearthCore
public import NIOCore
import NIOPosix

/// One client connection carrying many concurrent calls, matched by call_id.
public final class RPCConnection: Sendable {
    public let channel: any Channel
    private let handler: NIOLoopBound<ClientConnectionHandler>
    private let availability: ConnectionAvailability

    private init(
        channel: any Channel,
        handler: NIOLoopBound<ClientConnectionHandler>,
        availability: ConnectionAvailability
    ) {
        self.channel = channel
        self.handler = handler
        self.availability = availability
    }

    /// Opens a connection to `host:port`; `connectionSetup` runs first on the new channel
    /// (where TLS goes).
    /// - Throws: the connect error (refused, timed out).
    public static func connect(
        host: String,
        port: Int,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maxFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
        maxRequestFrameSize: Int? = nil,
        connectTimeout: TimeAmount = .seconds(5),
        connectionSetup: (@Sendable (any Channel) throws -> Void)? = nil
    ) -> EventLoopFuture<RPCConnection> {
        let availability = ConnectionAvailability()
        return ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try connectionSetup?(channel)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)))
                    try sync.addHandler(
                        ClientConnectionHandler(
                            availability: availability,
                            maxRequestFrameSize: maxRequestFrameSize ?? maxFrameSize
                        )
                    )
                }
            }
            .connect(host: host, port: port)
            .flatMapThrowing { channel in
                let handler = try channel.pipeline.syncOperations.handler(type: ClientConnectionHandler.self)
                return RPCConnection(
                    channel: channel,
                    handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
                    availability: availability
                )
            }
    }

    /// Whether the server has answered any call on this connection.
    var hasAnswered: Bool { self.availability.hasAnswered }

    /// Whether a call on this connection (not a health check) was answered OK: it passed the
    /// server's authentication.
    var hasAuthenticated: Bool { self.availability.hasAuthenticated }

    /// Whether `limit` calls or more are in flight here, or the server's last answer refused a
    /// call because this connection was full (read from any thread: a call started from
    /// another thread counts once its loop has sent it).
    func isFull(at limit: Int) -> Bool {
        self.availability.callsInFlight >= limit || self.availability.wasRefusedAsFull
    }

    /// Whether new calls may start here (false after GOAWAY or once closed).
    public var isAcceptingCalls: Bool { self.availability.isAcceptingCalls && self.channel.isActive }

    /// Sends one REQUEST and waits for its RESPONSE.
    ///
    /// - Parameters:
    ///   - timeout: sent as `timeout_ms`; the call fails locally with DEADLINE_EXCEEDED when it passes.
    /// - Returns: the response payload.
    /// - Throws: ``RPCError``: the server's status, DEADLINE_EXCEEDED, CANCELLED when the
    ///   calling task is cancelled (CANCEL is sent), UNAVAILABLE when the connection goes.
    public func call(method: String, payload: Data, metadata: [String: String] = [:], timeout: Duration? = nil)
        async throws -> Data
    {
        try await self.start(method: method, payload: payload, metadata: Metadata(metadata), timeout: timeout).value
    }

    /// Sends one REQUEST without waiting for its RESPONSE: for code on an event loop that
    /// must not start a task per call (the gateway forwards calls with it). ``call(method:payload:metadata:timeout:)``
    /// is this, awaited.
    public func start(method: String, payload: Data, metadata: Metadata, timeout: Duration?) -> StartedCall {
        var frame = WireFrame()
        frame.kind = .request
        frame.method = method
        frame.metadata = metadata.entries
        frame.payload = payload
        var localDeadline: TimeAmount?
        if let timeout {
            let nanos = max(timeout.nanoseconds, 1_000_000)
            localDeadline = .nanoseconds(nanos)
            frame.timeoutMs = UInt32(clamping: (nanos + 999_999) / 1_000_000)
        }
        let loop = self.channel.eventLoop
        let call = PendingCall(promise: loop.makePromise(), method: method)
        let handler = self.handler
        if loop.inEventLoop {
            handler.value.start(call, request: frame, timeout: localDeadline)
        } else {
            loop.execute { [frame, localDeadline] in handler.value.start(call, request: frame, timeout: localDeadline) }
        }
        return StartedCall(response: call.promise.futureResult) {
            if loop.inEventLoop {
                handler.value.cancel(call)
            } else {
                loop.execute { handler.value.cancel(call) }
            }
        }
    }

    /// Sends PING and waits for PONG, at most `timeout`.
    /// - Throws: ``RPCError`` DEADLINE_EXCEEDED without a PONG in time, UNAVAILABLE if the connection goes.
    public func ping(timeout: TimeAmount = .seconds(5)) async throws {
        let loop = self.channel.eventLoop
        let promise = loop.makePromise(of: Void.self)
        let handler = self.handler
        loop.execute { handler.value.ping(promise) }
        let timer = loop.scheduleTask(in: timeout) { promise.fail(RPCError(.deadlineExceeded, "no PONG in time")) }
        defer { timer.cancel() }
        try await promise.futureResult.get()
    }

    /// Closes the connection; calls in flight fail with UNAVAILABLE.
    public func close() async {
        try? await self.channel.close()
    }
}
