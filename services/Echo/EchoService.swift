public import HearthContracts
public import HearthRPC

/// `hearth.echo.v1.Echo`: answers with what it was sent. It proves the runtime end to end
/// and is what `hearth bench` measures: `sleep_ms` holds a call open (deadlines, concurrency),
/// `fail_with_code` makes it fail with that status.
public struct EchoService: Hearth_Echo_V1_Echo.Handler {
    public init() {}

    public func echo(_ request: Hearth_Echo_V1_EchoRequest, _ context: RPCContext) async throws
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
