public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle

/// Serves `GET /metrics` over HTTP/1.1 in Prometheus' text format, for scrapers. Anything
/// else is 404 (405 for other methods). One response per connection, then close.
public final class MetricsServer: Service, Sendable {
    private let host: String
    private let port: Int
    private let render: @Sendable () -> String
    private let logger: Logger
    private let bound: EventLoopPromise<SocketAddress>

    /// - Parameter render: produces the page on every scrape (see ``prometheusText(_:)``).
    public init(host: String, port: Int, logger: Logger, render: @escaping @Sendable () -> String) {
        self.host = host
        self.port = port
        self.render = render
        self.logger = logger
        self.bound = MultiThreadedEventLoopGroup.singleton.next().makePromise()
    }

    deinit {
        self.bound.fail(CancellationError())
    }

    /// The address it listens on, once bound.
    public var localAddress: SocketAddress {
        get async throws { try await self.bound.futureResult.get() }
    }

    public func run() async throws {
        let render = self.render
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(render: render))
                    }
                }
                .bind(host: self.host, port: self.port).get()
        } catch {
            let failed = ListenFailed(what: "/metrics", host: self.host, port: self.port, reason: error)
            self.bound.fail(failed)
            throw failed
        }
        self.bound.succeed(channel.localAddress!)
        self.logger.info("metrics listening", metadata: ["address": "\(channel.localAddress!)"])
        // Metrics go last and stop first: nothing to drain.
        try? await gracefulShutdown()
        try await channel.close()
    }
}

private final class MetricsHTTPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let render: @Sendable () -> String

    init(render: @escaping @Sendable () -> String) {
        self.render = render
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let request) = Self.unwrapInboundIn(data) else { return }
        let (status, body): (HTTPResponseStatus, String) =
            switch (request.method, request.uri.split(separator: "?").first ?? "") {
            case (.GET, "/metrics"): (.ok, self.render())
            case (.GET, _): (.notFound, "not found: try /metrics\n")
            default: (.methodNotAllowed, "only GET\n")
            }
        var headers = HTTPHeaders()
        headers.add(
            name: "content-type",
            value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain"
        )
        headers.add(name: "content-length", value: "\(body.utf8.count)")
        headers.add(name: "connection", value: "close")
        context.write(
            Self.wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
            promise: nil
        )
        context.write(Self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
