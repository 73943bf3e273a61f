import NIOCore
import NIOPosix
import Synchronization

/// A loopback listener that accepts connections and never answers on them: it reads what they
/// send (a backend whose process hangs with its sockets open, stopped or deadlocked), or, with
/// `closingConnections`, closes each one at once (a backend that accepts and drops).
public final class SilentListener: Sendable {
    public let port: Int
    private let channel: any Channel
    private let accepted = Accepted()

    private final class Accepted: Sendable {
        let channels = Mutex<[any Channel]>([])
    }

    public init(closingConnections: Bool = false) async throws {
        let accepted = self.accepted
        // No handlers on accepted connections: what they read ends at the pipeline's tail.
        self.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                if closingConnections { return child.close() }
                accepted.channels.withLock { $0.append(child) }
                return child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        self.port = self.channel.localAddress?.port ?? 0
    }

    /// Stops listening and closes every connection it holds (their peers see them end).
    public func close() async {
        try? await self.channel.close()
        for child in self.accepted.channels.withLock({ $0 }) {
            try? await child.close()
        }
    }
}
