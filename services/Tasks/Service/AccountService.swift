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
    let tasks: TasksService
    var store: TaskStore { self.tasks.store }
    let peers: AccountPeers
    private let slot = SchedulerSlot()

    /// Shares the tasks service's store; asks `peers` for their parts.
    public init(sharingStoreOf tasks: TasksService, peers: AccountPeers) {
        self.tasks = tasks
        self.peers = peers
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

    public func exportAccount(_ request: Hearth_Account_V1_ExportAccountRequest, _ context: RPCContext)
        async throws -> Hearth_Account_V1_AccountExport
    {
        let user = try context.verifiedUser()
        let options = self.peers.options(for: user)
        var export = Hearth_Account_V1_AccountExport()
        export.exportedAt = Google_Protobuf_Timestamp(millisecondsOf: self.store.now)
        do {
            // Routines exports the routines of the nests the user owns, which checkins knows.
            async let checkins = self.peers.checkins.exportUser(.init(), options: options.checkins)
            async let owned = self.peers.checkins.listOwnedNests(.init(), options: options.checkins)
            async let safety = self.peers.safety.exportUser(.init(), options: options.safety)
            let nests = try await owned.nestIds
            async let routines = self.peers.routines.exportUser(
                .with { $0.ownedNestIds = nests },
                options: options.routines
            )
            export.tasks = try await self.tasks.userExport(of: user, language: context.language ?? .english)
            (export.checkins, export.safety, export.routines) = try await (checkins, safety, routines)
        } catch let error as RPCError where error.code == .resourceExhausted {
            // A part over the largest frame (4 MiB): asking again will not help.
            throw RPCError(
                .resourceExhausted,
                "this account's data is more than one answer can carry (\(error.message)); an export in pages is not "
                    + "available yet"
            )
        } catch let error as RPCError where error.code != .unavailable && error.code != .deadlineExceeded {
            // Another service's fault is not the caller's: say what failed, as a server error.
            throw RPCError(.internal, "a service could not export its part: \(error.message)")
        } catch let error as RPCError {
            throw RPCError(.unavailable, "a service cannot export its part now (\(error.message)); ask again")
        }
        return export
    }

    /// The worker that asks checkins, routines and safety to erase their parts (acting for each
    /// erased user). Run it beside the server.
    public func eraser(logger: Logger) -> DueTimeScheduler {
        self.slot.fill(
            work: ErasureWork(store: self.store, peers: self.peers, logger: logger),
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
