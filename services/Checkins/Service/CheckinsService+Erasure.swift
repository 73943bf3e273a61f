import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthScheduler
import HearthStore
import Logging

// An account erasure's part in checkins (hearth.account.v1.Account/EraseAccount): the account
// service erases the user here, again until it answers OK; when routines' part comes, it erases
// the user here once more (a nest made meanwhile goes too) and hands routines every nest the
// answer names, whose routines go with them. (ListOwnedNests serves the account export.)
extension CheckinsService {
    /// Every nest the acting user owns, oldest first, all in one answer: the export needs each
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
    /// (``CheckinStore/eraseUser(_:)``) and answers how many rows went, with every nest erased
    /// for them so far, by this call and earlier ones (kept
    /// ``CheckinStore/erasedNestRetention``). A repeat (the account service retries until OK,
    /// and calls again before routines' part) deletes only what was made since, 0 rows when
    /// nothing was, and answers the same nests and any erased now.
    public func eraseUser(_ request: Hearth_Checkins_V1_EraseUserRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_EraseUserResponse
    {
        let user = try context.verifiedUser()
        let erased = try await self.store.eraseUser(user)
        var response = Hearth_Checkins_V1_EraseUserResponse()
        response.deleted = UInt64(erased.deleted)
        response.erasedNestIds = erased.erasedNests
        return response
    }

    /// Checkins' housekeeping, run beside the server on a scheduler of its own: once an hour it
    /// forgets the nests erased ``CheckinStore/erasedNestRetention`` ago or longer
    /// (``CheckinStore/pruneErasedNests(now:)``).
    func housekeeping(logger: Logger) -> DueTimeScheduler {
        let store = self.store
        let clock = store.base.clock
        return DueTimeScheduler(
            work: Housekeeping(start: clock.now(), logger: logger) { now in
                ["erased nests": try await store.pruneErasedNests(now: now)]
            },
            clock: clock,
            logger: logger
        )
    }
}
