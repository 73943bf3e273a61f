import Foundation
import HearthCore
import HearthScheduler
import HearthTestSupport
import Logging
import Synchronization
import Testing

/// Due items in memory; records the clock's time whenever one fires.
final class Agenda: DueWork {
    struct State {
        var pending: [String: Date] = [:]
        var fired: [(String, Date)] = []
        var failuresLeft = 0
        /// Due items a pass cannot take (as if another process held them).
        var heldElsewhere: Set<String> = []
        /// How many times its scheduler told it that it stopped.
        var stops = 0
    }

    let state = Mutex(State())

    func add(_ name: String, at date: Date) {
        self.state.withLock { $0.pending[name] = date }
    }

    var fired: [String] { self.state.withLock { $0.fired.map(\.0) } }
    var stops: Int { self.state.withLock { $0.stops } }

    func stopped() async {
        self.state.withLock { $0.stops += 1 }
    }
    var firedAt: [Date] { self.state.withLock { $0.fired.map(\.1) } }

    func nextDueTime() async throws -> Date? {
        self.state.withLock { $0.pending.values.min() }
    }

    func runDue(now: Date) async throws {
        try self.state.withLock { state in
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw CocoaError(.fileReadUnknown)
            }
            for (name, due) in state.pending.sorted(by: { $0.value < $1.value })
            where due <= now && !state.heldElsewhere.contains(name) {
                state.pending[name] = nil
                state.fired.append((name, now))
            }
        }
    }
}

/// Work with nothing due whose passes, once held, wait until released.
final class GatedWork: DueWork {
    private struct State {
        var held = false
        var waiting: CheckedContinuation<Void, Never>?
        var passUnderWay = false
        /// Each time its scheduler told it that it stopped: whether a pass was under way then.
        var stops: [Bool] = []
    }

    private let state = Mutex(State())

    var stops: [Bool] { self.state.withLock { $0.stops } }

    func stopped() async {
        self.state.withLock { $0.stops.append($0.passUnderWay) }
    }

    func hold() {
        self.state.withLock { $0.held = true }
    }

    var isWaiting: Bool { self.state.withLock { $0.waiting != nil } }

    func release() {
        let waiting = self.state.withLock { state in
            defer {
                state.held = false
                state.waiting = nil
            }
            return state.waiting
        }
        waiting?.resume()
    }

    func nextDueTime() async throws -> Date? { nil }

    func runDue(now: Date) async throws {
        guard self.state.withLock({ $0.held }) else { return }
        self.state.withLock { $0.passUnderWay = true }
        await withCheckedContinuation { continuation in
            self.state.withLock { $0.waiting = continuation }
        }
        self.state.withLock { $0.passUnderWay = false }
    }
}

@Suite("Due-time scheduler", .timeLimit(.minutes(1)))
struct DueTimeSchedulerTests {
    static let t0 = Date(timeIntervalSince1970: 1_773_144_000)

