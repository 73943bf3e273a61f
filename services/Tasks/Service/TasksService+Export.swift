import Foundation
import HearthContracts
import SwiftProtobuf

extension TasksService {
    /// The tasks process's part of an account export (``AccountService``'s ExportAccount):
    /// everything its store holds about `user` (``TaskStore/userRows(of:)``, one snapshot),
    /// each message as the user's own calls answer it, at the store's time now: a task as
    /// GetTask and ListTasks, a prompt as ListPrompts, a check-in as GetTask, an activity with
    /// its rule as GetActivity (done or not today in the zone of their offer preferences, the
    /// defaults' when they never set any), the preferences as GetOfferPreferences (unset when
    /// never set) and an offer as ListPendingOffers. A user with nothing here gets an empty
    /// export.
    func userExport(of user: String) async throws -> Hearth_Tasks_V1_UserExport {
        let rows = try await self.store.userRows(of: user)
        let now = self.store.now
        // The zone ActivitiesService reads (``ActivityStore/preferences(user:)``).
        let zone = (rows.preferences ?? OfferRules.Preferences()).zone
        var export = Hearth_Tasks_V1_UserExport()
        export.tasks = rows.tasks.map { $0.message(now: now) }
        export.prompts = rows.prompts.map { $0.message(now: now) }
        export.checkIns = rows.checkIns.map(\.message)
        export.activities = rows.activities.map { $0.message(now: now, zone: zone) }
        if let preferences = rows.preferences { export.offerPreferences = preferences.message }
        export.offers = rows.offers.map { $0.message(now: now) }
        return export
    }
}
