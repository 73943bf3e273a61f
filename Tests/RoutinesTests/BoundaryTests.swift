import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import Testing

@testable import RoutinesService

/// Limits of routines pinned at their boundary: the last value accepted and the first refused.
@Suite("Routine boundaries")
struct RoutineBoundaryTests {
    @Test("CreateRoutine: 10 actions are accepted; 11 are refused with one violation, on actions")
    func actionCountBoundary() async throws {
        #expect(RoutineRules.maxActions == 10)
        try await System.with { system in
            let (nest, _) = try await system.nest()
            let ten = (1...10).map { "Step \($0)" }
            let full = try await system.routine(in: nest, actions: ten)
            #expect(full.actions.map(\.text) == ten)
            let fields = await violatedFields { _ = try await system.routine(in: nest, actions: ten + ["Step 11"]) }
            #expect(fields == ["actions"])
        }
    }
}
