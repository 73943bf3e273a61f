import Foundation
import HearthContracts
import SwiftProtobuf

extension RoutineWithActions {
    var message: Hearth_Routines_V1_Routine {
        var routine = Hearth_Routines_V1_Routine()
        routine.id = self.routine.id
        routine.nestID = self.routine.nestID
        routine.title = self.routine.title
        routine.category = self.routine.category
        routine.actions = self.actions.map { action in
            .with {
                $0.id = action.id
                $0.text = action.text
                $0.createdAt = Google_Protobuf_Timestamp(millisecondsOf: action.createdAt)
            }
        }
        routine.canAddAction = self.actions.count < RoutineRules.maxActions
        routine.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.routine.createdAt)
        routine.updatedAt = Google_Protobuf_Timestamp(millisecondsOf: self.routine.updatedAt)
        return routine
    }
}

extension ActionRecord {
    var life: RoutineRules.ActionLife {
        RoutineRules.ActionLife(id: self.id, createdAt: self.createdAt, removedAt: self.removedAt)
    }
}

extension CompletionRecord {
    var message: Hearth_Routines_V1_Completion {
        .with {
            $0.actionID = self.actionID
            $0.doneAt = Google_Protobuf_Timestamp(millisecondsOf: self.doneAt)
        }
    }
}
