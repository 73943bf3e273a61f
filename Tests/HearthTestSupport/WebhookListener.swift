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

    /// An answer held until enough requests are in flight together.
    fileprivate struct HeldAnswer: Sendable {
        var status: Int
        var answer: @Sendable (Int) -> Void
    }

    private struct State {
        var received: [Received] = []
        var statuses: [Int]
        var held: [HeldAnswer] = []
        /// Answers wait until this many requests are waiting together (0: answered at once).
        var answerTogether: Int
    }

    private let state: Mutex<State>
    private let channel: any Channel
    /// Bytes of body in every answer.
    fileprivate let responseBodySize: Int
    /// Where a 3xx answer points (its `Location`).
    fileprivate let redirectTo: String?

    public var port: Int { self.channel.localAddress!.port! }
    public var received: [Received] { self.state.withLock { $0.received } }

    /// - Parameters:
    ///   - responseBodySize: bytes of body in every answer.
    ///   - answerTogether: hold every answer until this many requests wait together, then
    ///     answer them all; a sender that sends one at a time is never answered (``Int/max``:
    ///     held until ``releaseHeld()``).
    ///   - redirectTo: the `Location` of every 3xx answer.
    public init(
        statuses: [Int] = [],
        responseBodySize: Int = 0,
        answerTogether: Int = 0,
        redirectTo: String? = nil
    ) async throws {
        self.state = Mutex(State(statuses: statuses, answerTogether: answerTogether))
        self.responseBodySize = responseBodySize
        self.redirectTo = redirectTo
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

    /// Records one request, and answers it (`answer` with its status) now or once enough wait.
    fileprivate func record(_ request: Received, answer: @escaping @Sendable (Int) -> Void) {
        let ready = self.state.withLock { state -> [HeldAnswer] in
            state.received.append(request)
            let status = state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
            state.held.append(HeldAnswer(status: status, answer: answer))
            guard state.held.count >= state.answerTogether else { return [] }
            defer { state.held.removeAll() }
            return state.held
        }
        for held in ready { held.answer(held.status) }
    }

    /// Answers every request held, and every later one at once.
    public func releaseHeld() {
        let held = self.state.withLock { state -> [HeldAnswer] in
            state.answerTogether = 0
            defer { state.held.removeAll() }
            return state.held
        }
        for answer in held { answer.answer(answer.status) }
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
            let bodySize = listener.responseBodySize
            let location = listener.redirectTo
            let loop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: loop)
            listener.record(.init(method: "\(head.method)", path: head.uri, headers: headers, body: self.body)) {
                status in
                loop.execute {
                    Self.answer(
                        bound.value,
                        status: status,
                        version: head.version,
                        bodySize: bodySize,
                        location: location
                    )
                }
            }
        }
    }

    private static func answer(
        _ context: ChannelHandlerContext,
        status: Int,
        version: HTTPVersion,
        bodySize: Int,
        location: String?
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "content-length", value: "\(bodySize)")
        if let location, (300..<400).contains(status) { headers.add(name: "location", value: location) }
        let response = HTTPResponseHead(
            version: version,
            status: HTTPResponseStatus(statusCode: status),
            headers: headers
        )
        context.write(Self.wrapOutboundOut(.head(response)), promise: nil)
        if bodySize > 0 {
            let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: bodySize)
            context.write(Self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil)), promise: nil)
    }
}
