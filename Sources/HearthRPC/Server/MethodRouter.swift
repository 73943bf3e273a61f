import Logging

/// The metadata keys that carry trust between Hearth processes. Clients never set them: the
/// gateway removes every client-supplied `x-hearth-*` key before it adds its own.
public enum TrustedMetadata {
    /// Every key with this prefix is reserved for Hearth's own processes.
    public static let prefix = "x-hearth-"
    /// The verified user id the call acts for.
    public static let user = "x-hearth-user"
    /// The credential of the calling process (``Caller``), required by every service on every
    /// non-health call.
    public static let credential = "x-hearth-internal"
    /// On a RESPONSE: the server ran none of the call (it was draining when the call came, or
    /// the connection already carried all the calls it takes), so the caller may send it to
    /// another server or connection.
    public static let notRun = "x-hearth-not-run"
}

/// What serves one call.
enum Route {
    /// A method of the server's own, run in a task.
    case handler(RawHandler)
    /// A method the server has no handler for, sent on by its forwarder.
    case forwarder(any CallForwarder)
}

/// Which handler serves a method, and whether its caller may call it.
struct MethodRouter: Sendable {
    private let handlers: [String: RawHandler]
    /// Serves methods with no handler of their own (the gateway forwards them).
    private let forwarder: (any CallForwarder)?
    /// Methods anyone may call without a credential: health checks.
    private let publicMethods: Set<String>
    /// Who may call, each with its own credential; nil: anyone (the gateway's public server).
    private let callers: [Caller]?
    private let logger: Logger

    init(
        handlers: [String: RawHandler],
        forwarder: (any CallForwarder)?,
        publicMethods: Set<String>,
        callers: [Caller]?,
        logger: Logger
    ) {
        self.handlers = handlers
        self.forwarder = forwarder
        self.publicMethods = publicMethods
        self.callers = callers
        self.logger = logger
    }

    /// Whether anyone may call `method` without credentials (a health check): such a call
    /// proves nothing about who is calling.
    func isPublic(_ method: String) -> Bool { self.publicMethods.contains(method) }

    /// What serves `method` called with `metadata`, or the error to answer instead.
    func route(for method: String, metadata: Metadata) -> Result<Route, RPCError> {
        if let callers = self.callers, !self.publicMethods.contains(method) {
            guard let presented = metadata[TrustedMetadata.credential],
                let caller = Self.caller(presenting: presented, among: callers)
            else {
                return .failure(RPCError(.unauthenticated, "missing or invalid internal credential"))
            }
            guard caller.methods.allows(method) else {
                // A process calling what its link does not allow is misconfigured, or taken over.
                self.logger.warning(
                    "refused a method the caller's credential does not allow",
                    metadata: ["caller": "\(caller.name)", "method": "\(method)"]
                )
                return .failure(RPCError(.permissionDenied, "the \(caller.name) credential may not call \(method)"))
            }
        }
        if let handler = self.handlers[method] { return .success(.handler(handler)) }
        if let forwarder = self.forwarder { return .success(.forwarder(forwarder)) }
        return .failure(RPCError(.unimplemented, "unknown method \(method)"))
    }

    /// The caller whose credential is `presented`. Every credential is compared, each in time
    /// that depends only on the lengths: how long it takes tells nothing of which one matched,
    /// or how nearly.
    private static func caller(presenting presented: String, among callers: [Caller]) -> Caller? {
        var found: Caller?
        for caller in callers where constantTimeEqual(presented, caller.credential) {
            found = found ?? caller
        }
        return found
    }
}

/// Compares a string's UTF-8 with `b` in time that depends only on their lengths, without
/// copying the string's bytes (a native string's are contiguous).
func constantTimeEqual(_ a: String, _ b: [UInt8]) -> Bool {
    a.utf8.withContiguousStorageIfAvailable { constantTimeEqual($0, b) } ?? constantTimeEqual(Array(a.utf8), b)
}

/// Compares two byte strings in time that depends only on their lengths.
func constantTimeEqual(_ a: some RandomAccessCollection<UInt8>, _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}
