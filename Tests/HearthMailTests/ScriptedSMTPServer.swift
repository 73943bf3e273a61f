import Foundation
import NIOCore
import NIOPosix

/// An SMTP server that says only what it is told: its greeting, then for each command line
/// the reply scripted for the command's first word ("500 unknown" for others), bytes as given.
/// For behaviour a real server would not show (replies injected by someone in between).
final class ScriptedSMTPServer: Sendable {
    let port: Int
    private let channel: any Channel

    init(greeting: String = "220 scripted\r\n", replies: [String: String]) async throws {
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Script(greeting: greeting, replies: replies))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        self.port = self.channel.localAddress?.port ?? 0
    }

    func close() async throws {
        try await self.channel.close()
    }

    private final class Script: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let greeting: String
        let replies: [String: String]
        private var pending = ByteBuffer()

        init(greeting: String, replies: [String: String]) {
            self.greeting = greeting
            self.replies = replies
        }

        func channelActive(context: ChannelHandlerContext) {
            self.say(self.greeting, context: context)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = Self.unwrapInboundIn(data)
            self.pending.writeBuffer(&bytes)
            while let end = self.pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                let length = self.pending.readableBytesView.distance(
                    from: self.pending.readableBytesView.startIndex,
                    to: end
                )
                let line = self.pending.readString(length: length + 1) ?? ""
                let command =
                    line.split(separator: " ").first.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
                    ?? ""
                self.say(self.replies[command.uppercased()] ?? "500 unknown\r\n", context: context)
            }
        }

        private func say(_ text: String, context: ChannelHandlerContext) {
            context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
        }
    }
}
