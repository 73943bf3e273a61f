/// Typed calls to `hearth.health.v1.Health`.
public struct HealthClient: Sendable {
    public let client: RPCClient

    public init(client: RPCClient) {
        self.client = client
    }

    /// The serving status of `service` (empty: the whole process).
    public func check(service: String = "", options: CallOptions = CallOptions()) async throws -> ServingStatus {
        var request = Hearth_Health_V1_HealthCheckRequest()
        request.service = service
        return try await Hearth_Health_V1_Health.Client(self.client).check(request, options: options).status
    }
}
