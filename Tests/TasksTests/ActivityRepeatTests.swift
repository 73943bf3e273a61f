import Foundation
import HearthContracts
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// CreateActivity's `repeat` as the plan reads it: left out, an activity is done once.
@Suite("Activities: repeat left out", .timeLimit(.minutes(1)))
struct ActivityRepeatTests {
    @Test("CreateActivity without repeat is NONE; DAILY stays DAILY; a value the contract lacks is INVALID_ARGUMENT")
    func leftOutIsNone() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let once = try await a.create("Buy a gift", repeat: .unspecified)
            let daily = try await a.create("Gym workout", repeat: .daily)
            let read = { (id: String) in
                try await a.service.getActivity(.with { $0.activityID = id }, a.context).repeat
            }
            #expect(try await read(once) == .none)
            #expect(try await read(daily) == .daily)
            #expect(await violatedFields { _ = try await a.create("Odd", repeat: .UNRECOGNIZED(7)) } == ["repeat"])
        }
    }
}
