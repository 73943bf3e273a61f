import Foundation
import NIOCore
import NIOPosix

/// An SMTP server that says only what it is told: its greeting, then for each command line
/// the reply scripted for the command's first word ("500 unknown" for others), bytes as given;
/// after a 354 reply, the content up to its dot is read and answered "250 queued". For
/// behaviour a real server would not show (replies injected by someone in between), and for
/// checking how a client sends its commands:
/// - `holding`: the replies to these commands are held until another command comes, then sent
///   together (a client that waits for each reply before the next command waits for ever);
/// - `oneAtATime`: a command followed by another before its reply was sent (pipelined) is
///   answered "503 pipelining not offered", and so is everything read with it;
/// - `closingAfter`: after replying to one of these commands, it closes the connection.
final class ScriptedSMTPServer: Sendable {
    let port: Int
    private let channel: any Channel

    init(
        greeting: String = "220 scripted\r\n",
        replies: [String: String],
        holding: Set<String> = [],
        oneAtATime: Bool = false,
        closingAfter: Set<String> = []
    ) async throws {
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        Script(
                            greeting: greeting,
                            replies: replies,
                            holding: holding,
                            oneAtATime: oneAtATime,
                            closingAfter: closingAfter
                        )
                    )
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
        let holding: Set<String>
        let oneAtATime: Bool
        let closingAfter: Set<String>
        private var pending = ByteBuffer()
        private var held = ""
        private var inContent = false

        init(
            greeting: String,
            replies: [String: String],
            holding: Set<String>,
            oneAtATime: Bool,
            closingAfter: Set<String>
        ) {
            self.greeting = greeting
            self.replies = replies
            self.holding = holding
            self.oneAtATime = oneAtATime
            self.closingAfter = closingAfter
        }

        func channelActive(context: ChannelHandlerContext) {
            self.say(self.greeting, context: context)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = Self.unwrapInboundIn(data)
            self.pending.writeBuffer(&bytes)
            var lines: [String] = []
            while let end = self.pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                let length = self.pending.readableBytesView.distance(
                    from: self.pending.readableBytesView.startIndex,
                    to: end
                )
                lines.append((self.pending.readString(length: length + 1) ?? "").trimmingCharacters(in: .newlines))
            }
            for line in lines {
                if self.inContent {
                    if line == "." {
                        self.inContent = false
                        self.say("250 queued\r\n", context: context)
                    }
                    continue
                }
                if self.oneAtATime && lines.count > 1 {
                    self.say("503 pipelining not offered\r\n", context: context)
                    continue
                }
                let command = line.split(separator: " ").first.map { String($0).uppercased() } ?? ""
                let reply = self.replies[command] ?? "500 unknown\r\n"
                if reply.hasPrefix("354") { self.inContent = true }
                if self.holding.contains(command) {
                    self.held += reply
                } else {
                    self.say(self.held + reply, context: context)
                    self.held = ""
                }
                if self.closingAfter.contains(command) {
                    context.close(promise: nil)
                    return
                }
            }
        }

        private func say(_ text: String, context: ChannelHandlerContext) {
            context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
        }
    }
}
