import NIOCore
import NIOPosix

/// A loopback listener that accepts connections and never answers on them: it reads what they
/// send (a backend whose process hangs with its sockets open, stopped or deadlocked), or, with
/// `closingConnections`, closes each one at once (a backend that accepts and drops).
public final class SilentListener: Sendable {
    public let port: Int
    private let channel: any Channel

    public init(closingConnections: Bool = false) async throws {
        // No handlers on accepted connections: what they read ends at the pipeline's tail.
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                closingConnections ? child.close() : child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        self.port = self.channel.localAddress?.port ?? 0
    }

    public func close() async {
        try? await self.channel.close()
    }
}
