public import Foundation
import Synchronization

/// Where services get the current time, and wait for a time, so that tests can move it.
public protocol WallClock: Sendable {
    func now() -> Date
    /// Returns once the clock reads `deadline` or later.
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Date) async throws
}

/// The real time.
public struct SystemClock: WallClock {
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(until deadline: Date) async throws {
        // The wall clock can jump (NTP): wake at least once a minute and look again.
        while case let left = deadline.timeIntervalSinceNow, left > 0 {
            try await Task.sleep(for: .seconds(min(left, 60)))
        }
    }
}

/// A clock that moves only when told to: for tests of schedules, deadlines and caps.
/// Sleepers wake when `advance` or `set` moves it to their deadline.
public final class ManualClock: WallClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    public init(_ start: Date) {
        self.state = Mutex(State(now: start))
    }

    public func now() -> Date {
        self.state.withLock { $0.now }
    }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by interval: TimeInterval) {
        self.move { $0 += interval }
    }

    public func set(_ date: Date) {
        self.move { $0 = date }
    }

    /// How many tasks are sleeping on this clock now (tests wait for a scheduler to go idle).
    public var sleeperCount: Int {
        self.state.withLock { $0.sleepers.count }
    }

    public func sleep(until deadline: Date) async throws {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: (any Error)?? = self.state.withLock { state in
                    if Task.isCancelled { return .some(CancellationError()) }
                    if state.now >= deadline { return .some(nil) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .none
                }
                switch resumeNow {
                case .some(.some(let error)): continuation.resume(throwing: error)
                case .some(.none): continuation.resume()
                case .none: break
                }
            }
        } onCancel: {
            let sleeper = self.state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    private func move(_ change: (inout Date) -> Void) {
        let due = self.state.withLock { state in
            change(&state.now)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}
