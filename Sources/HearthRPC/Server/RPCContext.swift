public import Logging
public import NIOCore

/// What a handler knows about the call it serves.
public struct RPCContext: Sendable {
    /// `package.Service/Method`.
    public let method: String
    /// The request's metadata, keys in lower case.
    public let metadata: [String: String]
    /// When the caller stops waiting; nil when it set no deadline.
    public let deadline: NIODeadline?
    /// The remote address of the connection the call came on.
    public let peer: String
    /// The call's request id (`x-request-id`, or one made up by the server).
    public let requestID: String
    /// A logger carrying the request id and method.
    public var logger: Logger

    public init(
        method: String,
        metadata: [String: String],
        deadline: NIODeadline?,
        peer: String,
        requestID: String,
        logger: Logger
    ) {
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.requestID = requestID
        self.logger = logger
    }

    /// Whether the deadline has passed.
    public var isPastDeadline: Bool {
        guard let deadline else { return false }
        return deadline <= .now()
    }
}
