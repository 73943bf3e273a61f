import Foundation
import HearthContracts
import HearthCore
import SwiftProtobuf

extension TasksService {
    /// The tasks process's part of an account export (``AccountService``'s ExportAccount):
    /// everything its store holds about `user` (``TaskStore/userRows(of:)``, one snapshot),
    /// each message as the user's own calls answer it, at the store's time now: a task as
    /// GetTask and ListTasks, a prompt as ListPrompts, a check-in as GetTask, an activity with
    /// its rule as GetActivity (done or not today in the zone of their offer preferences, the
    /// defaults' when they never set any), the preferences as GetOfferPreferences (unset when
    /// never set), the phone's permissions as ReportPermissions (unset when never), an offer as ListPendingOffers, and each location event and repeated report
    /// as the store recorded it (what came of it: the offer's id, or why none). A user with
    /// nothing here gets an empty export.
    func userExport(of user: String, language: UserLanguage) async throws -> Hearth_Tasks_V1_UserExport {
        let rows = try await self.store.userRows(of: user)
        let now = self.store.now
        // The zone ActivitiesService reads (``ActivityStore/preferences(user:)``).
        let zone = (rows.preferences ?? OfferRules.Preferences()).zone
        var export = Hearth_Tasks_V1_UserExport()
        export.tasks = rows.tasks.map { $0.message(now: now) }
        export.prompts = rows.prompts.map { $0.message(now: now) }
        export.checkIns = rows.checkIns.map(\.message)
        export.activities = rows.activities.map { $0.message(now: now, zone: zone) }
        if let preferences = rows.preferences {
            export.offerPreferences = preferences.message(permissions: rows.permissions)
        }
        if let permissions = rows.permissions { export.permissions = permissions.message }
        export.offers = rows.offers.map { $0.message(now: now, language: language) }
        export.locationEvents = rows.locationEvents.map(\.message)
        export.locationEventRepeats = rows.locationEventRepeats.map(\.message)
        return export
    }
}

extension LocationEventRecord {
    /// The event as an export shows it: as first reported, with the offer it made or why none.
    var message: Hearth_Tasks_V1_LocationEvent {
        .with {
            $0.clientEventID = self.clientEventID
            $0.activityID = self.activityID
            $0.trigger = Hearth_Tasks_V1_Trigger(rawValue: self.trigger) ?? .unspecified
            $0.occurredAt = Google_Protobuf_Timestamp(millisecondsOf: self.occurredAt)
            $0.receivedAt = Google_Protobuf_Timestamp(millisecondsOf: self.receivedAt)
            $0.offerID = self.offerID ?? ""
            // 0 (unspecified) when it made an offer, as the store keeps it.
            $0.suppressionReason = Hearth_Tasks_V1_SuppressionReason(rawValue: self.reason) ?? .unspecified
        }
    }
}

extension TaskStore.LocationEventRepeat {
    /// The repeated report as an export shows it: when, and what it was answered.
    var message: Hearth_Tasks_V1_LocationEventRepeat {
        .with {
            $0.clientEventID = self.clientEventID
            $0.occurredAt = Google_Protobuf_Timestamp(millisecondsOf: self.occurredAt)
            $0.receivedAt = Google_Protobuf_Timestamp(millisecondsOf: self.receivedAt)
            $0.suppressionReason = Hearth_Tasks_V1_SuppressionReason(rawValue: self.reason) ?? .unspecified
        }
    }
}
