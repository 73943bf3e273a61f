public import Foundation
public import Logging
import NIOCore

/// Logs one structured line per served call (method, code, duration, request id) and records
/// it in ``MethodMetrics``. Lines are at `.info`: run with `--log-level info` to see them.
public struct ServerObservabilityInterceptor: ServerInterceptor {
    public let metrics: MethodMetrics
    /// False where another layer writes the access log (the gateway logs with the user id).
    public let logsCalls: Bool

    public init(metrics: MethodMetrics, logsCalls: Bool = true) {
        self.metrics = metrics
        self.logsCalls = logsCalls
    }

    public func intercept(_ payload: Data, context: RPCContext, next: RawHandler) async throws -> Data {
        let start = NIODeadline.now()
        var code = StatusCode.ok
        defer {
            let micros = UInt64((NIODeadline.now() - start).nanoseconds / 1000)
            self.metrics.record(method: context.method, code: code, micros: micros)
            // The request-id logger is built only when the line will be written.
            if self.logsCalls, context.logLevel <= .info {
                context.logger.info(
                    "call",
                    metadata: [
                        "method": "\(context.method)",
                        "code": "\(code.name)",
                        "duration_us": "\(micros)",
                        "user": "\(context.userID ?? "-")",
                    ]
                )
            }
        }
        do {
            return try await next(payload, context)
        } catch {
            code = RPCError(answering: error).code
            // A handler stopped by its deadline sees cancellation; the caller saw DEADLINE_EXCEEDED.
            if code == .cancelled, context.isPastDeadline { code = .deadlineExceeded }
            throw error
        }
    }
}

/// The client's counterpart: per-method counts and latencies, and a debug log line per call.
public struct ClientObservabilityInterceptor: ClientInterceptor {
    public let metrics: MethodMetrics
    public let logger: Logger

    public init(metrics: MethodMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    public func intercept(
        method: String,
        payload: Data,
        options: CallOptions,
        next: @Sendable (String, Data, CallOptions) async throws -> Data
    ) async throws -> Data {
        let start = NIODeadline.now()
        var code = StatusCode.ok
        defer {
            let micros = UInt64((NIODeadline.now() - start).nanoseconds / 1000)
            self.metrics.record(method: method, code: code, micros: micros)
            self.logger.debug(
                "call",
                metadata: ["method": "\(method)", "code": "\(code.name)", "duration_us": "\(micros)"]
            )
        }
        do {
            return try await next(method, payload, options)
        } catch {
            code = RPCError(answering: error).code
            throw error
        }
    }
}
