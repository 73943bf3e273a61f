import HearthContracts
import HearthRPC

// An account erasure's part in routines (hearth.account.v1.Account/EraseAccount).
extension RoutinesService {
    /// Internal: erases what routines holds about the acting user, for the erasure worker in the
    /// tasks process (``RoutineStore/erase(user:ownedNests:)``). Checkins is not asked who owns
    /// what: its part went first, and `owned_nest_ids` are the nests it answered it erased. A
    /// repeat deletes nothing and answers OK.
    ///
    /// The roles remembered in those nests are forgotten (``NestRoleSource/forget(nests:)``):
    /// a role cached before checkins erased a nest would otherwise let a routine be made in it
    /// after this part, left with no owner to erase it.
    public func eraseUser(_ request: Hearth_Routines_V1_EraseUserRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_EraseUserResponse
    {
        let user = try context.verifiedUser()
        let nests = try RoutineRules.ownedNests(request.ownedNestIds).get()
        let deleted = try await self.store.erase(user: user, ownedNests: nests)
        self.roles.forget(nests: Set(nests))
        var response = Hearth_Routines_V1_EraseUserResponse()
        response.deleted = UInt64(deleted)
        return response
    }
}
