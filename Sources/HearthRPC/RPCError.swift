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

    public var description: String {
        var text = "\(self.code.name): \(self.message)"
        for violation in self.violations {
            text += "\n  \(violation.field): \(violation.description)"
        }
        return text
    }

    /// The status sent on the wire.
    public var wireStatus: WireStatus {
        var status = WireStatus()
        status.code = self.code
        status.message = self.message
        status.violations = self.violations.map {
            var violation = Hearth_Rpc_V1_FieldViolation()
            violation.field = $0.field
            violation.description_p = $0.description
            return violation
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
    public static func notFound(_ kind: String, _ id: String) -> RPCError {
        RPCError(.notFound, "\(kind) \(id) not found")
    }

    /// What any error thrown by a handler answers with. Errors that are not ``RPCError`` or
    /// ``RPCErrorConvertible`` become INTERNAL with a generic message; the detail stays in the log.
    public init(answering error: any Error) {
        switch error {
        case let error as RPCError:
            self = error
        case let error as any RPCErrorConvertible:
            self = error.rpcError
        case is CancellationError:
            self = RPCError(.cancelled, "the call was cancelled")
        default:
            self = RPCError(.internal, "internal error", cause: error)
        }
    }
}