    /// Runs a scheduler over `agenda` on `clock` while `body` runs.
    func withScheduler(
        _ agenda: Agenda,
        _ clock: ManualClock,
        observingFailures observer: (@Sendable (any Error) -> Void)? = nil,
        _ body: (DueTimeScheduler) async throws -> Void
    ) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let scheduler = DueTimeScheduler(work: agenda, clock: clock, logger: logger)
        if let observer { scheduler.observeFailures(observer) }
        let running = Task { try await scheduler.run() }
        do {
            try await body(scheduler)
        } catch {
            running.cancel()
            throw error
        }
        running.cancel()
        try await running.value
    }

    /// Waits until the scheduler sleeps on the clock (a timer is set and nothing is running).
    func idle(_ clock: ManualClock, after passes: Int, _ scheduler: DueTimeScheduler) async throws {
        try await eventually("the scheduler sleeps") { scheduler.passCount > passes && clock.sleeperCount == 1 }
    }

    @Test("each item fires when the clock reaches its time, not a moment before")
    func firesOnTime() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        agenda.add("a", at: Self.t0 + 10)
        agenda.add("b", at: Self.t0 + 20)
        try await self.withScheduler(agenda, clock) { scheduler in
            try await self.idle(clock, after: 0, scheduler)
            clock.advance(by: 9.999)
            // The sleeper's deadline was not reached, so it was not woken: nothing can fire.
            #expect(clock.sleeperCount == 1)
            #expect(agenda.fired.isEmpty)
            let passes = scheduler.passCount
            clock.advance(by: 0.001)
            try await eventually("a fires") { agenda.fired == ["a"] }
            #expect(agenda.firedAt == [Self.t0 + 10])
            try await self.idle(clock, after: passes, scheduler)
            clock.set(Self.t0 + 25)
            try await eventually("b fires") { agenda.fired == ["a", "b"] }
            #expect(agenda.firedAt.last == Self.t0 + 25)
        }
    }

    @Test("wake() sets the timer to an item scheduled earlier than the one it waits for")
    func wakeForEarlier() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        agenda.add("late", at: Self.t0 + 3600)
        try await self.withScheduler(agenda, clock) { scheduler in
            try await self.idle(clock, after: 0, scheduler)
            let passes = scheduler.passCount
            agenda.add("soon", at: Self.t0 + 5)
            scheduler.wake()
            try await self.idle(clock, after: passes, scheduler)
            clock.advance(by: 5)
            try await eventually("soon fires") { agenda.fired == ["soon"] }
        }
    }

    @Test("it has not handled a wake-up until a pass that began after it has finished, the clock unmoved")
    func handledCountsWakeUps() async throws {
        let clock = ManualClock(Self.t0)
        let work = GatedWork()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let scheduler = DueTimeScheduler(work: work, clock: clock, logger: logger)
        let running = Task { try await scheduler.run() }
        try await eventually("asleep after its first pass") { scheduler.hasHandled(upTo: Self.t0) }
        work.hold()
        scheduler.wake()
        #expect(!scheduler.hasHandled(upTo: Self.t0), "woken, the pass not begun")
        try await eventually("the pass has begun") { work.isWaiting }
        #expect(!scheduler.hasHandled(upTo: Self.t0), "the pass not finished")
        work.release()
        try await eventually("handled") { scheduler.hasHandled(upTo: Self.t0) }
        running.cancel()
        _ = try? await running.value
    }

    @Test("an item left due by passes that cannot take it is looked at again after a pause, not in a spin")
    func heldElsewhereIsNotSpunOn() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        agenda.add("held", at: Self.t0)
        agenda.state.withLock { $0.heldElsewhere = ["held"] }
        try await self.withScheduler(agenda, clock) { scheduler in
            try await eventually("it has looked twice") { scheduler.passCount >= 2 }
            let before = scheduler.passCount
            try await Task.sleep(for: .milliseconds(500))
            // A pause of 50 ms between passes allows about 10; a spin, thousands.
            #expect(scheduler.passCount - before <= 20, "\(scheduler.passCount - before) passes in 0.5 s")
            agenda.state.withLock { $0.heldElsewhere = [] }
            try await eventually("taken once no longer held") { agenda.fired == ["held"] }
        }
    }

    @Test("with nothing pending it sleeps until woken")
    func nothingPending() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        try await self.withScheduler(agenda, clock) { scheduler in
            try await eventually("first pass") { scheduler.passCount == 1 }
            #expect(clock.sleeperCount == 0, "no timer without a due item")
            agenda.add("x", at: Self.t0)
            scheduler.wake()
            try await eventually("x fires") { agenda.fired == ["x"] }
        }
    }

    @Test("what became due while it was down runs at once on start, in due order")
    func overdueOnStart() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        agenda.add("second", at: Self.t0 - 10)
        agenda.add("first", at: Self.t0 - 50)
        try await self.withScheduler(agenda, clock) { _ in
            try await eventually("both fire") { agenda.fired == ["first", "second"] }
            #expect(agenda.firedAt == [Self.t0, Self.t0])
        }
    }

    @Test("stopped, asleep or during a pass, it tells its work once, after its last pass ended")
    func tellsItsWorkItStopped() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        try await self.withScheduler(agenda, clock) { scheduler in
            try await eventually("first pass") { scheduler.passCount == 1 && scheduler.isSleeping }
            #expect(agenda.stops == 0)
        }
        #expect(agenda.stops == 1, "asleep")

        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let gated = GatedWork()
        gated.hold()
        let scheduler = DueTimeScheduler(work: gated, clock: clock, logger: logger)
        let running = Task { try await scheduler.run() }
        try await eventually("a pass under way") { gated.isWaiting }
        running.cancel()
        #expect(gated.stops.isEmpty, "not while the pass runs")
        gated.release()
        try await running.value
        #expect(gated.stops == [false], "once, after the pass")
    }

    @Test("a failing pass is tried again after the retry delay, and its error goes to the failure observer")
    func retriesAfterFailure() async throws {
        let clock = ManualClock(Self.t0)
        let agenda = Agenda()
        agenda.add("a", at: Self.t0)
        agenda.state.withLock { $0.failuresLeft = 1 }
        let observed = Mutex<[String]>([])
        let observer: @Sendable (any Error) -> Void = { error in observed.withLock { $0.append("\(error)") } }
        try await self.withScheduler(agenda, clock, observingFailures: observer) { scheduler in
            try await self.idle(clock, after: 0, scheduler)
            #expect(agenda.fired.isEmpty)
            #expect(observed.withLock { $0 } == ["\(CocoaError(.fileReadUnknown))"])
            clock.advance(by: 1)
            try await eventually("a fires after the retry") { agenda.fired == ["a"] }
            #expect(observed.withLock { $0.count } == 1)
        }
    }
}
