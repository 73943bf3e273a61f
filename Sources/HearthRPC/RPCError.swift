import HearthCore

/// One field that failed validation: which, and why. An `Error`, so that validation rules
/// can return `Result<Value, FieldViolation>`.
public struct FieldViolation: Error, Sendable, Hashable {
    public var field: String
    public var description: String

    public init(field: String, description: String) {
        self.field = field
        self.description = description
    }
}

/// The one error type of the runtime: a status code, a message for the caller, and
/// optionally field violations and a retry hint. Handlers throw it (or a domain error that
/// adopts ``RPCErrorConvertible``); callers catch it from every failed call.
public struct RPCError: Error, Sendable, CustomStringConvertible {
    public var code: StatusCode
    public var message: String
    public var violations: [FieldViolation]
    /// With RESOURCE_EXHAUSTED or UNAVAILABLE: when the caller may try again.
    public var retryAfter: Duration?
    /// What caused it, for logs; never sent to the caller.
    public var cause: (any Error)?

    public init(
        _ code: StatusCode,
        _ message: String,
        violations: [FieldViolation] = [],
        retryAfter: Duration? = nil,
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.violations = violations
        self.retryAfter = retryAfter
        self.cause = cause
    }

    /// An INVALID_ARGUMENT error listing every violation.
    public static func invalidArgument(_ violations: [FieldViolation]) -> RPCError {
        let fields = violations.map(\.field).joined(separator: ", ")
        return RPCError(.invalidArgument, "invalid \(fields)", violations: violations)
    }

    /// `text` cut to at most `limit` bytes of UTF-8, at a scalar's edge, marked with "...".
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var kept = String.UnicodeScalarView()
        var bytes = 3  // the "..." that ends it
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= limit else { break }
            kept.append(scalar)
        }
        return String(kept) + "..."
    }

    public var description: String {
        var text = "\(self.code.name): \(self.message)"
        for violation in self.violations {
            text += "\n  \(violation.field): \(violation.description)"
        }
        return text
    }

    /// What one error may put on the wire. A request with 100,000 invalid list items, or a
    /// zone name of a megabyte quoted back, would otherwise make an answer larger than the
    /// frames a caller takes, and a gateway's connection to the service that every user shares
    /// would close over it. At most 4 KiB + 100 x (1 KiB + 1 KiB), about 204 KiB.
    static let maxWireMessageBytes = 4096
    static let maxWireViolations = 100
    static let maxWireDescriptionBytes = 1024

    /// The status sent on the wire, cut to the limits above.
    public var wireStatus: WireStatus {
        var status = WireStatus()
        status.code = self.code
        status.message = Self.clipped(self.message, to: Self.maxWireMessageBytes)
        status.violations = self.violations.prefix(Self.maxWireViolations).map {
            var violation = Hearth_Rpc_V1_FieldViolation()
            violation.field = Self.clipped($0.field, to: Self.maxWireDescriptionBytes)
            violation.description_p = Self.clipped($0.description, to: Self.maxWireDescriptionBytes)
            return violation
        }
        if self.violations.count > Self.maxWireViolations {
            status.message += " (\(self.violations.count - Self.maxWireViolations) more field violations left out)"
        }
        if let retryAfter {
            status.retryAfterMs = UInt32(clamping: max(retryAfter.nanoseconds / 1_000_000, 1))
        }
        return status
    }

    /// The error a non-OK status on the wire stands for.
    public init(status: WireStatus) {
        self.init(
            status.code,
            status.message,
            violations: status.violations.map { FieldViolation(field: $0.field, description: $0.description_p) },
            retryAfter: status.retryAfterMs > 0 ? .milliseconds(Int64(status.retryAfterMs)) : nil
        )
    }
}

/// A domain error that knows which status it answers with.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

/// A handler may throw a single violation (e.g. `try rule(value).get()`): INVALID_ARGUMENT.
extension FieldViolation: RPCErrorConvertible {
    public var rpcError: RPCError { .invalidArgument([self]) }
}

extension RPCError {
    /// NOT_FOUND naming what was asked for; also the answer for what the caller may not see.
    /// An empty id was never asked for: INVALID_ARGUMENT on the request's `KIND_id` field
    /// (`check-in` names `check_in_id`).
    public static func notFound(_ kind: String, _ id: String) -> RPCError {
        guard !id.isEmpty else {
            let field = String(kind.map { $0 == "-" ? "_" : $0 }) + "_id"
            return .invalidArgument([FieldViolation(field: field, description: "is required")])
        }
        return RPCError(.notFound, "\(kind) \(id) not found")
    }

    /// What any error thrown by a handler answers with. A storage failure that may pass (a full
    /// disk) is UNAVAILABLE; other errors that are not ``RPCError`` or ``RPCErrorConvertible``
    /// become INTERNAL with a generic message. The detail stays in the log.
    public init(answering error: any Error) {
        switch error {
        case let error as RPCError:
            self = error
        case let error as any RPCErrorConvertible:
            self = error.rpcError
        case is CancellationError:
            self = RPCError(.cancelled, "the call was cancelled")
        case is CallDeadlinePassed:
            self = RPCError(.deadlineExceeded, "deadline exceeded")
        case let error as any StorageFailure where error.mayPass:
            self = RPCError(.unavailable, "storage is unavailable; try again later", cause: error)
        default:
            self = RPCError(.internal, "internal error", cause: error)
        }
    }
}
