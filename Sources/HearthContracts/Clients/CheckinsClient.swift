public import HearthRPC

/// Typed calls to `hearth.checkins.v1.Checkins`, for the services that ask it.
public struct CheckinsClient: Sendable {
    public static let service = "hearth.checkins.v1.Checkins"
    /// For other services only: the gateway refuses it to clients.
    public static let roleMethod = "\(service)/GetNestRole"
    public let client: RPCClient

    public init(client: RPCClient) {
        self.client = client
    }

    /// A user's role in a nest (for other services deciding access). `options` carry the
    /// internal credential and the acting user, who may ask only about themselves unless they
    /// own the nest.
    public func nestRole(nestID: String, userID: String, options: CallOptions) async throws
        -> Hearth_Checkins_V1_NestRole
    {
        var request = Hearth_Checkins_V1_GetNestRoleRequest()
        request.nestID = nestID
        request.userID = userID
        return try await self.client.call(
            Self.roleMethod,
            request,
            as: Hearth_Checkins_V1_GetNestRoleResponse.self,
            options: options
        ).role
    }
}
