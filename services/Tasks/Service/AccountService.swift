import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
public import HearthScheduler
import HearthStore
public import Logging
import SwiftProtobuf

/// `hearth.account.v1.Account`: what a user asks of Hearth as a whole. Served by the tasks
/// process, which keeps the erasures' ledger in its store and makes the calls to the other
/// services (``ErasureWork``): not checkins, which parses untrusted images and should hold no
/// credential that reaches every service; not safety, whose store is the one that must stay
/// small and available.
public struct AccountService: Hearth_Account_V1_Account.Handler {
    let store: TaskStore
    private let slot = SchedulerSlot()

    /// Shares the tasks service's store.
    public init(sharingStoreOf tasks: TasksService) {
        self.store = tasks.store
    }

    public func eraseAccount(_ request: Hearth_Account_V1_EraseAccountRequest, _ context: RPCContext)
        async throws -> Hearth_Account_V1_Erasure
    {
        let steps = try await self.store.requestErasure(try context.verifiedUser())
        self.slot.wake()
        return .init(steps)
    }

    public func getErasure(_ request: Hearth_Account_V1_GetErasureRequest, _ context: RPCContext)
        async throws -> Hearth_Account_V1_Erasure
    {
        let steps = try self.store.erasure(of: try context.verifiedUser())
        guard !steps.isEmpty else { throw RPCError(.notFound, "no erasure was asked for") }
        return .init(steps)
    }

    /// The worker that asks checkins, routines and safety to erase their parts (with
    /// `credential`, acting for each erased user). Run it beside the server.
    public func eraser(checkins: RPCClient, routines: RPCClient, safety: RPCClient, credential: String, logger: Logger)
        -> DueTimeScheduler
    {
        self.slot.fill(
            work: ErasureWork(
                store: self.store,
                peers: ErasurePeers(
                    checkins: .init(checkins),
                    routines: .init(routines),
                    safety: .init(safety),
                    credential: credential
                ),
                logger: logger
            ),
            clock: self.store.base.clock,
            logger: logger
        )
    }
}

extension Hearth_Account_V1_Erasure {
    init(_ steps: [ErasureStep]) {
        self.init()
        if let first = steps.first { self.requestedAt = Google_Protobuf_Timestamp(millisecondsOf: first.requestedAt) }
        self.services = steps.map { step in
            .with {
                $0.service = step.service.rawValue
                $0.state = step.isDone ? .done : .pending
                if let done = step.doneAt { $0.doneAt = Google_Protobuf_Timestamp(millisecondsOf: done) }
                $0.attempts = UInt32(step.attempts)
                $0.lastError = step.lastError
            }
        }
        self.done = steps.allSatisfy(\.isDone)
    }
}
