public import HearthRPC
import NIOCore
import NIOPosix
import SwiftProtobuf

/// A bare server for client tests: answers each REQUEST with the frames `script` makes of it,
/// exactly as made, with no runtime logic in between.
public final class ScriptedServer: Sendable {
    let channel: any Channel
    public var port: Int { self.channel.localAddress!.port! }

    public init(script: @escaping @Sendable (WireFrame) -> [WireFrame]) async throws {
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 64 << 20))
                    )
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    public func close() async {
        try? await self.channel.close()
    }
}

private final class ScriptHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let script: @Sendable (WireFrame) -> [WireFrame]

    init(script: @escaping @Sendable (WireFrame) -> [WireFrame]) {
        self.script = script
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        guard let frame = try? WireFrame(serializedBytes: Array(buffer.readableBytesView)), frame.kind == .request
        else { return }
        for answer in self.script(frame) {
            guard let body: [UInt8] = try? answer.serializedBytes() else { continue }
            var framed = ByteBuffer()
            framed.writeInteger(UInt32(body.count))
            framed.writeBytes(body)
            context.write(Self.wrapOutboundOut(framed), promise: nil)
        }
        context.flush()
    }
}
