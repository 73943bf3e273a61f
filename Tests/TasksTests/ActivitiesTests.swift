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
private let noon = at("2026-06-01T16:00:00Z")
/// The gym: a place of radius 150 m.
private let gym = (latitude: 40.7128, longitude: -74.0060)
private let earthRadius = 6_371_008.8

/// A point `meters` due north of the gym (along a meridian the haversine distance is exact).
private func north(of place: (latitude: Double, longitude: Double), _ meters: Double) -> (Double, Double) {
    (place.latitude + meters / earthRadius * 180 / .pi, place.longitude)
}

/// Calls on the activities service of a ``TasksSystem``, as one user.
private struct Activities {
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
        enabled: Bool? = nil
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

@Suite("Activities: deciding on offers", .timeLimit(.minutes(1)))
struct OfferDecisionTests {
    @Test("the checks in order, each at its boundary")
    func suppressionBoundaries() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let gymID = try await a.create()
            #expect(try await a.reason(gymID) == .noRule)
            try await a.rule(gymID, trigger: .leave, enabled: false)
            #expect(try await a.reason(gymID) == .ruleDisabled)
            try await a.rule(gymID, trigger: .leave)
            #expect(try await a.reason(gymID, .arrive) == .triggerMismatch)
            try await a.preferences(enabled: false)
            #expect(try await a.reason(gymID, .arrive) == .disabled, "the global switch comes before the rule")
            let ruleless = try await a.create("No rule yet")
            #expect(try await a.reason(ruleless) == .disabled)
            try await a.preferences()

