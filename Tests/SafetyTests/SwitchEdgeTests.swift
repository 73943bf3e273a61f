import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthScheduler
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Edges of the switch that a review of the safety service found wrong: each test failed
/// before its fix.
@Suite("Safety switch: edges", .timeLimit(.minutes(2)), .serialized)
struct SwitchEdgeTests {
    let hour: TimeInterval = 3600

    @Test(
        "the first confirmed contact arms the switch with a new period: no alarm for the days before it",
        arguments: StoreKind.allCases
    )
    func firstContactStartsThePeriod(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            let t0 = system.clock.now()
            try await system.advance(to: t0 + 30 * hour)
            #expect(try await system.status().state == .notArmed)
            try await system.addConfirmedContact("brother@example.com")
            let status = try await system.status()
            #expect(status.state == .normal)
            #expect(status.deadline.date == t0 + 54 * hour, "24 h from when it was armed")
            #expect(try system.emails().isEmpty && system.pushes().isEmpty)
        }
    }

    @Test(
        "raising the threshold mid-period: the new deadline gets all three warnings again",
        arguments: StoreKind.allCases
    )
    func raisedThresholdWarnsAgain(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 21 * hour)
            try await system.advance(to: t0 + 23 * hour)
            try await eventually("the 3 h and 1 h warnings") { try system.pushes().count == 2 }
            try await system.profile(threshold: 72, contacts: [])
            try await system.settle()
            try await system.advance(to: t0 + 69 * hour)
            try await system.advance(to: t0 + 71 * hour)
            try await system.advance(to: t0 + 72 * hour - 600)
            try await eventually("three warnings for the new deadline") { try system.pushes().count == 5 }
            #expect(try system.pushes().suffix(3) == ["safety.warning_180", "safety.warning_60", "safety.warning_10"])
            // The period (since the last check-in) holds every warning sent in it.
            #expect(try await system.status().warnings.map(\.minutesBefore) == [180, 60, 180, 60, 10])
            #expect(try system.emails().isEmpty)
        }
    }

    @Test(
        "a threshold changed after the alarm went out never sends it again; the next check-in clears it",
        arguments: StoreKind.allCases
    )
    func thresholdChangeAfterAlarm(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 24 * hour)
            try await eventually("the alarm") { try system.emails().count == 1 }
            let warnings = try system.pushes().count
            try await system.advance(to: t0 + 50 * hour)
            try await system.profile(threshold: 48, contacts: [])
            try await system.settle()
            try await system.profile(threshold: 72, contacts: [])
            try await system.advance(to: t0 + 80 * hour)
            #expect(try system.emails().count == 1, "not sent again for the new deadline")
            #expect(try system.pushes().count == warnings, "no warnings for it either")
            try await system.checkIn()
            try await system.settle()
            try await eventually("the all-clear") { try system.emails().count == 2 }
        }
    }

    @Test("replacing the only contact never moves a snoozed deadline earlier", arguments: StoreKind.allCases)
    func replacedContactKeepsTheDeadline(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            for _ in 0..<2 { _ = try await system.service.snooze(Hearth_Safety_V1_SnoozeRequest(), callContext("mei")) }
            #expect(try await system.status().deadline.date == t0 + 72 * hour)
            try await system.advance(to: t0 + 10 * hour)
            let contact = try #require(
                try await system.service.listContacts(.init(), callContext("mei")).contacts.first
            )
            _ = try await system.service.removeContact(.with { $0.contactID = contact.id }, callContext("mei"))
            try await system.addConfirmedContact("sister@example.com")
            let status = try await system.status()
            #expect(status.deadline.date == t0 + 82 * hour && status.snoozes == 2, "armed again from now, snoozes kept")
        }
    }

    @Test(
        "a check-in after a snooze wakes the scheduler: the earlier deadline's warnings come on time",
        arguments: StoreKind.allCases
    )
    func checkInAfterSnoozeWakesTheScheduler(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            for _ in 0..<2 { _ = try await system.service.snooze(Hearth_Safety_V1_SnoozeRequest(), callContext("mei")) }
            try await system.settle()  // the decider now waits for 69 h, the first warning of the snoozed deadline
            // The clock is moved without waking anyone by hand (as `advance` would): only the
            // check-in can tell the decider that the deadline came 28 h nearer.
            system.clock.set(t0 + 20 * hour)
            #expect(try await system.checkIn().deadline.date == t0 + 44 * hour)
            try await eventually("the decider looked again") { system.service.decider.hasHandled(upTo: t0 + 20 * hour) }
            system.clock.set(t0 + 41 * hour)
            try await eventually("the 3 h warning of the new deadline") {
                try system.pushes() == ["safety.warning_180"]
            }
        }
    }

    @Test(
        "an activity forwarded late, from before a resume began the period, does not move the deadline back",
        arguments: StoreKind.allCases
    )
    func lateForwardBeforeThePeriod(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            _ = try await system.service.store.upsertProfile("mei") { $0.countActivity = true }
            system.clock.set(t0 + 1 * hour)
            _ = try await system.service.pause(
                .with { $0.until = Google_Protobuf_Timestamp(date: t0 + 100 * hour) },
                callContext("mei")
            )
            system.clock.set(t0 + 3 * hour)
            let resumed = try await system.service.resume(Hearth_Safety_V1_ResumeRequest(), callContext("mei"))
            #expect(resumed.deadline.date == t0 + 27 * hour)
            // A routine ticked at 2 h, while paused, reaches safety only now (its relay was behind).
            system.clock.set(t0 + 4 * hour)
            let late = try await system.service.store.recordHeartbeat(
                "mei",
                timeZone: nil,
                deviceInfo: "",
                requestID: "routines:tick-1",
                source: "routines",
                occurredAt: t0 + 2 * hour
            )
            #expect(late.status?.message(now: system.clock.now()).deadline.date == t0 + 27 * hour)
            #expect(try await system.status().deadline.date == t0 + 27 * hour, "not 26 h, from the tick")
            // One from within the period counts from when it happened.
            let counted = try await system.service.store.recordHeartbeat(
                "mei",
                timeZone: nil,
                deviceInfo: "",
                requestID: "routines:tick-2",
                source: "routines",
                occurredAt: t0 + 3.5 * hour
            )
            #expect(counted.status?.message(now: system.clock.now()).deadline.date == t0 + 27.5 * hour)
        }
    }

    @Test(
        "an activity from before the alarm, forwarded after it went out, ends it only if the period it starts has time left"
    )
    func lateForwardAfterTheAlarm() async throws {
        try await withSafetySystem { system in
            try await system.profile(threshold: 24, countActivity: true)
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 24 * hour)
            try await eventually("the alarm") { try system.emails().count == 1 }
            // Prompts answered at 1 h and at 3.5 h reach safety only at 25 h (the tasks service was
            // down): periods from them would end at 25 h and 27.5 h, at once or within 3 h.
            system.clock.set(t0 + 25 * hour)
            #expect(try await system.forwardTaskAnswer("answer-1", at: t0 + 1 * hour) == false)
            #expect(try await system.forwardTaskAnswer("answer-2", at: t0 + 3.5 * hour) == false)
            try await system.settle()
            try await system.advance(to: t0 + 26 * hour)
            #expect(try system.emails().count == 1, "no all-clear, and not the alarm again")
            #expect(try await system.status().state == .expired)
            // One from 22.5 h, before the alarm too: the person was alive then, and its period has
            // 20.5 h left. The alarm was a false one after all: the all-clear.
            #expect(try await system.forwardTaskAnswer("answer-3", at: t0 + 22.5 * hour))
            try await system.settle()
            try await eventually("the all-clear") { try system.emails().count == 2 }
            #expect(try system.emails()[1].subject.hasPrefix("All clear"))
            #expect(try await system.status().deadline.date == t0 + 46.5 * hour)
        }
    }

    @Test(
        "the daily reminder comes before any contact, in the plan's words; arming the switch sends none more",
        arguments: StoreKind.allCases
    )
    func reminderBeforeContacts(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            // 2026-03-10 05:00 in Los Angeles, the reminder at 06:00, no contact yet.
            try await system.profile(threshold: 72, contacts: [], reminder: (6, 0))
            let t0 = system.clock.now()
            let reminders = { try system.pushes().filter { $0 == "safety.reminder" }.count }
            try await system.advance(to: t0 + hour - 1)
            #expect(try reminders() == 0)
            try await system.advance(to: t0 + hour)
            try await eventually("the first reminder, no contact needed") { try reminders() == 1 }
            let push = try #require(
                try system.webhook.received.compactMap {
                    try JSONSerialization.jsonObject(with: $0.body) as? [String: Any]
                }.first { $0["kind"] as? String == "safety.reminder" }
            )
            #expect(push["body"] as? String == "Time to check in! Give a smile to those who care about you.")
            #expect(push["title"] as? String == "Daily check-in")
            // One a day, the 10th to the 13th; no warning and no alarm without a contact.
            for day in 1...3 {
                try await system.advance(to: t0 + Double(1 + 24 * day) * hour)
                try await eventually("day \(day)'s reminder") { try reminders() == day + 1 }
            }
            try await system.advance(to: t0 + 80 * hour)
            #expect(try system.pushes().allSatisfy { $0 == "safety.reminder" } && system.emails().isEmpty)
            #expect(try reminders() == 4)
            try await system.addConfirmedContact("brother@example.com")
            try await system.settle()
            #expect(try reminders() == 4, "arming the switch sends none at once")
            try await system.advance(to: t0 + 97 * hour)
            try await eventually("the next day's, as before") { try reminders() == 5 }
        }
    }

    @Test("a reminder moved to a time still ahead today comes today", arguments: StoreKind.allCases)
    func reminderMovedLaterToday(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            // 05:00 in Los Angeles: 04:00 has passed (today's skipped), 06:00 is ahead.
            try await system.profile(threshold: 72, reminder: (4, 0))
            let t0 = system.clock.now()
            try await system.profile(threshold: 72, contacts: [], reminder: (6, 0))
            try await system.advance(to: t0 + hour)
            try await eventually("today's reminder at its new time") {
                try system.pushes().filter { $0 == "safety.reminder" }.count == 1
            }
        }
    }

    @Test(
        "a new zone whose reminder time has passed today starts the reminder tomorrow instead of at once",
        arguments: StoreKind.allCases
    )
    func zoneChangeAfterTodaysReminderTime(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            // 2026-03-10 05:00 in Los Angeles, reminder at 09:00; a check-in makes today's needless.
            try await system.profile(threshold: 72, reminder: (9, 0))
            let t0 = system.clock.now()
            try await system.checkIn()
            let reminders = { try system.pushes().filter { $0 == "safety.reminder" }.count }
            // 18:00 in Los Angeles: she flies to Tokyo, where it is 10:00 on the 11th, past 09:00.
            try await system.advance(to: t0 + 13 * hour)
            try await system.profile(threshold: 72, zone: "Asia/Tokyo", contacts: [], reminder: (9, 0))
            try await system.advance(to: t0 + 13 * hour + 60)
            try await system.advance(to: t0 + 36 * hour - 1)
            #expect(try reminders() == 0, "not today in Tokyo: its time had passed when the zone changed")
            try await system.advance(to: t0 + 36 * hour)
            try await eventually("the next day's reminder, at 09:00 in Tokyo") { try reminders() == 1 }
        }
    }

    @Test(
        "a check-in is never refused for its zone, its device info or a missing request id",
        arguments: StoreKind.allCases
    )
    func checkInNeverRefused(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(zone: "Asia/Taipei")
            let t0 = system.clock.now()
            try await system.advance(to: t0 + 20 * hour)
            var request = Hearth_Safety_V1_RecordHeartbeatRequest()
            request.timeZone = "Mars/Olympus_Mons"
            request.deviceInfo = String(repeating: "d", count: 600)
            let status = try await system.service.recordHeartbeat(request, callContext("mei"))
            #expect(status.lastCheckInAt.date == t0 + 20 * hour && status.deadline.date == t0 + 44 * hour)
            #expect(
                try await system.service.store.profile("mei")?.timeZone == "Asia/Taipei",
                "an unknown zone is not kept"
            )
            // Two without an id are two check-ins, still coalesced within 5 s.
            try await system.advance(to: t0 + 21 * hour)
            #expect(
                try await system.service.recordHeartbeat(request, callContext("mei")).deadline.date == t0 + 45 * hour
            )
            request.clientRequestID = String(repeating: "r", count: SafetyRules.maxRequestIDCharacters + 1)
            #expect(
                await violatedFields { _ = try await system.service.recordHeartbeat(request, callContext("mei")) } == [
                    "client_request_id"
                ]
            )
        }
    }

    @Test(
        "a daily reminder turned on after today's time starts tomorrow instead of going out at once",
        arguments: StoreKind.allCases
    )
    func reminderTurnedOnLate(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            // 2026-03-10 05:00 in Los Angeles; the reminder at 04:00 there has passed today.
            try await system.profile(threshold: 72, reminder: (4, 0))
            let t0 = system.clock.now()
            let reminders = { try system.pushes().filter { $0 == "safety.reminder" }.count }
            try await system.settle()
            try await system.advance(to: t0 + 23 * hour - 1)
            #expect(try reminders() == 0, "not today: its time had passed when it was turned on")
            try await system.advance(to: t0 + 23 * hour)
            try await eventually("tomorrow's reminder") { try reminders() == 1 }
        }
    }

    @Test(
        "back up with two warnings due: only the later one goes out, with its own words",
        arguments: StoreKind.allCases
    )
    func restartSendsOnlyTheLatestWarning(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            let t0 = system.clock.now()
            try await system.settle()
            try await system.restart { system.clock.set(t0 + 23.5 * hour) }
            try await system.settle()
            try await eventually("the 1 h warning") { try system.pushes() == ["safety.warning_60"] }
            try await system.advance(to: t0 + 24 * hour - 600)
            try await eventually("the 10 min warning") { try system.pushes().count == 2 }
            #expect(try system.pushes() == ["safety.warning_60", "safety.warning_10"])
            #expect(try await system.status().warnings.map(\.minutesBefore) == [60, 10])
        }
    }
}

/// The alert outbox's edges, on the store itself: what a send that races a check-in leaves.
