import ArgumentParser
import NIOCore
import NIOExtras
import NIOPosix

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// A bare SwiftNIO echo server: each length-prefixed frame (4-byte big-endian length, then the
/// bytes) comes back as it came. No protobuf, no RPC layer: the floor for any server on NIO.
@main
struct PeerNIOEcho: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peer-nio-echo",
        abstract: "A bare SwiftNIO length-prefixed echo server on 127.0.0.1; runs until SIGTERM or SIGINT."
    )

    /// The largest frame echoed; a longer one closes the connection.
    static let maxFrameBytes = 16 << 20

    @Option(help: "The TCP port; 0 picks a free one, printed as `port N` on the first line.")
    var port: Int

    func run() async throws {
        // SIGINT too: a shell script starting this in the background leaves SIGINT ignored.
        for signalNumber in [SIGINT, SIGTERM] { signal(signalNumber) { _ in _exit(0) } }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        // The decoder takes the length off before waiting for the body, so an unfinished
                        // frame of up to maxFrameBytes never buffers more than that; a longer one closes
                        // the connection once more than that of it is buffered.
                        ByteToMessageHandler(
                            LengthFieldBasedFrameDecoder(lengthFieldBitLength: .fourBytes),
                            maximumBufferSize: Self.maxFrameBytes
                        ),
                        LengthFieldPrepender(lengthFieldBitLength: .fourBytes),
                        FrameEchoHandler()
                    )
                }
            }
        let listener = try await bootstrap.bind(host: "127.0.0.1", port: self.port).get()
        print("port \(listener.localAddress?.port ?? self.port)")
        fflush(nil)  // all streams (`stdout` is a global Swift 6 rejects): the harness waits for this line
        try await listener.closeFuture.get()
    }
}
