public import SwiftProtobuf

/// One method of a contract as `scripts/gen-proto` generates it from its `.proto`: its name, its
/// message types, and what tools print of it (`hearth list`, `hearth describe`).
public struct RPCMethodInfo: Sendable {
    /// `package.Service/Method`, e.g. `hearth.echo.v1.Echo/Echo`.
    public let name: String
    public let requestType: any SwiftProtobuf.Message.Type
    public let responseType: any SwiftProtobuf.Message.Type
    /// Whether only other services may call it: its comment begins `Internal:`, and the
    /// gateway refuses it to clients.
    public let servicesOnly: Bool
    /// The comment above the `rpc` line, or above its request message when the rpc has none.
    public let documentation: String
    /// The request's JSON shape, one field a line with the comments of the `.proto`.
    public let requestShape: String

    public init(
        name: String,
        requestType: any SwiftProtobuf.Message.Type,
        responseType: any SwiftProtobuf.Message.Type,
        servicesOnly: Bool,
        documentation: String,
        requestShape: String
    ) {
        self.name = name
        self.requestType = requestType
        self.responseType = responseType
        self.servicesOnly = servicesOnly
        self.documentation = documentation
        self.requestShape = requestShape
    }

    /// The method's own name, after the service's: `Echo` of `hearth.echo.v1.Echo/Echo`.
    public var shortName: Substring {
        self.name.split(separator: "/", maxSplits: 1).last ?? Substring(self.name)
    }
}

/// A method with its message types in its type: servers register it (``RPCMethod/unary(_:_:)``)
/// and clients call it (``RPCClient/call(_:_:options:)``), and the compiler checks both ends.
public struct RPCMethodDescriptor<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>: Sendable {
    public let info: RPCMethodInfo

    public init(name: String, servicesOnly: Bool = false, documentation: String = "", requestShape: String = "") {
        self.info = RPCMethodInfo(
            name: name,
            requestType: Request.self,
            responseType: Response.self,
            servicesOnly: servicesOnly,
            documentation: documentation,
            requestShape: requestShape
        )
    }

    public var name: String { self.info.name }
}

/// A service of a contract (`package.Service`) and its methods, in the `.proto`'s order.
public struct RPCServiceInfo: Sendable {
    public let name: String
    /// The comment above the `service` block.
    public let documentation: String
    public let methods: [RPCMethodInfo]

    public init(name: String, documentation: String, methods: [RPCMethodInfo]) {
        self.name = name
        self.documentation = documentation
        self.methods = methods
    }
}

extension RPCMethod {
    /// Registers a unary method of a generated contract, typed by its descriptor.
    public static func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: RPCMethodDescriptor<Request, Response>,
        _ body: @escaping @Sendable (Request, RPCContext) async throws -> Response
    ) -> RPCMethod {
        self.unary(method.name, body)
    }
}

extension RPCClient {
    /// Calls a unary method of a generated contract.
    /// - Throws: ``RPCError``; INTERNAL when the response does not decode as `Response`.
    public func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: RPCMethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> Response {
        try await self.call(method.name, request, as: Response.self, options: options)
    }
}
