public import Foundation
public import HearthCore
public import Logging
public import ServiceLifecycle
import Synchronization

/// What a ``DueTimeScheduler`` drives: items with due times, kept by their owner (typically a
/// table with an index on the next due time).
public protocol DueWork: Sendable {
    /// The earliest due time of anything pending (already due or not); nil when nothing is.
    func nextDueTime() async throws -> Date?
    /// Handles every item due at or before `now`. Whatever it leaves due is asked for again at
    /// once, so it may work in batches.
    func runDue(now: Date) async throws
    /// Runs once its scheduler has stopped, after its last pass, however it stopped; not cut
    /// short by the cancellation that stopped it.
    func stopped() async
}

extension DueWork {
    public func stopped() async {}
}

/// Fires due items on time without scanning: it asks the work for its earliest due time,
/// sleeps until then (on the injected clock), runs what is due, and asks again. Code that
/// schedules something earlier than what the scheduler sleeps for calls ``wake()``. On start
/// it runs at once whatever became due while the process was down.
public final class DueTimeScheduler: Service {
    private let work: any DueWork
    private let clock: any WallClock
    private let logger: Logger
    private let retryDelay: TimeInterval
    /// The longest it sleeps between passes; nil: until the next due time or a wake-up.
    private let lookAtLeastEvery: TimeInterval?
    private let signal = WakeSignal()
    private let passes = Atomic<Int>(0)
    private let sleeping = Atomic<Bool>(false)
    /// The clock reading the last finished pass ran with (seconds since 1970).
    private let lastPass = Atomic<Double>(-.infinity)
    /// Wake-ups asked for, and how many of them had come when the last finished pass began.
    private let wakes = Atomic<Int>(0)
    private let wakesHandled = Atomic<Int>(0)
    private let failureObserver = Mutex<(@Sendable (any Error) -> Void)?>(nil)
    /// How long it waits before looking again at work still due after a pass that could not
    /// take it (real time, whatever the clock).
    static let heldElsewherePause: Duration = .milliseconds(50)

    /// - Parameters:
    ///   - retryDelay: how long to wait after the work failed before trying again.
    ///   - lookAtLeastEvery: the longest sleep between passes, for work that others may make
    ///     due without waking this scheduler (processes sharing one database); nil: none.
    public init(
        work: any DueWork,
        clock: any WallClock,
        logger: Logger,
        retryDelay: TimeInterval = 1,
        lookAtLeastEvery: TimeInterval? = nil
    ) {
        self.work = work
        self.clock = clock
        self.logger = logger
        self.retryDelay = retryDelay
        self.lookAtLeastEvery = lookAtLeastEvery
    }

    /// Also tells `observer` of each error a pass fails with (its process's health hears of a
    /// store at fault this way).
    public func observeFailures(_ observer: @escaping @Sendable (any Error) -> Void) {
        self.failureObserver.withLock { $0 = observer }
    }

    /// Tells the failure observer, if any, of `error`.
    func reportFailure(_ error: any Error) {
        self.failureObserver.withLock { $0 }?(error)
    }

    /// Something may now be due earlier than the scheduler thought: look again.
    public func wake() {
        self.wakes.add(1, ordering: .releasing)
        self.signal.raise()
    }

    /// How many times it has looked for due work (tests wait on it).
    public var passCount: Int { self.passes.load(ordering: .relaxed) }

    /// Whether it is waiting for the next due time or a wake-up (not running a pass).
    public var isSleeping: Bool { self.sleeping.load(ordering: .relaxed) }

    /// Whether it sleeps after a pass that saw the clock at `time` or later and began after
    /// every ``wake()`` so far: everything due by `time` has been handled (tests wait on it
    /// after moving the clock or making something due).
    public func hasHandled(upTo time: Date) -> Bool {
        self.sleeping.load(ordering: .acquiring)
            && self.lastPass.load(ordering: .acquiring) >= time.timeIntervalSince1970
            && self.wakesHandled.load(ordering: .acquiring) == self.wakes.load(ordering: .acquiring)
    }

    /// Runs until the task is cancelled or graceful shutdown begins.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            // The due time a pass left due, when the pass before it left the same one.
            var leftDue: Date?
            while !Task.isCancelled {
                let wakeAt: Date?
                let wakesSeen = self.wakes.load(ordering: .acquiring)
                let now = self.clock.now()
                do {
                    try await self.work.runDue(now: now)
                    wakeAt = try await self.work.nextDueTime()
                } catch is CancellationError {
                    return
                } catch {
                    self.logger.error("due work failed; trying again", metadata: ["error": "\(error)"])
                    self.reportFailure(error)
                    wakeAt = self.clock.now().addingTimeInterval(self.retryDelay)
                }
                self.passes.add(1, ordering: .relaxed)
                if let wakeAt, wakeAt <= self.clock.now() {
                    // Left due by two passes in a row: others hold it (another process's
                    // transaction or lock on a shared database). Looked at again soon, not at once.
                    if wakeAt == leftDue { try? await Task.sleep(for: Self.heldElsewherePause) }
                    leftDue = wakeAt
                    continue
                }
                leftDue = nil
                self.lastPass.store(now.timeIntervalSince1970, ordering: .releasing)
                self.wakesHandled.store(wakesSeen, ordering: .releasing)
                self.sleeping.store(true, ordering: .releasing)
                let lookAgain = self.lookAtLeastEvery.map { now.addingTimeInterval($0) }
                await self.sleep(until: [wakeAt, lookAgain].compactMap { $0 }.min())
                self.sleeping.store(false, ordering: .relaxed)
            }
        }
        let work = self.work
        await Task { await work.stopped() }.value
    }

    /// Returns at `deadline` (never, when nil), on ``wake()``, or on cancellation.
    private func sleep(until deadline: Date?) async {
        await withTaskGroup(of: Void.self) { group in
            if let deadline {
                group.addTask { try? await self.clock.sleep(until: deadline) }
            }
            group.addTask { await self.signal.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}

/// A wake-up that is not lost when it comes while nobody waits: the next wait returns at once.
private final class WakeSignal: Sendable {
    private struct State {
        var raised = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func raise() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.raised = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when raised (or at once if it was), or when the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = self.state.withLock { state in
                    if state.raised {
                        state.raised = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

/// The scheduler of work that is enqueued before the process has built its scheduler (the
/// push outbox, the relay): code that enqueues calls ``wake()`` whether or not it exists yet.
public final class SchedulerSlot: Sendable {
    private let scheduler = Mutex<DueTimeScheduler?>(nil)

    public init() {}

    /// Wakes the scheduler, if it has been built.
    public func wake() {
        self.scheduler.withLock { $0 }?.wake()
    }

    /// Builds the scheduler for `work` and keeps it for ``wake()``.
    public func fill(work: any DueWork, clock: any WallClock, logger: Logger) -> DueTimeScheduler {
        let scheduler = DueTimeScheduler(work: work, clock: clock, logger: logger)
        self.scheduler.withLock { $0 = scheduler }
        return scheduler
    }
}
