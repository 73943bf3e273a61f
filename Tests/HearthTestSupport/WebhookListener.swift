public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP server on a free loopback port that records every request and answers with
/// the statuses it is given, in order (then 200).
public final class WebhookListener: Sendable {
    public struct Received: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]
        public var body: Data
    }

    private let state: Mutex<(received: [Received], statuses: [Int])>
    private let channel: any Channel

    public var port: Int { self.channel.localAddress!.port! }
    public var received: [Received] { self.state.withLock { $0.received } }

    public init(statuses: [Int] = []) async throws {
        let state = Mutex<(received: [Received], statuses: [Int])>(([], statuses))
        self.state = state
        let box = StateBox(listener: nil)
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(box: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        box.listener.withLock { $0 = self }
    }

    /// Records one request; returns the status to answer.
    fileprivate func record(_ request: Received) -> Int {
        self.state.withLock { state in
            state.received.append(request)
            return state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
        }
    }

    public func close() async {
        try? await self.channel.close()
    }
}

private final class StateBox: Sendable {
    let listener: Mutex<WebhookListener?>

    init(listener: WebhookListener?) {
        self.listener = Mutex(listener)
    }
}

private final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: StateBox
    private var head: HTTPRequestHead?
    private var body = Data()

    init(box: StateBox) {
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.body = Data()
        case .body(let buffer):
            self.body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head = self.head, let listener = self.box.listener.withLock({ $0 }) else { return }
            let headers = Dictionary(
                head.headers.map { ($0.name.lowercased(), $0.value) },
                uniquingKeysWith: { a, _ in a }
            )
            let status = listener.record(
                .init(method: "\(head.method)", path: head.uri, headers: headers, body: self.body)
            )
            var responseHeaders = HTTPHeaders()
            responseHeaders.add(name: "content-length", value: "0")
            let response = HTTPResponseHead(
                version: head.version,
                status: HTTPResponseStatus(statusCode: status),
                headers: responseHeaders
            )
            context.write(Self.wrapOutboundOut(.head(response)), promise: nil)
            context.writeAndFlush(Self.wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
