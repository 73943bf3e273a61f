import Foundation
import HearthContracts
import HearthRPC

// tasks: activities, created through the gateway; the check finds each in its user's list.
extension FaultRun {
    /// Writer `writer`'s calls: CreateActivity until the run ends. A user holds at most 200
    /// activities: a writer that fills one (RESOURCE_EXHAUSTED) goes on as a new user, so that a
    /// long run keeps writing (and restarts keep being seen).
    func writeActivities(writer: Int) async throws -> [FaultWriter.Entry] {
        var part = 0
        var user = self.user(writer, part)
        var options = try await self.options(as: user)
        var log = CallLog()
        var n = 0
        while !self.isOver {
            n += 1
            var request = Hearth_Tasks_V1_CreateActivityRequest()
            request.title = "fault write \(writer)-\(n)"
            request.repeat = .none
            let result = await log.record(.activity, user: user, id: \Hearth_Tasks_V1_Activity.id) {
                try await Hearth_Tasks_V1_Activities.Client(self.client).createActivity(request, options: options)
            }
            if case .failure(let error) = result, error.code == .resourceExhausted {
                part += 1
                user = self.user(writer, part)
                options = try await self.options(as: user)
            }
            await self.pause(after: result)
        }
        return log.entries
    }
}

extension FaultCheck {
    /// Whether `user`'s acknowledged activities are in their list (all of a user's 200 come in one
    /// answer).
    func activities(
        of user: String,
        acknowledged: [FaultWriter.Kind: Set<String>],
        into verdict: inout FaultVerdict
    ) async throws {
        let stored = try await Self.retryingUnanswered {
            try await Hearth_Tasks_V1_Activities.Client(self.client).listActivities(
                Hearth_Tasks_V1_ListActivitiesRequest(),
                options: try await self.options(as: user)
            )
        }
        verdict.check(
            .activity,
            acknowledged: acknowledged[.activity] ?? [],
            stored: Set(stored.activities.map(\.id))
        )
    }
}
