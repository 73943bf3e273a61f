/// A connection's frame limit until a call on it has passed authentication: a peer that has not
/// proved who it is may not make the server buffer large frames (the gateway's photos are 11
/// MiB; its connections take at most 64 KiB before that). Shared by the connection's frame
/// decoder, which applies it, and its handler, which lifts it; confined to its event loop.
public final class FrameLimitUntilAuthenticated {
    /// The largest frame body taken before the limit is lifted.
    public let limit: Int
    private(set) var lifted = false

    public init(limit: Int) {
        self.limit = limit
    }

    /// A call on the connection passed authentication: frames up to the server's limit from now on.
    func lift() {
        self.lifted = true
    }
}

/// A peer declared a frame larger than its connection takes before a call on it has passed
/// authentication.
public struct FrameTooLargeBeforeAuthenticationError: Error, CustomStringConvertible, Equatable {
    public let declaredSize: Int
    public let limit: Int

    public var description: String {
        "frame of \(self.declaredSize) bytes before any call on this connection passed authentication: "
            + "at most \(self.limit) bytes until one has (call hearth.gateway.v1.Gateway/Authenticate first)"
    }
}
