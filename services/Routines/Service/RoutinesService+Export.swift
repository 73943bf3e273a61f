import Foundation
import HearthContracts
import HearthRPC
import SwiftProtobuf

// An account export's part in routines (hearth.account.v1).
extension RoutinesService {
    /// Internal: what routines holds about the acting user, for an export of their account by the
    /// account service in the tasks process (``RoutineStore/export(user:ownedNests:)``): the
    /// routines of the nests they own, each as GetRoutine answers it, by creation, the actions
    /// removed from them (which GetRoutine no longer shows; ticks may name them), by when each
    /// was removed, and their own ticks in any nest, by when they were made. Checkins is not
    /// asked who owns what: the caller asked it for `owned_nest_ids`, checked here as an
    /// erasure's are (``RoutineRules/ownedNests(_:)``). Others' ticks in the user's nests are
    /// theirs, not the user's: they stay out. A user with nothing gets an empty export.
    public func exportUser(_ request: Hearth_Routines_V1_ExportUserRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_UserExport
    {
        let user = try context.verifiedUser()
        let nests = try RoutineRules.ownedNests(request.ownedNestIds).get()
        let rows = try await self.store.export(user: user, ownedNests: nests)
        var export = Hearth_Routines_V1_UserExport()
        export.routines = rows.routines.map(\.message)
        export.ticks = rows.ticks.map(\.tick)
        export.removedActions = rows.removedActions.map(\.removed)
        return export
    }
}

extension ActionRecord {
    /// A removed action as an export shows it: the action as GetRoutine showed it while it was
    /// one of the routine's, its routine, and when it was removed.
    var removed: Hearth_Routines_V1_RemovedAction {
        .with {
            $0.routineID = self.routineID
            $0.action = .with {
                $0.id = self.id
                $0.text = self.text
                $0.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
            }
            if let removedAt = self.removedAt { $0.removedAt = Google_Protobuf_Timestamp(millisecondsOf: removedAt) }
        }
    }
}

extension CompletionRecord {
    /// The tick as an export shows it: its date the user's local date, as stored (YYYY-MM-DD).
    var tick: Hearth_Routines_V1_Tick {
        .with {
            $0.routineID = self.routineID
            $0.actionID = self.actionID
            $0.date = self.localDate
            $0.doneAt = Google_Protobuf_Timestamp(millisecondsOf: self.doneAt)
            $0.timeZone = self.timeZone
        }
    }
}
