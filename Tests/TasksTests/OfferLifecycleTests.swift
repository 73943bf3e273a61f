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
            // Run's second event came right after its first: the cooldown, which counts from the
            // last event seen, stopped it before the cap could.
            #expect(suppressed == [.dailyCap: 1, .eventCooldown: 1, .duplicateEvent: 1, .ruleDisabled: 1])
            let shown = Dictionary(uniqueKeysWithValues: stats.shown.map { ($0.channel, $0.count) })
            #expect(shown == [.notification: 2, .inApp: 1])
            #expect(
                Dictionary(uniqueKeysWithValues: stats.actions.map { ($0.action, $0.count) }) == [
                    .markDone: 1, .snooze15: 1, .disable: 1,
                ]
            )
        }
    }

    @Test("geofences: only places that can fire, higher priority first, under the limit, with how many were left out")
    func geofences() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let low = try await a.create("Low", priority: 1)
            let high = try await a.create("High", priority: 3)
            let off = try await a.create("Off", priority: 3)
            let done = try await a.create("Done", priority: 3)
            let doneAnyway = try await a.create("Done, offered anyway", priority: 2)
            let newer = try await a.create("Newer low", priority: 1)
            _ = try await a.create("No rule", priority: 3)
            try await a.rule(low)
            try await a.rule(high)
            try await a.rule(off, enabled: false)
            try await a.rule(done)
            try await a.rule(doneAnyway, onlyIfIncomplete: false)
            for id in [done, doneAnyway] {
                _ = try await a.service.completeActivity(.with { $0.activityID = id }, a.context)
            }
            try await system.advance(by: 1)
            try await a.rule(newer)
            let fences = try await a.service.listGeofences(.with { $0.max = 3 }, a.context)
            #expect(fences.geofences.map(\.activityID) == [high, doneAnyway, newer])
            #expect(fences.leftOut == 1)
            #expect(
                try await a.service.listGeofences(.init(), a.context).geofences.map(\.activityID) == [
                    high, doneAnyway, newer, low,
                ],
                "a disabled rule and a done activity take no geofence"
            )
            await expectCode(.invalidArgument) {
                _ = try await a.service.listGeofences(.with { $0.max = 101 }, a.context)
            }
            for n in 0..<20 {
                try await a.rule(try await a.create("More \(n)"))
            }
            let byDefault = try await a.service.listGeofences(.init(), a.context)
            #expect(byDefault.geofences.count == 20 && byDefault.leftOut == 4, "20 when max is 0")
            let all = try await a.service.listGeofences(.with { $0.max = 100 }, a.context)
            #expect(all.geofences.count == 24 && all.leftOut == 0)

            // Offers off: nothing to watch.
            try await a.preferences(enabled: false)
            let none = try await a.service.listGeofences(.with { $0.max = 100 }, a.context)
            #expect(none.geofences.isEmpty && none.leftOut == 0)
        }
    }

    @Test("a DAILY activity done today takes no geofence until the next day in the user's zone")
    func dailyGeofenceBackTomorrow() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(zone: "America/New_York")
            let gymID = try await a.create("Gym workout", repeat: .daily)
            try await a.rule(gymID)
            let watched = { try await a.service.listGeofences(.init(), a.context).geofences.map(\.activityID) }
            #expect(try await watched() == [gymID])
            _ = try await a.service.completeActivity(.with { $0.activityID = gymID }, a.context)
            #expect(try await watched().isEmpty)
            // noon in New York: midnight there is 12 hours on.
            try await system.advance(by: 12 * 3600 - 60)
            #expect(try await watched().isEmpty, "still the same day in New York")
            try await system.advance(by: 120)
            #expect(try await watched() == [gymID])
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
            try await a.preferences()
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
