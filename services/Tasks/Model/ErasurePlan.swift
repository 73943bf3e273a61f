import Foundation
import HearthCore

/// The services an account erasure goes through, each its own part.
enum ErasedService: String, CaseIterable, Sendable {
    case checkins, tasks, safety, routines

    /// The parts that must be done before this one starts: routines erases the routines of the
    /// nests the user owns, which only checkins knows, so checkins erases its nests after.
    var waitsFor: [ErasedService] { self == .checkins ? [.routines] : [] }
}

/// Where one service's part of a user's erasure stands.
struct ErasureStep: Equatable, Sendable {
    var user: String
    var service: ErasedService
    var requestedAt: Date
    var doneAt: Date?
    /// Calls made for it so far.
    var attempts: Int
    /// When it is next tried; nil when done or waiting for another part (``ErasedService/waitsFor``).
    var nextAttemptAt: Date?
    /// Why the last call failed.
    var lastError: String

    var isDone: Bool { self.doneAt != nil }
}

/// The rules of an account erasure: what a request starts, what a part's outcome changes. The
/// store keeps the steps; the erasure worker makes the calls.
enum ErasurePlan {
    /// The steps a request at `now` starts. Tasks' own part is done in the request's
    /// transaction; the others are due at once, but for those that wait for another.
    static func start(for user: String, at now: Date) -> [ErasureStep] {
        ErasedService.allCases.map { service in
            let local = service == .tasks
            return ErasureStep(
                user: user,
                service: service,
                requestedAt: now,
                doneAt: local ? now : nil,
                attempts: local ? 1 : 0,
                nextAttemptAt: local || !service.waitsFor.isEmpty ? nil : now,
                lastError: ""
            )
        }
    }

    /// Whether a new request starts an erasure: none yet, or the last one done (what was
    /// written since is erased then); one under way is answered as it stands.
    static func startsAnew(_ steps: [ErasureStep]) -> Bool {
        steps.allSatisfy(\.isDone)
    }

    /// `steps` after `service`'s part was confirmed done at `now`: the parts that waited only
    /// for it are due.
    static func done(_ service: ErasedService, in steps: [ErasureStep], at now: Date) -> [ErasureStep] {
        var after = steps
        for index in after.indices {
            if after[index].service == service {
                after[index].doneAt = now
                after[index].attempts += 1
                after[index].nextAttemptAt = nil
                after[index].lastError = ""
            }
        }
        let finished = Set(after.filter(\.isDone).map(\.service))
        for index in after.indices where !after[index].isDone && after[index].nextAttemptAt == nil {
            if after[index].service.waitsFor.allSatisfy(finished.contains) { after[index].nextAttemptAt = now }
        }
        return after
    }

    /// `step` after a call for it failed at `now`: tried again after a pause that grows with
    /// each attempt (1 s, 2 s, 4 s, ... 5 min), for as long as it takes: an erasure is never
    /// given up.
    static func failed(_ step: ErasureStep, because reason: String, at now: Date) -> ErasureStep {
        var after = step
        after.attempts += 1
        after.lastError = reason
        after.nextAttemptAt = now.addingTimeInterval(RetryPause.after(attempts: step.attempts, longest: Self.maxPause))
        return after
    }

    static let maxPause: TimeInterval = 300
}
