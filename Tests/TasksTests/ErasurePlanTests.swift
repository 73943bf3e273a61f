import Foundation
import Testing

@testable import TasksService

/// The rules of an account erasure's parts (``ErasurePlan``), without a store or a peer.
@Suite("Tasks: the plan of an account erasure")
struct ErasurePlanTests {
    static let requested = Date(timeIntervalSince1970: 1_780_000_000)

    /// The step of `service` in `steps`.
    static func step(_ service: ErasedService, in steps: [ErasureStep]) throws -> ErasureStep {
        try #require(steps.first { $0.service == service })
    }

    /// The services whose part is due (has a due time) in `steps`.
    static func due(_ steps: [ErasureStep]) -> Set<ErasedService> {
        Set(steps.filter { !$0.isDone && $0.nextAttemptAt != nil }.map(\.service))
    }

    @Test("checkins waits for nothing and routines waits for checkins: its nests are erased first")
    func order() {
        #expect(ErasedService.checkins.waitsFor == [])
        #expect(ErasedService.routines.waitsFor == [.checkins])
        #expect(ErasedService.safety.waitsFor == [] && ErasedService.tasks.waitsFor == [])
    }

    @Test("a request does tasks' part, makes checkins' and safety's due at once, and routines' wait")
    func start() throws {
        let steps = ErasurePlan.start(for: "olivia", at: Self.requested)
        #expect(steps.map(\.service) == ErasedService.allCases)
        #expect(try Self.step(.tasks, in: steps).doneAt == Self.requested)
        #expect(try Self.step(.checkins, in: steps).nextAttemptAt == Self.requested)
        #expect(try Self.step(.safety, in: steps).nextAttemptAt == Self.requested)
        let routines = try Self.step(.routines, in: steps)
        #expect(routines.nextAttemptAt == nil && !routines.isDone, "routines waits for checkins")
    }

    @Test("routines' part falls due when checkins' is done, not before; a failure of checkins' keeps it waiting")
    func routinesAfterCheckins() throws {
        let started = ErasurePlan.start(for: "olivia", at: Self.requested)
        let safetyDone = ErasurePlan.done(.safety, in: started, at: Self.requested.addingTimeInterval(1))
        #expect(Self.due(safetyDone) == [.checkins], "safety's part frees nothing")

        let checkins = try Self.step(.checkins, in: safetyDone)
        let failed = ErasurePlan.failed(checkins, because: "UNAVAILABLE", at: Self.requested.addingTimeInterval(2))
        #expect(failed.nextAttemptAt == Self.requested.addingTimeInterval(3), "tried again after 1 s")
        let afterFailure = safetyDone.map { $0.service == .checkins ? failed : $0 }
        #expect(try Self.step(.routines, in: afterFailure).nextAttemptAt == nil, "routines still waits")

        let doneAt = Self.requested.addingTimeInterval(10)
        let checkinsDone = ErasurePlan.done(.checkins, in: afterFailure, at: doneAt)
        #expect(try Self.step(.checkins, in: checkinsDone).doneAt == doneAt)
        #expect(try Self.step(.routines, in: checkinsDone).nextAttemptAt == doneAt, "routines is due at once")
        #expect(Self.due(checkinsDone) == [.routines])

        let all = ErasurePlan.done(.routines, in: checkinsDone, at: doneAt.addingTimeInterval(1))
        #expect(ErasurePlan.startsAnew(all), "every part done")
    }

    /// An erasure as the earlier order recorded it: tasks' part done, the others as given.
    static func recorded(
        checkins: (done: Bool, next: Date?),
        routines: (done: Bool, next: Date?),
        safetyDone: Bool
    ) -> [ErasureStep] {
        let at = { (offset: TimeInterval) in Self.requested.addingTimeInterval(offset) }
        return [
            ErasureStep(
                user: "olivia",
                service: .checkins,
                requestedAt: at(0),
                doneAt: checkins.done ? at(5) : nil,
                attempts: checkins.done ? 1 : 2,
                nextAttemptAt: checkins.next,
                lastError: checkins.done ? "" : "down"
            ),
            ErasureStep(
                user: "olivia",
                service: .tasks,
                requestedAt: at(0),
                doneAt: at(0),
                attempts: 1,
                nextAttemptAt: nil,
                lastError: ""
            ),
            ErasureStep(
                user: "olivia",
                service: .safety,
                requestedAt: at(0),
                doneAt: safetyDone ? at(1) : nil,
                attempts: 1,
                nextAttemptAt: safetyDone ? nil : at(2),
                lastError: ""
            ),
            ErasureStep(
                user: "olivia",
                service: .routines,
                requestedAt: at(0),
                doneAt: routines.done ? at(1) : nil,
                attempts: routines.done ? 1 : 3,
                nextAttemptAt: routines.next,
                lastError: routines.done ? "" : "down"
            ),
        ]
    }

