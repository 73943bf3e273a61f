import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// 2026-06-01 12:00 in New York (EDT).
let noon = at("2026-06-01T16:00:00Z")
/// The gym: a place of radius 150 m.
let gym = (latitude: 40.7128, longitude: -74.0060)
let earthRadius = 6_371_008.8

/// A point `meters` due north of the gym (along a meridian the haversine distance is exact).
func north(of place: (latitude: Double, longitude: Double), _ meters: Double) -> (Double, Double) {
    (place.latitude + meters / earthRadius * 180 / .pi, place.longitude)
}

/// Calls on the activities service of a ``TasksSystem``, as one user.
struct Activities {
    let system: TasksSystem
    var user = "ana"
    var service: ActivitiesService { ActivitiesService(sharingStoreOf: self.system.service) }
    var context: RPCContext { callContext(self.user) }

    func create(_ title: String = "Gym workout", repeat kind: Hearth_Tasks_V1_Repeat = .none, priority: UInt32 = 2)
        async throws -> String
    {
        try await self.service.createActivity(
            .with {
                $0.title = title
                $0.repeat = kind
                $0.priority = priority
            },
            self.context
        ).id
    }

    @discardableResult
    func rule(
        _ id: String,
        trigger: Hearth_Tasks_V1_Trigger = .leave,
        label: String = "Gym",
        radius: UInt32 = 150,
        delay: UInt32 = 0,
        cooldown: UInt32? = nil,
        onlyIfIncomplete: Bool? = nil,
        enabled: Bool? = nil,
        dwell: UInt32 = 0
    ) async throws -> Hearth_Tasks_V1_Activity {
        var request = Hearth_Tasks_V1_SetLocationRuleRequest()
        request.activityID = id
        request.place = .with {
            $0.label = label
            $0.latitude = gym.latitude
            $0.longitude = gym.longitude
            $0.radiusM = radius
        }
        request.trigger = trigger
        request.delayMinutes = delay
        if let cooldown { request.cooldownMinutes = cooldown }
        if let onlyIfIncomplete { request.onlyIfIncomplete = onlyIfIncomplete }
        if let enabled { request.enabled = enabled }
        request.minDwellMinutes = dwell
        return try await self.service.setLocationRule(request, self.context)
    }

    /// Offer preferences; by default a cap and spacing that stay out of the way.
    func preferences(
        enabled: Bool? = true,
        cap: UInt32? = 20,
        spacing: UInt32? = 1,
        cooldown: UInt32? = nil,
        quiet: (String, String)? = nil,
        zone: String = "America/New_York"
    ) async throws {
        var request = Hearth_Tasks_V1_SetOfferPreferencesRequest()
        if let enabled { request.enabled = enabled }
        if let cap { request.dailyCap = cap }
        if let spacing { request.minSpacingMinutes = spacing }
        if let cooldown { request.defaultCooldownMinutes = cooldown }
        if let quiet {
            request.quietHours = .with {
                $0.start = quiet.0
                $0.end = quiet.1
            }
        }
        request.timeZone = zone
        _ = try await self.service.setOfferPreferences(request, self.context)
    }

    /// Reports what the phone allows the app.
    @discardableResult
    func permissions(
        _ location: Hearth_Tasks_V1_LocationPermission,
        _ notifications: Hearth_Tasks_V1_NotificationPermission
    ) async throws -> Hearth_Tasks_V1_Permissions {
        try await self.service.reportPermissions(
            .with {
                $0.location = location
                $0.notifications = notifications
            },
            self.context
        )
    }

    func report(
        _ id: String,
        _ trigger: Hearth_Tasks_V1_Trigger = .leave,
        at occurredAt: Date? = nil,
        position: (Double, Double, Double)? = nil,
        foreground: Bool = false,
        event: String = UUID().uuidString
    ) async throws -> Hearth_Tasks_V1_ReportLocationEventResponse {
        var request = Hearth_Tasks_V1_ReportLocationEventRequest()
        request.activityID = id
        request.trigger = trigger
        request.occurredAt = Google_Protobuf_Timestamp(date: occurredAt ?? self.system.clock.now())
        if let position {
            request.position = .with {
                $0.latitude = position.0
                $0.longitude = position.1
                $0.accuracyM = position.2
            }
        }
        request.appState = foreground ? .foreground : .background
        request.clientEventID = event
        return try await self.service.reportLocationEvent(request, self.context)
    }

    /// The reason, or nil for an offer.
    func outcome(_ response: Hearth_Tasks_V1_ReportLocationEventResponse) -> Hearth_Tasks_V1_SuppressionReason? {
        if case .suppressed(let suppressed)? = response.decision { return suppressed.reason }
        return nil
    }

    func reason(
        _ id: String,
        _ trigger: Hearth_Tasks_V1_Trigger = .leave,
        at occurredAt: Date? = nil,
        position: (Double, Double, Double)? = nil,
        event: String = UUID().uuidString
    ) async throws -> Hearth_Tasks_V1_SuppressionReason? {
        self.outcome(try await self.report(id, trigger, at: occurredAt, position: position, event: event))
    }

    func pending() async throws -> [Hearth_Tasks_V1_Offer] {
        try await self.service.listPendingOffers(.init(), self.context).offers
    }

    func respond(_ offer: String, _ action: Hearth_Tasks_V1_OfferAction) async throws
        -> Hearth_Tasks_V1_RespondToOfferResponse
    {
        try await self.service.respondToOffer(
            .with {
                $0.offerID = offer
                $0.action = action
            },
            self.context
        )
    }
}

extension TasksSystem {
    /// What a user of every part of tasks leaves: `created`'s next prompt answered, a check-in
    /// recorded to it, offer preferences and the phone's permissions set, an activity (`activity`) with a location rule.
    /// Answers the activities of `user` and the activity's id.
    func useEveryPart(
        _ user: String,
        _ created: Hearth_Tasks_V1_CreateTaskResponse,
        activity: String = "Gym workout"
    ) async throws -> (Activities, String) {
        _ = try await self.respond(created.nextPrompt.id, user: user)
        _ = try await self.service.recordCheckIn(
            .with {
                $0.taskID = created.task.id
                $0.responseText = "Talked to the bank"
            },
            callContext(user)
        )
        let activities = Activities(system: self, user: user)
        try await activities.preferences()
        try await activities.permissions(.locationAlways, .notificationsAllowed)
        let gym = try await activities.create(activity)
        try await activities.rule(gym)
        return (activities, gym)
    }
}
