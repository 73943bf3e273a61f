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

@Suite("Activities: deciding on offers", .timeLimit(.minutes(1)))
struct OfferDecisionTests {
    @Test("the checks in order, each at its boundary")
    func suppressionBoundaries() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let gymID = try await a.create()
            #expect(try await a.reason(gymID) == .disabled, "offers are off until turned on")
            try await a.preferences()
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
            // The cooldown counts from the last event seen (the one just suppressed), not from
            // the offer.
            try await system.advance(by: 1)
            #expect(try await a.reason(gymID) == .eventCooldown, "an hour after the offer, a second after an event")
            try await system.advance(by: 3599)
            #expect(try await a.reason(gymID) == .eventCooldown)
            try await system.advance(by: 3600)
            #expect(try await a.reason(gymID) == nil, "60 minutes after the last event the cooldown is over")
            try await a.rule(gymID, cooldown: 10)
            try await system.advance(by: 600)
            #expect(try await a.reason(gymID) == nil, "the rule's own cooldown wins over the default")

            // ALREADY_DONE, unless the rule offers whatever the state; the cooldown is checked first.
            _ = try await a.service.completeActivity(.with { $0.activityID = gymID }, a.context)
            try await system.advance(by: 599)
            #expect(try await a.reason(gymID) == .eventCooldown)
            try await system.advance(by: 600)
            #expect(try await a.reason(gymID) == .alreadyDone)
            try await a.rule(gymID, cooldown: 10, onlyIfIncomplete: false)
            try await system.advance(by: 600)
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

    @Test(
        "a boundary bouncing through quiet hours makes no offer the moment they end: the cooldown runs from its last event"
    )
    func bounceThroughQuietHours() async throws {
        try await withTasksSystem(now: at("2026-06-02T10:40:00Z")) { system in  // 06:40 in New York
            let a = Activities(system: system)
            try await a.preferences(cooldown: 30, quiet: ("22:00", "07:00"))
            let gymID = try await a.create()
            try await a.rule(gymID)
            // Every 10 minutes through the end of quiet hours at 07:00.
            #expect(try await a.reason(gymID) == .quietHours)  // 06:40
            try await system.advance(by: 600)
            #expect(try await a.reason(gymID) == .eventCooldown)  // 06:50
            try await system.advance(by: 600)
            #expect(try await a.reason(gymID) == .eventCooldown, "07:00: quiet hours are over, the bounce is not")
            try await system.advance(by: 30 * 60 - 1)
            #expect(try await a.reason(gymID) == .eventCooldown)
            try await system.advance(by: 30 * 60)
            #expect(try await a.reason(gymID) == nil, "30 minutes after the last event: an offer")
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