    @Test(
        "an erasure recorded in the earlier order (routines first) is put in the new one: checkins due, routines made again after it"
    )
    func reordered() throws {
        let now = Self.requested.addingTimeInterval(100)
        let retry = Self.requested.addingTimeInterval(40)

        // Routines done first, checkins waiting with no due time: checkins falls due; routines,
        // done before checkins erased the nests, is made again after it.
        let routinesDone = Self.recorded(
            checkins: (false, nil),
            routines: (true, nil),
            safetyDone: true
        )
        let first = ErasurePlan.reordered(routinesDone, at: now)
        #expect(try Self.step(.checkins, in: first).nextAttemptAt == now)
        let reopened = try Self.step(.routines, in: first)
        #expect(!reopened.isDone && reopened.nextAttemptAt == nil && reopened.attempts == 1)
        #expect(Self.due(first) == [.checkins])
        // And then it ends, in the new order.
        let checkinsDone = ErasurePlan.done(.checkins, in: first, at: now.addingTimeInterval(1))
        #expect(Self.due(checkinsDone) == [.routines])
        #expect(ErasurePlan.startsAnew(ErasurePlan.done(.routines, in: checkinsDone, at: now.addingTimeInterval(2))))

        // The same, checkins' part failing with a retry set: it keeps its retry.
        let checkinsRetrying = Self.recorded(
            checkins: (false, retry),
            routines: (true, nil),
            safetyDone: true
        )
        let second = ErasurePlan.reordered(checkinsRetrying, at: now)
        #expect(try Self.step(.checkins, in: second).nextAttemptAt == retry)
        #expect(try Self.step(.routines, in: second).isDone == false)

        // Routines pending (retrying), checkins waiting: checkins due, routines waits for it,
        // keeping its count; safety's retry untouched.
        let routinesPending = Self.recorded(
            checkins: (false, nil),
            routines: (false, retry),
            safetyDone: false
        )
        let third = ErasurePlan.reordered(routinesPending, at: now)
        #expect(try Self.step(.checkins, in: third).nextAttemptAt == now)
        let waiting = try Self.step(.routines, in: third)
        #expect(waiting.nextAttemptAt == nil && waiting.attempts == 3)
        #expect(try Self.step(.safety, in: third) == Self.step(.safety, in: routinesPending))

        // What follows the order already comes back as it was.
        let started = ErasurePlan.start(for: "olivia", at: Self.requested)
        #expect(ErasurePlan.reordered(started, at: now) == started)
        let checkinsDoneNow = ErasurePlan.done(.checkins, in: started, at: now)
        #expect(ErasurePlan.reordered(checkinsDoneNow, at: now.addingTimeInterval(5)) == checkinsDoneNow)
        let finished = Self.recorded(checkins: (true, nil), routines: (true, nil), safetyDone: true)
        #expect(ErasurePlan.reordered(finished, at: now) == finished)
    }

    @Test("routines is called with at most 1,000 nest ids a call, every id once, in order; once with none when none")
    func routinesCalls() {
        #expect(ErasurePlan.routinesCalls(for: []) == [[]])
        #expect(ErasurePlan.routinesCalls(for: ["a", "b"]) == [["a", "b"]])
        let exactly = (0..<1_000).map { "nest-\($0)" }
        #expect(ErasurePlan.routinesCalls(for: exactly) == [exactly])
        let many = (0..<2_345).map { "nest-\($0)" }
        let calls = ErasurePlan.routinesCalls(for: many)
        #expect(calls.map(\.count) == [1_000, 1_000, 345])
        #expect(calls.flatMap { $0 } == many)
    }
}
