import NIOCore
import NIOPosix

/// A loopback listener that accepts connections and reads what they send, but never answers:
/// a backend whose process hangs with its sockets open (stopped, or deadlocked).
public final class SilentListener: Sendable {
    public let port: Int
    private let channel: any Channel

    public init() async throws {
        // No handlers on accepted connections: what they read ends at the pipeline's tail.
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        self.port = self.channel.localAddress?.port ?? 0
    }

    public func close() async {
        try? await self.channel.close()
    }
}
