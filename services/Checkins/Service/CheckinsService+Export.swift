import Foundation
import HearthContracts
import HearthRPC

// An account export's part in checkins (hearth.account.v1.Account/ExportAccount).
extension CheckinsService {
    /// Internal: what checkins holds about the acting user, for an export of their account by the
    /// account service (``CheckinStore/userRows(of:)``): the nests they own, then those they sit
    /// in; the sessions of the former and their own in the latter; those sessions' check-ins
    /// (each saying whether it has a photo, whose bytes GetCheckInPhoto serves); the quick
    /// captions of the nests they own. Each message is the one GetNest, GetSession, ListCheckIns
    /// and ListTemplates answer for it, a session `active` as of now; a nest they sat long ago,
    /// which GetNest no longer shows them, is there too. A user with nothing gets an empty export.
    public func exportUser(_ request: Hearth_Checkins_V1_ExportUserRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_UserExport
    {
        let user = try context.verifiedUser()
        let rows = try await self.store.userRows(of: user)
        let now = self.store.now
        var export = Hearth_Checkins_V1_UserExport()
        export.nests = rows.nests.map(\.message)
        export.sessions = rows.sessions.map { $0.message(now: now) }
        export.checkIns = rows.checkIns.map(\.message)
        export.templates = rows.templates.map(\.message)
        return export
    }
}
