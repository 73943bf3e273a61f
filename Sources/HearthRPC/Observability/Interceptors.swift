public import Foundation
public import Logging
public import NIOCore

/// Logs one structured line per served call (method, code, duration, request id) and records
/// it in ``MethodMetrics``. Lines are at `.info`: run with `--log-level info` to see them.
public struct ServerObservabilityInterceptor: ServerInterceptor {
    public let metrics: MethodMetrics

    public init(metrics: MethodMetrics) {
        self.metrics = metrics
    }

    public func intercept(_ payload: Data, context: RPCContext, next: RawHandler) async throws -> Data {
        let start = NIODeadline.now()
        var code = StatusCode.ok
        defer { context.recordServed(code: code, since: start, user: context.userID, in: self.metrics) }
        do {
            return try await next(payload, context)
        } catch {
            code = RPCError(answering: error).code
            throw error
        }
    }
}

extension RPCContext {
    /// Counts the call in `metrics` and writes its access-log line at `.info` (method, code,
    /// duration, user, request id): once per served call, by the interceptor or a forwarder.
    /// A call stopped by its deadline ends in cancellation; it is counted DEADLINE_EXCEEDED, as
    /// its caller saw it.
    /// `countsApart`: see ``MethodMetrics/record(method:code:micros:countsApart:)``.
    public func recordServed(
        code: StatusCode,
        since start: NIODeadline,
        user: @autoclosure () -> String?,
        in metrics: MethodMetrics,
        countsApart: Bool = true
    ) {
        let code = code == .cancelled && self.isPastDeadline ? .deadlineExceeded : code
        let micros = UInt64(max((NIODeadline.now() - start).nanoseconds / 1000, 0))
        metrics.record(method: self.method, code: code, micros: micros, countsApart: countsApart)
        // The request-id logger is built only when the line will be written.
        if self.logLevel <= .info {
            self.logger.info(
                "call",
                metadata: [
                    "method": "\(LogText.safe(self.method))",
                    "code": "\(code.name)",
                    "duration_us": "\(micros)",
                    "user": "\(user() ?? "-")",
                ]
            )
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

/// Text a caller chose, made fit for a log line: control characters and line separators
/// escaped (a newline would forge a line), and at most 256 bytes.
enum LogText {
    static let maxBytes = 256

    static func safe(_ text: String) -> String {
        let bytes = text.utf8
        // ASCII without controls: as it is (a method name always is).
        if bytes.count <= Self.maxBytes, bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) { return text }
        var escaped = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let piece = Self.mayBreakALine(scalar) ? scalar.escaped(asASCII: true) : String(scalar)
            used += piece.utf8.count
            guard used <= Self.maxBytes - 3 else { return escaped + "..." }
            escaped += piece
        }
        return escaped
    }

    /// C0 and C1 controls, DEL, and the line and paragraph separators.
    private static func mayBreakALine(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