            // STALE_EVENT: 30 minutes old is still fresh; a second more, or a second ahead, is not.
            #expect(try await a.reason(gymID, at: noon.addingTimeInterval(1)) == .staleEvent)
            #expect(try await a.reason(gymID, at: noon.addingTimeInterval(-1801)) == .staleEvent)
            #expect(try await a.reason(gymID, at: noon.addingTimeInterval(-1800), event: "e-1") == nil)
            // DUPLICATE_EVENT: the same id again, whatever it asks.
            #expect(try await a.reason(gymID, at: noon, event: "e-1") == .duplicateEvent)
            #expect(try await a.reason(gymID, at: noon.addingTimeInterval(-1801), event: "e-1") == .staleEvent)
            #expect(
                try await a.reason(gymID, at: noon, position: (gym.latitude, gym.longitude, 1), event: "e-1")
                    == .duplicateEvent
            )
            // The statistics count each answer as given: the repeat answered STALE_EVENT is stale,
            // not a duplicate (before, every repeat was counted DUPLICATE_EVENT).
            let stats = try await a.service.getOfferStats(
                .with {
                    $0.from = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(-3600))
                    $0.to = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(3600))
                },
                a.context
            )
            let suppressed = Dictionary(uniqueKeysWithValues: stats.suppressed.map { ($0.reason, $0.count) })
            #expect(suppressed[.duplicateEvent] == 2 && suppressed[.staleEvent] == 3, "\(suppressed)")

            // NOT_CONFIRMED (leave: the accuracy circle wholly beyond radius + 25 m = 175 m).
            let other = try await a.create("Swim")
            try await a.rule(other, trigger: .leave)
            let outside = north(of: gym, 200)
            #expect(try await a.reason(other, position: (outside.0, outside.1, 25.5)) == .notConfirmed)
            #expect(try await a.reason(other, position: (outside.0, outside.1, 24.5)) == nil)
            // ...and arrive: wholly within radius - 25 m = 125 m.
            try await system.advance(by: 120)
            let inside = north(of: gym, 100)
            let arrive = try await a.create("Buy groceries")
            try await a.rule(arrive, trigger: .arrive)
            #expect(try await a.reason(arrive, .arrive, position: (inside.0, inside.1, 25.5)) == .notConfirmed)
            #expect(try await a.reason(arrive, .arrive, position: (inside.0, inside.1, 24.5)) == nil)
        }
    }

    @Test("cooldown, done, quiet hours across midnight, the daily cap per local day, and spacing")
    func ledgerBoundaries() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(cap: 20, cooldown: 60)
            let gymID = try await a.create()
            try await a.rule(gymID)
            #expect(try await a.reason(gymID) == nil)
            try await system.advance(by: 3599)
            #expect(try await a.reason(gymID) == .eventCooldown)
            try await system.advance(by: 1)
            #expect(try await a.reason(gymID) == nil, "60 minutes later the cooldown is over")
            try await a.rule(gymID, cooldown: 10)
            try await system.advance(by: 600)
            #expect(try await a.reason(gymID) == nil, "the rule's own cooldown wins over the default")

            // ALREADY_DONE, unless the rule offers whatever the state; the cooldown is checked first.
            _ = try await a.service.completeActivity(.with { $0.activityID = gymID }, a.context)
            try await system.advance(by: 599)
            #expect(try await a.reason(gymID) == .eventCooldown)
            try await system.advance(by: 1)
            #expect(try await a.reason(gymID) == .alreadyDone)
            try await a.rule(gymID, cooldown: 10, onlyIfIncomplete: false)
            #expect(try await a.reason(gymID) == nil)

            // QUIET_HOURS 22:00-07:00 in New York, judged at delivery time.
            let quiet = try await a.create("Stretch")
            try await a.rule(quiet, cooldown: 1)
            try await a.preferences(cap: 20, quiet: ("22:00", "07:00"))
            try await system.advance(to: at("2026-06-02T01:59:00Z"))  // 21:59
            #expect(try await a.reason(quiet) == nil)
            try await system.advance(to: at("2026-06-02T02:00:00Z"))  // 22:00
            #expect(try await a.reason(quiet) == .quietHours)
            try await system.advance(to: at("2026-06-02T10:59:00Z"))  // 06:59 the next morning
            #expect(try await a.reason(quiet) == .quietHours)
            try await system.advance(to: at("2026-06-02T11:00:00Z"))  // 07:00
            #expect(try await a.reason(quiet) == nil)

            // Judged when the offer would arrive: an event at 21:50 with a 10-minute delay is quiet.
            try await a.rule(quiet, delay: 10, cooldown: 1)
            try await system.advance(to: at("2026-06-03T01:50:00Z"))  // 21:50
            #expect(try await a.reason(quiet) == .quietHours)
            // Quiet hours come before the daily cap.
            try await a.preferences(cap: 1, quiet: ("22:00", "07:00"))
            try await system.advance(to: at("2026-06-03T02:30:00Z"))  // 22:30, and June 2 already had offers
            #expect(try await a.reason(quiet) == .quietHours)
        }
    }

    @Test(
        "the daily cap counts offers per local day and resets at local midnight; spacing is measured between deliveries"
    )
    func capAndSpacing() async throws {
        try await withTasksSystem(now: at("2026-06-01T13:00:00Z")) { system in  // 09:00 in New York
            let a = Activities(system: system)
            try await a.preferences(cap: 2, spacing: 360)
            var ids: [String] = []
            for n in 0..<4 {
                let id = try await a.create("Errand \(n)")
                try await a.rule(id, cooldown: 1)
                ids.append(id)
            }
            #expect(try await a.reason(ids[0]) == nil)  // 09:00
            try await system.advance(by: 359 * 60)
            #expect(try await a.reason(ids[1]) == .minSpacing)  // 14:59
            try await system.advance(by: 60)
            #expect(try await a.reason(ids[1]) == nil)  // 15:00
            try await system.advance(by: 60)
            #expect(try await a.reason(ids[2]) == .dailyCap, "the cap is checked before the spacing")  // 15:01
            try await system.advance(to: at("2026-06-02T03:59:00Z"))  // 23:59
            #expect(try await a.reason(ids[2]) == .dailyCap)
            try await system.advance(to: at("2026-06-02T04:00:00Z"))  // 00:00 June 2: a new day
            #expect(try await a.reason(ids[2]) == nil)
            #expect(try await a.reason(ids[3]) == .minSpacing)
        }
    }

    @Test("a boundary bounce (arrive, leave, arrive within 2 minutes) yields one offer")
    func bounce() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let groceries = try await a.create("Buy groceries")
            try await a.rule(groceries, trigger: .arrive)
            #expect(try await a.reason(groceries, .arrive) == nil)
            try await system.advance(by: 50)
            #expect(try await a.reason(groceries, .leave) == .triggerMismatch)
            try await system.advance(by: 60)
            #expect(try await a.reason(groceries, .arrive) == .eventCooldown)
            #expect(try await a.pending().count == 1)
        }
    }

    @Test("20 concurrent reports against a cap of 2 yield exactly 2 offers")
    func concurrentCap() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(cap: 2, spacing: 0)
            var ids: [String] = []
            for n in 0..<20 {
                let id = try await a.create("Errand \(n)")
                try await a.rule(id)
                ids.append(id)
            }
            let outcomes = try await withThrowingTaskGroup(of: Hearth_Tasks_V1_SuppressionReason?.self) { group in
                for id in ids { group.addTask { try await a.reason(id) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 2)
            #expect(outcomes.filter { $0 == .dailyCap }.count == 18)
            #expect(try await a.pending().count == 2)
        }
    }

    @Test("a DAILY activity done yesterday is offered today")
    func dailyRepeat() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(spacing: 0)
            let walk = try await a.create("Walk the dog", repeat: .daily)
            try await a.rule(walk, cooldown: 1)
            let done = try await a.service.completeActivity(.with { $0.activityID = walk }, a.context)
            #expect(done.done)
            #expect(try await a.reason(walk) == .alreadyDone)
            try await system.advance(to: at("2026-06-02T03:59:00Z"))  // 23:59 in New York, June 2 in UTC
            #expect(try await a.reason(walk) == .alreadyDone, "done today is judged in the user's zone")
            try await system.advance(to: at("2026-06-02T04:00:00Z"))  // midnight in New York
            #expect(try await a.service.getActivity(.with { $0.activityID = walk }, a.context).done == false)
            #expect(try await a.reason(walk) == nil)
        }
    }
}

