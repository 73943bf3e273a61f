import HearthContracts
public import HearthRPC
import HearthScheduler

extension SafetyService {
    /// Safety's part of an account erasure (``SafetyStore/eraseUser(_:)``). The decider is
    /// woken: the user's next due time went with their profile.
    public func eraseUser(_ request: Hearth_Safety_V1_EraseUserRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_EraseUserResponse
    {
        var response = Hearth_Safety_V1_EraseUserResponse()
        response.deleted = UInt64(try await self.store.eraseUser(try context.verifiedUser()))
        self.decider.wake()
        return response
    }
}
