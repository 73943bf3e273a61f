import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Limits of the safety switch pinned at their boundary: the last value accepted and the first
/// refused.
@Suite("Safety boundaries", .timeLimit(.minutes(2)), .serialized)
struct SafetyBoundaryTests {
    @Test("a late activity from before an alarm ends it when the period it starts has more than 3 h left, not at 3 h")
    func lateActivityBoundary() {
        let alarm = SafetySystem.start
        let received = alarm + 3600
        // With a 24 h threshold, an activity at t starts a period ending at t + 24 h, and
        // received + 3 h is alarm - 20 h.
        let edge = alarm - 20 * 3600
        func ends(_ activity: Date) -> Bool {
            SafetyRules.lateActivityEndsAlarm(
                activityAt: activity,
                alarmDecidedAt: alarm,
                thresholdHours: 24,
                receivedAt: received
            )
        }
        #expect(!ends(edge), "its period would end 3 h from now")
        #expect(ends(edge + 0.001))
        #expect(ends(alarm), "from the moment the alarm was decided")
    }

    @Test("Pause: exactly 30 days ahead is accepted; 30 days and 1 s is refused with a violation on until")
    func pauseBoundary() async throws {
        try await withSafetySystem { system in
            try await system.profile()
            try await system.settle()
            // A whole second: the service's now (to the millisecond) is exactly the clock's.
            let now = system.clock.now()
            #expect(now == SafetySystem.start)
            #expect(SafetyRules.maxPause == 30 * 86_400)

            var pause = Hearth_Safety_V1_PauseRequest()
            pause.until = Google_Protobuf_Timestamp(date: now + 30 * 86_400 + 1)
            let fields = await violatedFields { _ = try await system.service.pause(pause, callContext("mei")) }
            #expect(fields == ["until"])
            #expect(try await system.status().state != .paused, "the refused pause changed nothing")

            pause.until = Google_Protobuf_Timestamp(date: now + 30 * 86_400)
            let paused = try await system.service.pause(pause, callContext("mei"))
            #expect(paused.state == .paused)
            #expect(paused.pausedUntil.date == now + 30 * 86_400)
        }
    }

    @Test("heartbeats 4.999 s after a recorded one collapse into it; one exactly 5 s after it is a new check-in")
    func coalesceBoundary() async throws {
        try await withSafetySystem { system in
            try await system.profile()
            #expect(SafetyRules.coalesceWindow == 5)
            // A minute after the profile was made, so that the first one is certainly recorded.
            let recordedAt = SafetySystem.start + 60
            system.clock.set(recordedAt)
            let first = try await system.checkIn(id: "c1")
            #expect(first.lastCheckInAt.date == recordedAt)

            system.clock.set(recordedAt + 4.999)
            let collapsed = try await system.checkIn(id: "c2")
            #expect(collapsed.lastCheckInAt == first.lastCheckInAt, "answered as the check-in it collapsed into")
            #expect(collapsed.deadline == first.deadline)

            // Had the 4.999 s one been recorded, this one (1 ms after it) would collapse into it.
            system.clock.set(recordedAt + 5)
            let recorded = try await system.checkIn(id: "c3")
            #expect(recorded.lastCheckInAt.date == recordedAt + 5)
            #expect(recorded.deadline != first.deadline)
            #expect(try await system.status().lastCheckInAt == recorded.lastCheckInAt)
        }
    }
}
