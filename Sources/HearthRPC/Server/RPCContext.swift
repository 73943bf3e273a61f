public import Logging
public import NIOCore

/// What a handler knows about the call it serves.
public struct RPCContext: Sendable {
    /// `package.Service/Method`.
    public let method: String
    /// The request's metadata, keys in lower case.
    public let metadata: Metadata
    /// When the caller stops waiting; nil when it set no deadline.
    public let deadline: NIODeadline?
    /// The remote address of the connection the call came on.
    public let peer: String
    /// The user the call acts for, as the gateway verified it (`x-hearth-user`); nil when the
    /// caller named none. Trust it only on a server that requires its callers' credentials.
    public var userID: String? { self.metadata[TrustedMetadata.user] }
    /// The call's request id: `x-request-id` when the caller sent one that is
    /// ``isUsableRequestID(_:)``, else made up by the server. It goes into log lines and on to
    /// the services a call reaches, so a client cannot forge lines with it or make them huge.
    public var requestID: String {
        if let sent = self.metadata["x-request-id"], Self.isUsableRequestID(sent) { return sent }
        return "\(self.connectionTag)-\(self.callID)"
    }

    /// 1 to 128 bytes of printable ASCII, no spaces.
    public static func isUsableRequestID(_ id: String) -> Bool {
        let bytes = id.utf8
        return !bytes.isEmpty && bytes.count <= 128 && bytes.allSatisfy { (0x21...0x7E).contains($0) }
    }
    /// A logger carrying the request id (built when asked for: most calls never log).
    public var logger: Logger {
        var logger = self.baseLogger
        logger[metadataKey: "request-id"] = "\(self.requestID)"
        return logger
    }

    /// The level the logger lets through: check it before building costly log lines.
    public var logLevel: Logger.Level { self.baseLogger.logLevel }

    private let baseLogger: Logger
    private let connectionTag: String
    private let callID: UInt64

    /// - Parameters:
    ///   - connectionTag: unique per connection; with the call id, it names calls that came
    ///     without an `x-request-id`.
    public init(
        method: String,
        metadata: Metadata,
        deadline: NIODeadline?,
        peer: String,
        callID: UInt64,
        connectionTag: String,
        logger: Logger
    ) {
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.callID = callID
        self.connectionTag = connectionTag
        self.baseLogger = logger
    }

    /// Whether the deadline has passed.
    public var isPastDeadline: Bool {
        guard let deadline else { return false }
        return deadline <= .now()
    }
}

extension RPCContext {
    /// The verified user the call acts for.
    /// - Throws: UNAUTHENTICATED when the call names no user (it did not come through the gateway).
    public func verifiedUser() throws -> String {
        guard let user = self.userID, !user.isEmpty else {
            throw RPCError(.unauthenticated, "no user: call through the gateway")
        }
        return user
    }
}
