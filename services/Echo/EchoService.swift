import HearthContracts
public import HearthRPC

/// `hearth.echo.v1.Echo`: answers with what it was sent. It proves the runtime end to end
/// and is what `hearth bench` measures: `sleep_ms` holds a call open (deadlines, concurrency),
/// `fail_with_code` makes it fail with that status.
public struct EchoService: RPCService {
    public static let echoMethod = "hearth.echo.v1.Echo/Echo"

    public init() {}

    public var serviceName: String { "hearth.echo.v1.Echo" }

    public var methods: [RPCMethod] {
        [.unary(Self.echoMethod, Self.echo)]
    }

    @Sendable
    static func echo(_ request: Hearth_Echo_V1_EchoRequest, context: RPCContext) async throws
        -> Hearth_Echo_V1_EchoResponse
    {
        if request.sleepMs > 0 {
            try await Task.sleep(for: .milliseconds(Int64(request.sleepMs)))
        }
        if request.failWithCode != 0 {
            guard let code = StatusCode(rawValue: Int(request.failWithCode)), StatusCode.known.contains(code) else {
                throw RPCError.invalidArgument([
                    FieldViolation(field: "fail_with_code", description: "must be a status code from 1 to 16")
                ])
            }
            throw RPCError(code, "failing as asked (fail_with_code \(request.failWithCode))")
        }
        var response = Hearth_Echo_V1_EchoResponse()
        response.payload = request.payload
        response.text = request.text
        return response
    }
}

/// Typed calls to `hearth.echo.v1.Echo`.
public struct EchoClient: Sendable {
    public let client: RPCClient

    public init(client: RPCClient) {
        self.client = client
    }

    public func echo(_ request: Hearth_Echo_V1_EchoRequest, options: CallOptions = CallOptions()) async throws
        -> Hearth_Echo_V1_EchoResponse
    {
        try await self.client.call(
            EchoService.echoMethod,
            request,
            as: Hearth_Echo_V1_EchoResponse.self,
            options: options
        )
    }
}
