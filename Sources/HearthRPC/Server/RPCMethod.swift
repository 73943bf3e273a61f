public import Foundation
public import SwiftProtobuf

/// A handler on serialized messages: payload in, payload out.
public typealias RawHandler = @Sendable (Data, RPCContext) async throws -> Data

/// One method a server serves, typed at registration and erased to bytes for dispatch.
///
/// Handlers start on their connection's event loop (no thread hop per call) and must never
/// hold it long: short indexed reads run right there (`Store.read`, stopped by the call's
/// deadline), writes and long work await other threads (GRDB's writer, a photo pool), or every
/// connection on that loop, and its deadline timers, wait.
public struct RPCMethod: Sendable {
    /// `package.Service/Method`, e.g. `hearth.echo.v1.Echo/Echo`.
    public let name: String
    let handler: RawHandler

    /// Registers a unary method. A payload that does not decode as `Request` is answered
    /// INVALID_ARGUMENT before `body` runs.
    public static func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ name: String,
        _ body: @escaping @Sendable (Request, RPCContext) async throws -> Response
    ) -> RPCMethod {
        RPCMethod(name: name) { payload, context in
            let request: Request
            do {
                request = try Request(serializedBytes: payload)
            } catch {
                throw RPCError(
                    .invalidArgument,
                    "payload does not decode as \(Request.protoMessageName): \(error)",
                    cause: error
                )
            }
            return try await body(request, context).serializedData()
        }
    }
}

/// A service: a named group of methods (`package.Service`).
public protocol RPCService: Sendable {
    /// The fully qualified service name, e.g. `hearth.echo.v1.Echo`; what health checks ask for.
    var serviceName: String { get }
    var methods: [RPCMethod] { get }
}

/// Wraps every call a server handles (access log, metrics, authentication).
public protocol ServerInterceptor: Sendable {
    func intercept(_ payload: Data, context: RPCContext, next: RawHandler) async throws -> Data
}

/// `handler` wrapped by `interceptors`, the first one outermost.
func chain(_ handler: @escaping RawHandler, through interceptors: [any ServerInterceptor]) -> RawHandler {
    interceptors.reversed().reduce(handler) { next, interceptor in
        { payload, context in try await interceptor.intercept(payload, context: context, next: next) }
    }
}
