import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
import HearthStore
import SwiftProtobuf

/// `hearth.tasks.v1.Activities`: activities with a place attached, and the "mark done?" offers
/// their geofence events may earn. Served beside ``TasksService``, in the same SQLite file.
public struct ActivitiesService: Hearth_Tasks_V1_Activities.Handler {
    let store: ActivityStore

    /// The activities of the tasks process, in `tasks`' store.
    public init(sharingStoreOf tasks: TasksService) {
        self.store = ActivityStore(base: tasks.store.base)
    }

    // MARK: Activities

    public func createActivity(_ request: Hearth_Tasks_V1_CreateActivityRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_Activity
    {
        let user = try context.verifiedUser()
        let new = try OfferRules.activity(
            title: request.title,
            repeatValue: request.repeat.rawValue,
            priority: request.priority
        )
        .get()
        let now = self.store.now
        switch try await self.store.createActivity(
            user: user,
            title: new.title,
            repeat: new.repeat,
            priority: new.priority,
            now: now
        ) {
        case .created(let created):
            return try await self.message(created, user: user, now: now)
        case .full:
            throw RPCError(
                .resourceExhausted,
                "a user has at most \(OfferRules.maxActivities) activities; delete one first"
            )
        }
    }

    public func getActivity(_ request: Hearth_Tasks_V1_GetActivityRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_Activity
    {
        let user = try context.verifiedUser()
        guard let found = try await self.store.activity(request.activityID, user: user) else {
            throw RPCError.notFound("activity", request.activityID)
        }
        return try await self.message(found, user: user, now: self.store.now)
    }

    public func listActivities(_ request: Hearth_Tasks_V1_ListActivitiesRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_ListActivitiesResponse
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        let zone = try await self.store.preferences(user: user).zone
        var response = Hearth_Tasks_V1_ListActivitiesResponse()
        response.activities = try await self.store.activities(user: user).map { $0.message(now: now, zone: zone) }
        return response
    }

    public func completeActivity(_ request: Hearth_Tasks_V1_CompleteActivityRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_Activity
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        guard let done = try await self.store.complete(request.activityID, user: user, now: now) else {
            throw RPCError.notFound("activity", request.activityID)
        }
        return try await self.message(done, user: user, now: now)
    }

    public func deleteActivity(_ request: Hearth_Tasks_V1_DeleteActivityRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_DeleteActivityResponse
    {
        let user = try context.verifiedUser()
        guard try await self.store.delete(request.activityID, user: user, now: self.store.now) else {
            throw RPCError.notFound("activity", request.activityID)
        }
        return Hearth_Tasks_V1_DeleteActivityResponse()
    }

    // MARK: Rules and preferences

    public func setLocationRule(_ request: Hearth_Tasks_V1_SetLocationRuleRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_Activity
    {
        let user = try context.verifiedUser()
        let rule = try OfferRules.rule(RuleDraft(request)).get()
        let now = self.store.now
        guard let changed = try await self.store.setRule(request.activityID, user: user, rule: rule, now: now) else {
            throw RPCError.notFound("activity", request.activityID)
        }
        return try await self.message(changed, user: user, now: now)
    }

    public func clearLocationRule(_ request: Hearth_Tasks_V1_ClearLocationRuleRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_Activity
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        guard let changed = try await self.store.clearRule(request.activityID, user: user, now: now) else {
            throw RPCError.notFound("activity", request.activityID)
        }
        return try await self.message(changed, user: user, now: now)
    }

    public func setOfferPreferences(_ request: Hearth_Tasks_V1_SetOfferPreferencesRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_OfferPreferences
    {
        let user = try context.verifiedUser()
        let preferences = try await self.store.setPreferences(
            PreferencesDraft(request),
            user: user,
            now: self.store.now
        )
        .get()
        return preferences.message(permissions: try await self.store.permissions(user: user))
    }

    public func getOfferPreferences(_ request: Hearth_Tasks_V1_GetOfferPreferencesRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_OfferPreferences
    {
        let user = try context.verifiedUser()
        return try await self.store.preferences(user: user).message(permissions: self.store.permissions(user: user))
    }

    public func reportPermissions(_ request: Hearth_Tasks_V1_ReportPermissionsRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_Permissions
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let location = Permissions.Location(rawValue: request.location.rawValue)
        if location == nil {
            violations.append(
                FieldViolation(
                    field: "location",
                    description: "must be LOCATION_ALWAYS, LOCATION_WHEN_IN_USE or LOCATION_DENIED"
                )
            )
        }
        let notifications = Permissions.Notifications(rawValue: request.notifications.rawValue)
        if notifications == nil {
            violations.append(
                FieldViolation(
                    field: "notifications",
                    description: "must be NOTIFICATIONS_ALLOWED or NOTIFICATIONS_DENIED"
                )
            )
        }
        guard violations.isEmpty, let location, let notifications else { throw RPCError.invalidArgument(violations) }
        let record = PermissionsRecord(
            userID: user,
            location: location.rawValue,
            notifications: notifications.rawValue,
            reportedAt: self.store.now
        )
        try await self.store.setPermissions(record)
        return record.message
    }

    // MARK: Offers

    public func reportLocationEvent(_ request: Hearth_Tasks_V1_ReportLocationEventRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_ReportLocationEventResponse
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let trigger = Trigger(rawValue: request.trigger.rawValue)
        if trigger == nil {
            violations.append(FieldViolation(field: "trigger", description: "must be ARRIVE or LEAVE"))
        }
        let occurredAt = FieldChecks.requiredTimestamp(
            request.occurredAt,
            isSet: request.hasOccurredAt,
            field: "occurred_at"
        ).value(collecting: &violations)
        if request.appState != .foreground && request.appState != .background {
            violations.append(FieldViolation(field: "app_state", description: "must be FOREGROUND or BACKGROUND"))
        }
        // Kept trimmed, as it was checked: " e1" repeats "e1".
        var clientEventID = ""
        switch FieldChecks.trimmed(
            request.clientEventID,
            field: "client_event_id",
            characters: 1...OfferRules.maxClientEventIDCharacters
        ) {
        case .success(let id): clientEventID = id
        case .failure(let violation): violations.append(violation)
        }
        if request.hasPosition {
            violations += OfferRules.coordinateViolations(
                latitude: request.position.latitude,
                longitude: request.position.longitude,
                prefix: "position"
            )
            if !request.position.accuracyM.isFinite
                || !(0...OfferRules.maxAccuracy).contains(request.position.accuracyM)
            {
                violations.append(FieldViolation(field: "position.accuracy_m", description: "must be 0 to 10000"))
            }
        }
        guard violations.isEmpty, let occurredAt, let trigger else { throw RPCError.invalidArgument(violations) }
        let event = OfferRules.Event(
            trigger: trigger,
            occurredAt: Store.asStored(occurredAt),
            position: request.hasPosition
                ? (request.position.latitude, request.position.longitude, request.position.accuracyM) : nil,
            foreground: request.appState == .foreground
        )
        let now = self.store.now
        let language = context.language ?? .english
        switch try await self.store.report(
            user: user,
            activityID: request.activityID,
            clientEventID: clientEventID,
            event: event,
            now: now
        ) {
        case .missing:
            throw RPCError.notFound("activity", request.activityID)
        case .decided(let decision, let offer, let dropped):
            var response = Hearth_Tasks_V1_ReportLocationEventResponse()
            switch decision {
            case .suppressed(let reason, let detail):
                response.suppressed = .with {
                    $0.reason = .init(reason)
                    $0.detail = detail
                }
            case .offer:
                guard let offer else { throw RPCError(.internal, "an offer was decided but not recorded") }
                response.offer = offer.message(now: now, language: language)
            }
            response.droppedOffers = dropped.map { $0.message(now: now, language: language) }
            return response
        }
    }

    public func listPendingOffers(_ request: Hearth_Tasks_V1_ListPendingOffersRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_ListPendingOffersResponse
    {
        let now = self.store.now
        let language = context.language ?? .english
        var response = Hearth_Tasks_V1_ListPendingOffersResponse()
        response.offers = try await self.store.pendingOffers(user: context.verifiedUser(), now: now).map {
            $0.message(now: now, language: language)
        }
        return response
    }

    public func respondToOffer(_ request: Hearth_Tasks_V1_RespondToOfferRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_RespondToOfferResponse
    {
        let user = try context.verifiedUser()
        guard let action = OfferAction(rawValue: request.action.rawValue) else {
            throw FieldViolation(
                field: "action",
                description: "must be MARK_DONE, SNOOZE_15, SNOOZE_60, DISABLE or DISMISS"
            )
        }
        let now = self.store.now
        let language = context.language ?? .english
        switch try await self.store.respond(offerID: request.offerID, user: user, action: action, now: now) {
        case .answered(let offer, let activity, let snoozed):
            var response = Hearth_Tasks_V1_RespondToOfferResponse()
            response.offer = offer.message(now: now, language: language)
            if let activity { response.activity = try await self.message(activity, user: user, now: now) }
            if let snoozed { response.snoozedOffer = snoozed.message(now: now, language: language) }
            return response
        case .answeredDifferently(let offer):
            let earlier = Hearth_Tasks_V1_OfferAction(rawValue: offer.action ?? 0) ?? .unspecified
            throw RPCError(.failedPrecondition, "offer \(offer.id) was already answered with \(earlier.protoName)")
        case .notDelivered(let offer):
            throw RPCError(
                .failedPrecondition,
                "offer \(offer.id) is not delivered until \(offer.deliverAt.formatted(.iso8601))"
            )
        case .expired(let offer):
            throw RPCError(.failedPrecondition, "offer \(offer.id) expired unanswered")
        case .cancelled(let offer):
            throw RPCError(.failedPrecondition, "offer \(offer.id) was cancelled")
        case .missing:
            throw RPCError.notFound("offer", request.offerID)
        }
    }

    public func listGeofences(_ request: Hearth_Tasks_V1_ListGeofencesRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_ListGeofencesResponse
    {
        let user = try context.verifiedUser()
        let max = request.max == 0 ? OfferRules.defaultGeofences : Int(request.max)
        guard OfferRules.geofences.contains(max) else {
            throw FieldViolation(field: "max", description: "must be 1 to 100 (is \(max))")
        }
        let now = self.store.now
        let preferences = try await self.store.preferences(user: user)
        var response = Hearth_Tasks_V1_ListGeofencesResponse()
        // Offers off: no place can make one, and each geofence costs one of the phone's ~20.
        guard preferences.enabled else { return response }
        let today = LocalDate(now, in: preferences.zone)
        // Those without a rule are passed over below: no second list to build.
        let found = try await self.store.activities(user: user)
        // Ranked by keys alone: sorting the records themselves copied every field at each swap.
        var ranked: [(priority: Int, updatedAt: Date, id: String, index: Int)] = []
        for (index, candidate) in found.enumerated() {
            guard let rule = candidate.rule,
                OfferRules.geofenceCanFire(
                    ruleEnabled: rule.enabled,
                    onlyIfIncomplete: rule.onlyIfIncomplete,
                    done: ActivityStore.isDone(candidate.activity, on: today, in: preferences.zone)
                )
            else { continue }
            ranked.append((candidate.activity.priority, Self.updatedAt(candidate), candidate.activity.id, index))
        }
        ranked.sort { a, b in
            if a.priority != b.priority { return a.priority > b.priority }
            if a.updatedAt != b.updatedAt { return a.updatedAt > b.updatedAt }
            return a.id < b.id
        }
        response.geofences = ranked.prefix(max).map { key in
            let candidate = found[key.index]
            let rule = candidate.rule!
            return .with {
                $0.activityID = candidate.activity.id
                $0.title = candidate.activity.title
                $0.place = rule.place
                $0.trigger = Hearth_Tasks_V1_Trigger(rawValue: rule.trigger) ?? .unspecified
                $0.minDwellMinutes = UInt32(rule.minDwellMinutes)
            }
        }
        response.leftOut = UInt32(Swift.max(0, ranked.count - max))
        return response
    }

    public func getOfferStats(_ request: Hearth_Tasks_V1_GetOfferStatsRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_GetOfferStatsResponse
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let from = FieldChecks.requiredTimestamp(request.from, isSet: request.hasFrom, field: "from")
            .value(collecting: &violations)
        let to = FieldChecks.requiredTimestamp(request.to, isSet: request.hasTo, field: "to")
            .value(collecting: &violations)
        guard violations.isEmpty, let from, let to else { throw RPCError.invalidArgument(violations) }
        guard from < to else { throw FieldViolation(field: "to", description: "must be after from") }
        guard to.timeIntervalSince(from) <= TimeInterval(OfferRules.maxStatsDays * 86_400) else {
            throw FieldViolation(field: "to", description: "at most \(OfferRules.maxStatsDays) days after from")
        }
        let stats = try await self.store.stats(user: user, from: from, to: to, now: self.store.now)
        var response = Hearth_Tasks_V1_GetOfferStatsResponse()
        response.eligible = UInt32(stats.eligible)
        response.suppressed = stats.suppressed.sorted { $0.key < $1.key }.map { reason, count in
            .with {
                $0.reason = Hearth_Tasks_V1_SuppressionReason(rawValue: reason) ?? .unspecified
                $0.count = UInt32(count)
            }
        }
        response.shown = stats.shown.sorted { $0.key < $1.key }.map { channel, count in
            .with {
                $0.channel = Hearth_Tasks_V1_Channel(rawValue: channel) ?? .unspecified
                $0.count = UInt32(count)
            }
        }
        response.actions = stats.actions.sorted { $0.key < $1.key }.map { action, count in
            .with {
                $0.action = Hearth_Tasks_V1_OfferAction(rawValue: action) ?? .unspecified
                $0.count = UInt32(count)
            }
        }
        return response
    }

    // MARK: Helpers

    /// When an activity or its rule last changed: the later ranks first among equal priorities.
    private static func updatedAt(_ found: ActivityWithRule) -> Date {
        max(found.rule?.updatedAt ?? .distantPast, found.activity.updatedAt)
    }

    private func message(_ found: ActivityWithRule, user: String, now: Date) async throws -> Hearth_Tasks_V1_Activity {
        found.message(now: now, zone: try await self.store.preferences(user: user).zone)
    }
}
