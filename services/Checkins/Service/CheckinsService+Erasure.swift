import Foundation
import HearthContracts
import HearthRPC

// An account erasure's part in checkins (hearth.account.v1.Account/EraseAccount): the account
// service asks for the user's nests (routines erases their routines), then erases the user here,
// again until it answers OK.
extension CheckinsService {
    /// Every nest the acting user owns, oldest first, all in one answer: the erasure needs each
    /// of them, and a user owns at most ``CheckinRules/maxNestsPerOwner``.
    public func listOwnedNests(_ request: Hearth_Checkins_V1_ListOwnedNestsRequest, _ context: RPCContext)
        async throws -> Hearth_Checkins_V1_ListOwnedNestsResponse
    {
        let user = try context.verifiedUser()
        var response = Hearth_Checkins_V1_ListOwnedNestsResponse()
        response.nestIds = try await self.store.ownedNestIDs(of: user)
        return response
    }

    /// Erases everything this service holds about the acting user
    /// (``CheckinStore/eraseUser(_:in:)``) and answers how many rows went. A repeat (the
    /// account service retries until OK) finds nothing and answers 0.
    public func eraseUser(_ request: Hearth_Checkins_V1_EraseUserRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_EraseUserResponse
    {
        let user = try context.verifiedUser()
        var response = Hearth_Checkins_V1_EraseUserResponse()
        response.deleted = UInt64(try await self.store.eraseUser(user))
        return response
    }
}