@Suite("Activities: after the offer", .timeLimit(.minutes(1)))
struct OfferLifecycleTests {
    @Test("a snooze that would end in quiet hours comes back when they end, in the user's zone")
    func snoozeAroundQuietHours() {
        var preferences = OfferRules.Preferences()
        preferences.timeZone = "America/New_York"
        preferences.quietHours = OfferRules.QuietHours(start: 22 * 60, end: 7 * 60)
        // 21:40 in New York (EDT): 15 minutes later is 21:55, before quiet hours.
        let early = at("2026-06-02T01:40:00Z")
        #expect(
            OfferRules.snoozedDelivery(minutes: 15, now: early, preferences: preferences) == at("2026-06-02T01:55:00Z")
        )
        // 21:50: 22:05 is quiet; it comes back at 07:00 the next morning.
        let late = at("2026-06-02T01:50:00Z")
        #expect(
            OfferRules.snoozedDelivery(minutes: 15, now: late, preferences: preferences) == at("2026-06-02T11:00:00Z")
        )
        // 06:00: an hour later is 07:00, the first minute after quiet hours.
        let morning = at("2026-06-02T10:00:00Z")
        #expect(
            OfferRules.snoozedDelivery(minutes: 60, now: morning, preferences: preferences)
                == at("2026-06-02T11:00:00Z")
        )
        // Nights the clocks change: 07:00 EDT after spring forward, 07:00 EST after fall back.
        let springEve = at("2026-03-08T02:50:00Z")  // 21:50 EST on 7 March
        #expect(
            OfferRules.snoozedDelivery(minutes: 15, now: springEve, preferences: preferences)
                == at("2026-03-08T11:00:00Z")
        )
        let fallEve = at("2026-11-01T01:50:00Z")  // 21:50 EDT on 31 October
        #expect(
            OfferRules.snoozedDelivery(minutes: 15, now: fallEve, preferences: preferences)
                == at("2026-11-01T12:00:00Z")
        )
        preferences.quietHours = nil
        #expect(
            OfferRules.snoozedDelivery(minutes: 15, now: late, preferences: preferences) == at("2026-06-02T02:05:00Z")
        )
    }

    @Test("preferences without `enabled` keep offers on; turning them off cancels offers not yet answered")
    func preferencesOnAndOff() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(enabled: nil)
            #expect(try await a.service.getOfferPreferences(.init(), a.context).enabled)
            let gymID = try await a.create()
            try await a.rule(gymID, delay: 10)
            let response = try await a.report(gymID, foreground: true)
            guard case .offer(let offer)? = response.decision else {
                Issue.record("expected an offer, got \(response)")
                return
            }
            try await a.preferences(enabled: false)
            try await system.advance(by: 600)
            #expect(try await a.pending().isEmpty, "an offer made before offers were turned off is not delivered")
            await expectCode(.failedPrecondition) { _ = try await a.respond(offer.offerID, .markDone) }
            #expect(try await a.reason(gymID) == .disabled)
        }
    }

    @Test("a client_event_id is compared trimmed: ' e-1 ' repeats 'e-1'")
    func trimmedEventID() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let gymID = try await a.create()
            try await a.rule(gymID)
            #expect(try await a.reason(gymID, event: "e-1") == nil)
            #expect(try await a.reason(gymID, event: " e-1 ") == .duplicateEvent)
        }
    }

    @Test("a delayed offer is cancelled by completion before delivery and never shown")
    func cancelledByCompletion() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let gymID = try await a.create()
            try await a.rule(gymID, delay: 10)
            let response = try await a.report(gymID, foreground: true)
            guard case .offer(let offer)? = response.decision else {
                Issue.record("expected an offer, got \(response)")
                return
            }
            #expect(offer.channel == .inApp && offer.deliverAt.date == noon.addingTimeInterval(600))
            #expect(offer.title == "Mark done?" && offer.body == "Did you finish 'Gym workout'?")
            #expect(offer.state == .scheduled && offer.actions.count == 5)
            #expect(try await a.pending().isEmpty, "not before deliver_at")
            await expectCode(.failedPrecondition) { _ = try await a.respond(offer.offerID, .markDone) }

            _ = try await a.service.completeActivity(.with { $0.activityID = gymID }, a.context)
            try await system.advance(by: 600)
            #expect(try await a.pending().isEmpty)
            await expectCode(.failedPrecondition) { _ = try await a.respond(offer.offerID, .dismiss) }
            let stats = try await a.service.getOfferStats(
                .with {
                    $0.from = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(-3600))
                    $0.to = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(3600))
                },
                a.context
            )
            #expect(stats.eligible == 1 && stats.shown.isEmpty)
        }
    }

    @Test(
        "snooze makes a later offer outside the cap; MARK_DONE completes; DISABLE turns the rule off; answers are idempotent"
    )
    func answers() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(cap: 2, spacing: 0)
            let gymID = try await a.create()
            try await a.rule(gymID, cooldown: 1)
            guard case .offer(let first)? = try await a.report(gymID).decision else {
                Issue.record("no offer")
                return
            }
            #expect(first.channel == .notification)
            let snoozed = try await a.respond(first.offerID, .snooze15)
            #expect(snoozed.offer.state == .answered && snoozed.offer.action == .snooze15)
            #expect(snoozed.snoozedOffer.deliverAt.date == noon.addingTimeInterval(900) && snoozed.snoozedOffer.snoozed)
            #expect(try await a.respond(first.offerID, .snooze15) == snoozed, "the same answer again")
            do {
                _ = try await a.respond(first.offerID, .dismiss)
                Issue.record("answered twice")
            } catch let error as RPCError {
                #expect(error.code == .failedPrecondition && error.message.hasSuffix("already answered with SNOOZE_15"))
            }
            #expect(try await a.pending().isEmpty)
            try await system.advance(by: 900)
            #expect(try await a.pending().map(\.offerID) == [snoozed.snoozedOffer.offerID])

            let done = try await a.respond(snoozed.snoozedOffer.offerID, .markDone)
            #expect(done.activity.done && done.offer.action == .markDone)

            let swim = try await a.create("Swim")
            try await a.rule(swim, cooldown: 1)
            guard case .offer(let next)? = try await a.report(swim, foreground: true).decision else {
                Issue.record("the snooze should not have used up the cap of 2")
                return
            }
            let third = try await a.create("Run")
            try await a.rule(third, cooldown: 1)
            #expect(try await a.reason(third) == .dailyCap, "two offers today, not counting the snooze")
            _ = try await a.report(third, event: "again")
            #expect(try await a.reason(third, event: "again") == .duplicateEvent)
            let disabled = try await a.respond(next.offerID, .disable)
            #expect(disabled.activity.rule.enabled == false)
            try await system.advance(by: 120)
            #expect(try await a.reason(swim) == .ruleDisabled)

            let stats = try await a.service.getOfferStats(
                .with {
                    $0.from = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(-60))
                    $0.to = Google_Protobuf_Timestamp(date: at("2026-06-02T00:00:00Z"))
                },
                a.context
            )
            #expect(stats.eligible == 2)
            let suppressed = Dictionary(uniqueKeysWithValues: stats.suppressed.map { ($0.reason, $0.count) })
            #expect(suppressed == [.dailyCap: 2, .duplicateEvent: 1, .ruleDisabled: 1])
            let shown = Dictionary(uniqueKeysWithValues: stats.shown.map { ($0.channel, $0.count) })
            #expect(shown == [.notification: 2, .inApp: 1])
            #expect(
                Dictionary(uniqueKeysWithValues: stats.actions.map { ($0.action, $0.count) }) == [
                    .markDone: 1, .snooze15: 1, .disable: 1,
                ]
            )
        }
    }

    @Test("geofences best first under the limit, with how many were left out")
    func geofences() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let low = try await a.create("Low", priority: 1)
            let high = try await a.create("High", priority: 3)
            let off = try await a.create("Off", priority: 3)
            let done = try await a.create("Done", priority: 3)
            let newer = try await a.create("Newer low", priority: 1)
            _ = try await a.create("No rule", priority: 3)
            try await a.rule(low)
            try await a.rule(high)
            try await a.rule(off, enabled: false)
            try await a.rule(done)
            _ = try await a.service.completeActivity(.with { $0.activityID = done }, a.context)
            try await system.advance(by: 1)
            try await a.rule(newer)
            let fences = try await a.service.listGeofences(.with { $0.max = 3 }, a.context)
            #expect(fences.geofences.map(\.activityID) == [high, newer, low])
            #expect(fences.leftOut == 2)
            #expect(
                try await a.service.listGeofences(.init(), a.context).geofences.map(\.activityID) == [
                    high, newer, low, done, off,
                ]
            )
            await expectCode(.invalidArgument) {
                _ = try await a.service.listGeofences(.with { $0.max = 101 }, a.context)
            }
            for n in 0..<20 {
                try await a.rule(try await a.create("More \(n)"))
            }
            let byDefault = try await a.service.listGeofences(.init(), a.context)
            #expect(byDefault.geofences.count == 20 && byDefault.leftOut == 5, "20 when max is 0")
            let all = try await a.service.listGeofences(.with { $0.max = 100 }, a.context)
            #expect(all.geofences.count == 25 && all.leftOut == 0)
        }
    }

    @Test("a user has at most 200 activities; the 201st is RESOURCE_EXHAUSTED until one is deleted")
    func activityCap() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            var ids: [String] = []
            for index in 0..<OfferRules.maxActivities { ids.append(try await a.create("Activity \(index)")) }
            await expectCode(.resourceExhausted) { _ = try await a.create("One more") }
            _ = try await Activities(system: system, user: "ben").create("His own")
            _ = try await a.service.deleteActivity(.with { $0.activityID = ids[0] }, a.context)
            _ = try await a.create("In its place")
            await expectCode(.resourceExhausted) { _ = try await a.create("One more") }
            #expect(try await a.service.listActivities(.init(), a.context).activities.count == OfferRules.maxActivities)
        }
    }

    @Test("others get NOT_FOUND; bad fields are named")
    func strangersAndValidation() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let ben = Activities(system: system, user: "ben")
            let gymID = try await a.create()
            try await a.rule(gymID)
            guard case .offer(let offer)? = try await a.report(gymID).decision else {
                Issue.record("no offer")
                return
            }
            await expectCode(.notFound) {
                _ = try await ben.service.getActivity(.with { $0.activityID = gymID }, ben.context)
            }
            await expectCode(.notFound) { _ = try await ben.report(gymID) }
            await expectCode(.notFound) { _ = try await ben.rule(gymID) }
            await expectCode(.notFound) { _ = try await ben.respond(offer.offerID, .markDone) }
            await expectCode(.notFound) {
                _ = try await ben.service.completeActivity(.with { $0.activityID = gymID }, ben.context)
            }
            await expectCode(.notFound) {
                _ = try await ben.service.deleteActivity(.with { $0.activityID = gymID }, ben.context)
            }
            #expect(try await ben.pending().isEmpty)
            #expect(try await ben.service.listActivities(.init(), ben.context).activities.isEmpty)

            #expect(await violatedFields { try await a.rule(gymID, radius: 24) } == ["place.radius_m"])
            #expect(await violatedFields { try await a.rule(gymID, radius: 5001) } == ["place.radius_m"])
            #expect(await violatedFields { try await a.rule(gymID, radius: 25) }.isEmpty)
            #expect(await violatedFields { try await a.rule(gymID, radius: 5000, delay: 120, cooldown: 1440) }.isEmpty)
            #expect(await violatedFields { try await a.rule(gymID, delay: 121) } == ["delay_minutes"])
            #expect(await violatedFields { try await a.rule(gymID, cooldown: 0) } == ["cooldown_minutes"])
            #expect(await violatedFields { try await a.rule(gymID, trigger: .unspecified) } == ["trigger"])
            #expect(
                await violatedFields { _ = try await a.report(gymID, position: (91, 0, 10)) } == ["position.latitude"]
            )
            #expect(
                await violatedFields { _ = try await a.report(gymID, position: (0, 0, 10_001)) } == [
                    "position.accuracy_m"
                ]
            )
            #expect(await violatedFields { _ = try await a.report(gymID, event: "") } == ["client_event_id"])
            #expect(await violatedFields { try await a.preferences(cap: 21) } == ["daily_cap"])
            #expect(
                await violatedFields { try await a.preferences(quiet: ("25:00", "07:00")) } == ["quiet_hours.start"]
            )
            #expect(await violatedFields { try await a.preferences(quiet: ("07:00", "07:00")) } == ["quiet_hours.end"])
            #expect(await violatedFields { try await a.preferences(zone: "EST") } == ["time_zone"])
            #expect(await violatedFields { _ = try await a.create(" ") } == ["title"])
            #expect(await violatedFields { _ = try await a.create(priority: 4) } == ["priority"])
            #expect(await violatedFields { try await a.rule(gymID, cooldown: 1441) } == ["cooldown_minutes"])
            #expect(
                await violatedFields { try await a.rule(gymID, label: String(repeating: "l", count: 101)) } == [
                    "place.label"
                ]
            )
            #expect(await violatedFields { try await a.rule(gymID, label: String(repeating: "l", count: 100)) }.isEmpty)
            #expect(try await a.rule(gymID, radius: 0).rule.place.radiusM == 150, "0 means the default radius")
            #expect(await violatedFields { try await a.preferences(cap: 0) } == ["daily_cap"])
            #expect(await violatedFields { try await a.preferences(cap: 20) }.isEmpty)
            #expect(await violatedFields { try await a.preferences(cooldown: 0) } == ["default_cooldown_minutes"])
            #expect(await violatedFields { try await a.preferences(cooldown: 1441) } == ["default_cooldown_minutes"])
            #expect(await violatedFields { try await a.preferences(cooldown: 1440) }.isEmpty)
            #expect(await violatedFields { try await a.preferences(spacing: 1441) } == ["min_spacing_minutes"])
            #expect(await violatedFields { try await a.preferences(spacing: 0) }.isEmpty)
            #expect(await violatedFields { _ = try await a.report(gymID, position: (0, 0, 10_000)) }.isEmpty)
            #expect(
                await violatedFields { _ = try await a.report(gymID, event: String(repeating: "e", count: 101)) } == [
                    "client_event_id"
                ]
            )
            #expect(
                await violatedFields { _ = try await a.report(gymID, event: String(repeating: "e", count: 100)) }
                    .isEmpty
            )
            #expect(await violatedFields { _ = try await a.create(String(repeating: "t", count: 201)) } == ["title"])
            #expect(await violatedFields { _ = try await a.create(String(repeating: "t", count: 200)) }.isEmpty)
            let stats = { (days: Double) in
                _ = try await a.service.getOfferStats(
                    .with {
                        $0.from = Google_Protobuf_Timestamp(date: noon)
                        $0.to = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(days * 86_400))
                    },
                    a.context
                )
            }
            #expect(await violatedFields { try await stats(366) }.isEmpty)
            #expect(await violatedFields { try await stats(366.001) } == ["to"])
            #expect(await violatedFields { try await stats(0) } == ["to"])
            let defaults = try await ben.service.getOfferPreferences(.init(), ben.context)
            #expect(
                defaults.dailyCap == 2 && defaults.minSpacingMinutes == 360 && defaults.defaultCooldownMinutes == 120
            )
        }
    }
}

