import HearthContracts
import HearthRPC

// An account erasure's part in routines (hearth.account.v1.Account/EraseAccount).
extension RoutinesService {
    /// Internal: erases what routines holds about the acting user, for the erasure worker in the
    /// tasks process (``RoutineStore/erase(user:ownedNests:)``). Checkins is not asked who owns
    /// what: the worker asked it for `owned_nest_ids` before checkins erased those nests, and by
    /// now it would answer that the user owns nothing. A repeat deletes nothing and answers OK.
    ///
    /// The role cache (``CachedNestRoles``) may still hold the user's roles in their nests. It is
    /// left as it is: it holds roles, none of the user's data, and forgets them within
    /// ``CachedNestRoles/defaultLifetime``.
    public func eraseUser(_ request: Hearth_Routines_V1_EraseUserRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_EraseUserResponse
    {
        let user = try context.verifiedUser()
        let nests = try RoutineRules.ownedNests(request.ownedNestIds).get()
        let deleted = try await self.store.erase(user: user, ownedNests: nests)
        var response = Hearth_Routines_V1_EraseUserResponse()
        response.deleted = UInt64(deleted)
        return response
    }
}
