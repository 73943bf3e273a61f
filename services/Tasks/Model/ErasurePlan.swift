import Foundation
import HearthCore

/// The services an account erasure goes through, each its own part.
enum ErasedService: String, CaseIterable, Sendable {
    case checkins, tasks, safety, routines

    /// The parts that must be done before this one starts. Routines erases the routines of the
    /// nests the user owns, which only checkins knows, so it comes after checkins: checkins
    /// erases the nests and remembers them, and routines' part asks checkins to erase the user
    /// once more (a nest made since goes too) and is told every nest that went. A nest, or a
    /// routine in one, made while the erasure runs goes with it. (Routines went first once, with
    /// the nests checkins listed, and what was made between the two parts outlived the erasure:
    /// ``ErasurePlan/reordered(_:at:)`` puts the erasures recorded then in this order.)
    var waitsFor: [ErasedService] { self == .routines ? [.checkins] : [] }
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
    /// for it (routines, for checkins) are due.
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
        for index in after.indices where !after[index].isDone && after[index].nextAttemptAt == nil {
            if Self.isFree(after[index].service, in: after) { after[index].nextAttemptAt = now }
        }
        return after
    }

    /// `steps` recorded under another order of the parts (routines before checkins, as they
    /// once went), made to follow ``ErasedService/waitsFor`` at `now`; steps that follow it come
    /// back unchanged.
    /// - A part done before a part it waits for is made again once that one is done: made first,
    ///   it may have missed what was written since (routines in a nest made meanwhile).
    /// - A part that waits for one not done waits (no due time, whatever retry was set).
    /// - A part that waits for nothing left (or nothing) and had no due time is due at `now`;
    ///   one with a retry set keeps it.
    static func reordered(_ steps: [ErasureStep], at now: Date) -> [ErasureStep] {
        var after = steps
        // Until none is done ahead of what it waits for: a part reopened may be waited for too.
        while let early = after.firstIndex(where: { $0.isDone && !Self.isFree($0.service, in: after) }) {
            after[early].doneAt = nil
            after[early].nextAttemptAt = nil
            after[early].lastError = ""
        }
        for index in after.indices where !after[index].isDone {
            if !Self.isFree(after[index].service, in: after) {
                after[index].nextAttemptAt = nil
            } else if after[index].nextAttemptAt == nil {
                after[index].nextAttemptAt = now
            }
        }
        return after
    }

    /// Whether every part `service` waits for is done in `steps` (one missing from them, of a
    /// service added since the erasure was asked for, holds nothing back).
    private static func isFree(_ service: ErasedService, in steps: [ErasureStep]) -> Bool {
        service.waitsFor.allSatisfy { waited in steps.allSatisfy { $0.service != waited || $0.isDone } }
    }

    /// The most nest ids one routines EraseUser names (its `owned_nest_ids`).
    static let nestsPerCall = 1_000

    /// The `owned_nest_ids` of routines' EraseUser calls for `nests`: in order, at most
    /// ``nestsPerCall`` a call; one call naming none when there are none (routines' part also
    /// erases the user's own ticks, whatever they owned).
    static func routinesCalls(for nests: [String]) -> [[String]] {
        guard !nests.isEmpty else { return [[]] }
        return stride(from: 0, to: nests.count, by: Self.nestsPerCall).map { start in
            Array(nests[start..<min(start + Self.nestsPerCall, nests.count)])
        }
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
