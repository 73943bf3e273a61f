public import NIOCore

/// Where a server listens, and the limits that keep one client from hurting the others.
public struct ServerConfiguration: Sendable {
    /// The frame limit unless a process needs more (DESIGN.md: 4 MiB); clients use it too.
    public static let defaultMaxFrameSize = 4 * 1024 * 1024
    /// Calls in flight on one connection unless configured otherwise; clients that share one
    /// connection among many callers (the gateway) open another rather than pass it.
    public static let defaultMaxConcurrentCallsPerConnection = 1024
    /// How long health answers NOT_SERVING after a call failed on a store at fault, unless
    /// configured otherwise.
    public static let defaultStorageFaultHold = TimeAmount.seconds(30)

    public var host: String
    /// 0 picks a free port; ``RPCServer/localAddress`` reports the real one.
    public var port: Int
    /// The largest frame accepted; a larger one gets GOAWAY and the connection closes.
    public var maxFrameSize: Int
    /// Bytes of frames still arriving, over all connections; a connection whose frame would
    /// pass it gets GOAWAY (RESOURCE_EXHAUSTED) and is closed.
    public var maxPartialFrameBytes: Int
    /// The most of it one peer address may hold (counted as ``maxConnectionsPerAddress``
    /// counts); nil: no share. For a public listener (the gateway): behind it, every frame comes
    /// from the gateway's address.
    public var maxPartialFrameBytesPerAddress: Int?
    /// How fast one peer address may open connections (counted as ``maxConnectionsPerAddress``
    /// counts); one faster gets GOAWAY (RESOURCE_EXHAUSTED, with when to retry) and is closed.
    /// Nil: no limit (the services, whose connections all come from the gateway).
    public var acceptRatePerAddress: AcceptRate?
    /// How fast a frame must arrive once begun; one that falls behind while more than half of
    /// `maxPartialFrameBytes` is held, or twice behind at any time, gets GOAWAY
    /// (DEADLINE_EXCEEDED) and the connection closes.
    public var framePace: FramePace
    /// Calls in flight on one connection; one more is answered RESOURCE_EXHAUSTED.
    public var maxConcurrentCallsPerConnection: Int
    /// Open connections; one more gets GOAWAY and is closed.
    public var maxConnections: Int
    /// Open connections from one IP address; one more gets GOAWAY (RESOURCE_EXHAUSTED) and is
    /// closed, so that one host cannot take every slot. Nil: no such cap (the services, which
    /// only the gateway and their peers reach).
    public var maxConnectionsPerAddress: Int?
    /// A connection that has not completed an authenticated call this long after it opened gets
    /// GOAWAY (UNAUTHENTICATED) and is closed; health checks do not count. Nil: no such window
    /// (the services, whose callers authenticate every call with their link's credential).
    public var authenticationWindow: TimeAmount?
    /// The largest frame a connection takes until a call on it has passed authentication (health
    /// checks do not count); a larger one gets GOAWAY (RESOURCE_EXHAUSTED) and the connection
    /// closes. Nil: `maxFrameSize` from the start (the services).
    public var maxFrameSizeBeforeAuthentication: Int?
    /// A connection with no traffic and no call in flight this long gets GOAWAY and is closed.
    public var idleTimeout: TimeAmount
    /// After a graceful shutdown begins, how long in-flight calls may still run.
    public var drainTimeout: TimeAmount
    /// How long a draining connection waits for the PONG to the PING it sent behind its GOAWAY
    /// (requests that crossed the GOAWAY come before it) from a peer that does not answer.
    public var drainPongWait: TimeAmount = .seconds(1)
    /// Runs first on every accepted connection, before the frame decoder: where TLS goes
    /// (the runtime itself knows nothing of it).
    public var connectionSetup: (@Sendable (any Channel) throws -> Void)?
    /// How long health checks answer NOT_SERVING after a call failed because its store is at
    /// fault (a full disk, an I/O error): each such failure starts it again.
    public var storageFaultHold: TimeAmount = ServerConfiguration.defaultStorageFaultHold
    /// When set, every call except health checks must carry one of these callers' credentials
    /// in `x-hearth-internal` (else UNAUTHENTICATED), and that caller must be allowed the method
    /// (else PERMISSION_DENIED, logged). Services set it; the gateway's client-facing server
    /// does not.
    public var callers: [Caller]?

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        maxFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
        maxPartialFrameBytes: Int = 512 * 1024 * 1024,
        framePace: FramePace = .default,
        maxConcurrentCallsPerConnection: Int = ServerConfiguration.defaultMaxConcurrentCallsPerConnection,
        maxConnections: Int = 10_000,
        idleTimeout: TimeAmount = .minutes(5),
        drainTimeout: TimeAmount = .seconds(10),
        callers: [Caller]? = nil,
        connectionSetup: (@Sendable (any Channel) throws -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.maxFrameSize = maxFrameSize
        self.maxPartialFrameBytes = maxPartialFrameBytes
        self.framePace = framePace
        self.maxConcurrentCallsPerConnection = maxConcurrentCallsPerConnection
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.drainTimeout = drainTimeout
        self.callers = callers
        self.connectionSetup = connectionSetup
    }
}
