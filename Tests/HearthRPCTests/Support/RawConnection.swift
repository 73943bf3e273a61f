import Foundation
import HearthRPC
import NIOCore
import NIOPosix
import SwiftProtobuf
import Synchronization

/// A bare client for protocol tests: writes frames or raw bytes exactly as told and records
/// every frame the server sends back, with no runtime logic in between.
final class RawConnection: Sendable {
    let channel: any Channel
    private let received: Collector

    private init(channel: any Channel, received: Collector) {
        self.channel = channel
        self.received = received
    }

    /// Connects to `port` on 127.0.0.1, from `source` (another loopback address: 127.0.0.2,
    /// ...) when given. `keepsOpen`: the server's FIN does not close this end (a peer that
    /// never closes); otherwise it does, as NIO's clients do.
    static func connect(port: Int, from source: String? = nil, keepsOpen: Bool = false) async throws -> RawConnection {
        let collector = Collector()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: keepsOpen)
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 64 << 20))
                    )
                    try channel.pipeline.syncOperations.addHandler(CollectingHandler(collector: collector))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: collector)
    }

    /// Writes all `frames` in one write, each behind its length prefix.
    func send(_ frames: WireFrame...) async throws {
        var bytes: [UInt8] = []
        for frame in frames {
            let body: [UInt8] = try frame.serializedBytes()
            bytes += Self.prefix(body.count) + body
        }
        try await self.sendBytes(bytes)
    }

    func sendBytes(_ bytes: [UInt8]) async throws {
        try await self.channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    static func prefix(_ length: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(length).bigEndian, Array.init)
    }

    /// Every frame received so far.
    var frames: [WireFrame] { self.received.frames.withLock { $0 } }

    var isClosed: Bool { self.received.closed.load(ordering: .relaxed) }

    /// What the test saw, for a failure's message: the frames, whether and why it closed.
    var seen: String {
        let frames = self.frames.map { "\($0.kind) \($0.callID) \($0.status.message)" }
        let error = self.received.error.withLock { $0 }
        return "received \(frames), closed: \(self.isClosed)\(error.map { " after error \($0)" } ?? "")"
    }

    /// Waits (bounded) for a frame matching `predicate`; nil if it did not come in time.
    func waitFor(within limit: Duration = .seconds(30), _ predicate: (WireFrame) -> Bool) async throws -> WireFrame? {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while clock.now < end {
            if let frame = self.frames.first(where: predicate) { return frame }
            try await Task.sleep(for: .milliseconds(2))
        }
        // Once more at the end: a task pool busy with other tests may have woken this one only
        // after the limit, with the frame long there.
        return self.frames.first(where: predicate)
    }

    /// Waits (bounded) until the server closed the connection.
    func waitUntilClosed(within limit: Duration = .seconds(30)) async throws -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while clock.now < end {
            if self.isClosed { return true }
            try await Task.sleep(for: .milliseconds(2))
        }
        return self.isClosed
    }

    func close() async {
        try? await self.channel.close()
    }
}

private final class Collector: Sendable {
    let frames = Mutex<[WireFrame]>([])
    let closed = Atomic<Bool>(false)
    /// What closed the connection from this side, if anything did: for a failing test's message.
    let error = Mutex<String?>(nil)
}

private final class CollectingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let collector: Collector

    init(collector: Collector) {
        self.collector = collector
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        if let frame = try? WireFrame(serializedBytes: Array(buffer.readableBytesView)) {
            self.collector.frames.withLock { $0.append(frame) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.collector.closed.store(true, ordering: .relaxed)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.collector.error.withLock { $0 = $0 ?? "\(error)" }
        context.close(promise: nil)
    }
}

extension WireFrame {
    static func request(
        _ callID: UInt64,
        _ method: String,
        _ message: some SwiftProtobuf.Message,
        timeoutMs: UInt32 = 0
    ) throws -> WireFrame {
        var frame = WireFrame()
        frame.callID = callID
        frame.kind = .request
        frame.method = method
        frame.payload = try message.serializedData()
        frame.timeoutMs = timeoutMs
        return frame
    }

    static func control(_ kind: WireFrame.Kind, _ callID: UInt64 = 0) -> WireFrame {
        var frame = WireFrame()
        frame.callID = callID
        frame.kind = kind
        return frame
    }

    func isResponse(to callID: UInt64) -> Bool {
        self.kind == .response && self.callID == callID
    }
}
