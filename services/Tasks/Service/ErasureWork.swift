import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
import HearthScheduler
import HearthStore
import Logging
import SwiftProtobuf

/// The services the account service calls (for an erasure or an export), and the credential
/// of its link to each (``PeerCredentials``).
public struct AccountPeers: Sendable {
    var checkins: Hearth_Checkins_V1_Checkins.Client
    var routines: Hearth_Routines_V1_Routines.Client
    var safety: Hearth_Safety_V1_Safety.Client
    var credentials: TasksService.PeerCredentials

    public init(checkins: RPCClient, routines: RPCClient, safety: RPCClient, credentials: TasksService.PeerCredentials)
    {
        self.checkins = .init(checkins)
        self.routines = .init(routines)
        self.safety = .init(safety)
        self.credentials = credentials
    }

    /// The options of a call for `user` to each peer.
    struct Options {
        var checkins: CallOptions
        var routines: CallOptions
        var safety: CallOptions
    }

    func options(for user: String) -> Options {
        func options(_ credential: String) -> CallOptions {
            CallOptions(
                timeout: .seconds(30),
                metadata: [TrustedMetadata.credential: credential, TrustedMetadata.user: user]
            )
        }
        return Options(
            checkins: options(self.credentials.checkins),
            routines: options(self.credentials.routines),
            safety: options(self.credentials.safety)
        )
    }
}

/// Makes the calls of the erasures' due parts (``ErasurePlan``) and records each outcome:
/// done, or tried again later, for as long as it takes. Every part is idempotent in its
/// service, so a call whose answer was lost is simply made again. It also wakes when a finished
/// erasure's rows are to go (``TaskStore/erasureRetention`` after its last part), so that the
/// ledger forgets the user on time even when no other erasure runs.
struct ErasureWork: DueWork {
    let store: TaskStore
    let peers: AccountPeers
    let logger: Logger
    var clock: any WallClock { self.store.base.clock }
    static let batch = 20

    /// The next part due, or the next finished erasure to prune, whichever comes first.
    func nextDueTime() async throws -> Date? {
        let due = try self.store.nextErasureTime()
        let prune = try self.store.nextErasurePruneTime()
        return [due, prune].compactMap { $0 }.min()
    }

    func runDue(now: Date) async throws {
        try Task.checkCancellation()
        let due = try self.store.dueErasureSteps(at: now, limit: Self.batch)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for step in due {
                group.addTask { try await self.make(step) }
            }
            try await group.waitForAll()
        }
        _ = try await self.store.pruneErasures(now: now)
    }

    private func make(_ step: ErasureStep) async throws {
        let failure: String?
        do {
            try await self.erase(step.service, of: step.user)
            failure = nil
            self.logger.info("erasure part done", metadata: ["user": "\(step.user)", "service": "\(step.service)"])
        } catch {
            // Shutting down: the part stays due as it was, and is made at the next start.
            if Task.isCancelled { return }
            let answer = RPCError(answering: error)
            // What GetErasure shows the user: the code, never the peer's words (a connection
            // failure names hosts and ports); the log has them.
            failure = Self.reason(answer.code, service: step.service)
            self.logger.log(
                level: RetryLog.level(afterAttempts: step.attempts),
                "erasure part failed; will retry",
                metadata: [
                    "user": "\(step.user)", "service": "\(step.service)", "attempts": "\(step.attempts + 1)",
                    "error": "\(answer)",
                ]
            )
        }
        try await self.store.recordErasure(step.service, of: step.user, failure: failure)
    }

    /// A failed part's reason as the user reads it (GetErasure's `last_error`).
    static func reason(_ code: StatusCode, service: ErasedService) -> String {
        "\(code.name): \(service.rawValue) did not confirm its part; it is asked again"
    }

    private func erase(_ service: ErasedService, of user: String) async throws {
        let options = self.peers.options(for: user)
        switch service {
        case .routines:
            // Checkins' part is done (routines waits for it). Asked again, checkins erases any nest
            // the user made since, and answers every nest it erased for them, this time and
            // before: their routines go here, in calls of at most 1,000 nests. A failure makes the
            // whole part again, both calls, each idempotent. A nest made after checkins' answer
            // came after the erasure, as anything written once it is done.
            let erased = try await self.peers.checkins.eraseUser(.init(), options: options.checkins)
            for nests in ErasurePlan.routinesCalls(for: erased.erasedNestIds) {
                _ = try await self.peers.routines.eraseUser(
                    .with { $0.ownedNestIds = nests },
                    options: options.routines
                )
            }
        case .checkins:
            // The user's nests go, and checkins remembers them for routines' part.
            _ = try await self.peers.checkins.eraseUser(.init(), options: options.checkins)
        case .safety:
            _ = try await self.peers.safety.eraseUser(.init(), options: options.safety)
        case .tasks:
            // Done in the request's own transaction.
            break
        }
    }
}
