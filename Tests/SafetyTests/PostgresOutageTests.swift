import Foundation
import HearthCore
import HearthRPC
import HearthTestSupport
import Testing

@testable import SafetyService

/// PostgreSQL stopped under the safety service: calls fail fast as UNAVAILABLE (a client tries
/// again), nothing acknowledged is lost, and calls succeed again once it is back.
@Suite("Safety on PostgreSQL, while PostgreSQL is down", .timeLimit(.minutes(2)), .serialized)
struct PostgresOutageTests {
    @Test("while PostgreSQL is stopped check-ins answer UNAVAILABLE, promptly; after, they count again")
    func outage() async throws {
        try await withSafetySystem(store: .postgres) { system in
            let server = try #require(system.postgres)
            try await system.profile()
            var acknowledged = 0
            for _ in 0..<5 {
                try await system.checkIn()
                acknowledged += 1
                system.clock.advance(by: 10)
            }
            await server.stop()
            let clock = ContinuousClock()
            for _ in 0..<3 {
                let began = clock.now
                // As the RPC runtime answers what the handler threw.
                let error = await #expect(throws: (any Error).self) { try await system.checkIn() }
                let answered = error.map { RPCError(answering: $0) }
                #expect(answered?.code == .unavailable, "\(String(describing: error))")
                // Not held until a connect timeout per call: a client learns at once to retry.
                #expect(clock.now - began < .seconds(5))
                system.clock.advance(by: 10)
            }
            try await server.start()
            try await eventually("check-ins are taken again") {
                (try? await system.checkIn()) != nil
            }
            acknowledged += 1
            let counted = try await system.service.store.checkIns(of: "mei").filter(\.counted).count
            #expect(counted == acknowledged, "every acknowledged check-in is kept, and none that failed")
        }
    }
}