@Suite("Activities: history")
struct ActivityHistoryTests {
    @Test("location events, repeats and offers older than 400 days are deleted, user by user, in bounded transactions")
    func prunesOldHistory() async throws {
        let store = ActivityStore(base: try TaskStore(location: .inMemory).base)
        let now = at("2027-06-01T12:00:00Z")
        let old = now.addingTimeInterval(-ActivityStore.historyRetention - 1)
        let kept = now.addingTimeInterval(-ActivityStore.historyRetention + 60)
        try await store.base.writer.write { db in
            for user in ["ana", "bo", "cy"] {
                for (index, time) in [old, old, old, old, kept].enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO location_event (user_id, client_event_id, activity_id, trigger, occurred_at,
                                received_at, reason)
                            VALUES (?, ?, 'a', 1, ?, ?, 0)
                            """,
                        arguments: [user, "e\(index)", time, time]
                    )
                    try db.execute(
                        sql: """
                            INSERT INTO location_event_repeat (user_id, client_event_id, occurred_at, received_at)
                            VALUES (?, ?, ?, ?)
                            """,
                        arguments: [user, "e\(index)", time, time]
                    )
                    try db.execute(
                        sql: """
                            INSERT INTO offer (id, user_id, activity_id, title, channel, occurred_at, deliver_at,
                                created_at, snoozed)
                            VALUES (?, ?, 'a', 'Gym', 1, ?, ?, ?, 0)
                            """,
                        arguments: ["\(user)-\(index)", user, time, time, time]
                    )
                }
            }
        }
        // Three rows a transaction: every user is cut short once and taken up again.
        let deleted = try await store.pruneHistory(now: now, usersPerBatch: 2, rowsPerTransaction: 3)
        #expect(deleted == ["location_event": 12, "location_event_repeat": 12, "offer": 12])
        let left = try await store.base.writer.read { db in
            try ["location_event", "location_event_repeat", "offer"].map { table in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE user_id IN ('ana', 'bo', 'cy')") ?? 0
            }
        }
        #expect(left == [3, 3, 3], "each user's recent row of each table stays")
        #expect(try await store.pruneHistory(now: now).values.allSatisfy { $0 == 0 }, "nothing more to delete")
    }
}
