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
        let response = try await self.client.call(
            "hearth.health.v1.Health/Check",
            request,
            as: Hearth_Health_V1_HealthCheckResponse.self,
            options: options
        )
        return response.status
    }
}
