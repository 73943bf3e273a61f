import HearthCore
public import HearthRPC

/// What the gateway answers itself: `hearth.gateway.v1.Gateway`.
extension Gateway: Hearth_Gateway_V1_Gateway.Handler {
    /// The user the call's token names, and when it expires. A client calls it on a new
    /// connection before a frame larger than the connection takes until authenticated (a photo).
    public func authenticate(
        _ request: Hearth_Gateway_V1_AuthenticateRequest,
        _ context: RPCContext
    ) async throws -> Hearth_Gateway_V1_AuthenticateResponse {
        let token = try await self.verifier.verifiedToken(authorization: context.metadata["authorization"])
        try self.admit(token.userID)
        self.limiter.finished(token.userID)
        var response = Hearth_Gateway_V1_AuthenticateResponse()
        response.userID = token.userID
        response.expiresAtMs = token.expiresAt.millisecondsSince1970
        return response
    }
}
