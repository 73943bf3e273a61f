import Foundation
import HearthCore
import HearthPostgres
import HearthRPC
import HearthTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import SafetyService

/// PostgreSQL stopped under the safety service: calls fail fast as UNAVAILABLE (a client tries
/// again), nothing acknowledged is lost, and calls succeed again once it is back.
@Suite("Safety on PostgreSQL, while PostgreSQL is down", .timeLimit(.minutes(3)), .serialized)
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

    @Test(
        "calls leave nothing behind in the watch on their connections closing; it watches no more connections than the pool has"
    )
    func oneWatchPerConnection() async throws {
        try await withSafetySystem(store: .postgres) { system in
            try await system.profile()
            for _ in 0..<300 { _ = try await system.service.store.status("mei") }
            let store = try #require(system.service.store as? PostgresSafetyStore)
            let watched = store.database.watched
            #expect(watched.calls == 0, "no call left waiting")
            #expect(watched.connections <= 20, "\(watched.connections) connections watched: at most the pool's")
        }
    }

    @Test(
        "stopped for 10 s under check-ins from 8 clients: each failure UNAVAILABLE within 3 s, none acknowledged lost, taken again within 1 s of its return"
    )
    func outageUnderLoad() async throws {
        try await withSafetySystem(store: .postgres) { system in
            let server = try #require(system.postgres)
            let users = (0..<8).map { "client-\($0)" }
            for user in users { try await system.profile(user, contacts: []) }
            let load = CheckInLoad()
            let running = Task {
                await withTaskGroup(of: Void.self) { group in
                    for user in users {
                        group.addTask { await load.run(user, on: system) }
                    }
                }
            }
            try await eventually("check-ins are taken") { load.acknowledgedCount >= 100 }
            await server.stop()
            try await Task.sleep(for: .seconds(10))
            try await server.start()
            let returned = ContinuousClock.now
            try await eventually("check-ins are taken again") { load.firstAcknowledged(after: returned) != nil }
            let resumed = try #require(load.firstAcknowledged(after: returned)) - returned
            try await eventually("more are taken") { load.acknowledged(after: returned) >= 100 }
            load.stop()
            await running.value

            let failures = load.failures
            #expect(!failures.isEmpty, "the outage was felt")
            #expect(failures.allSatisfy { $0.code == .unavailable }, "\(Set(failures.map(\.code.name)))")
            let slowest = failures.map(\.took).max() ?? .zero
            #expect(slowest < .seconds(3), "a failure took \(slowest)")
            #expect(resumed < .seconds(1), "taken again \(resumed) after PostgreSQL answered")
            for user in users {
                let stored = Set(try await system.storedRequestIDs(of: user))
                let lost = Set(load.acknowledgedIDs(of: user).map(SafetyRules.HeartbeatID.app)).subtracting(stored)
                #expect(lost.isEmpty, "\(user): \(lost.count) acknowledged check-ins lost")
            }
            let store = try #require(system.service.store as? PostgresSafetyStore)
            // One, unless the old pool's own attempt came first (0) or its last failures came
            // after the fresh one's first call (2).
            #expect(store.database.replacements <= 2, "\(store.database.replacements) fresh pools")
            print(
                "outage under load: \(load.acknowledgedCount) acknowledged, \(failures.count) UNAVAILABLE "
                    + "(slowest \(slowest)), taken again \(resumed) after PostgreSQL answered"
            )
        }
    }
}

/// Clients checking in as fast as they are answered; one that is refused waits 100 ms, as a
/// client backing off would.
final class CheckInLoad: Sendable {
    struct Failure {
        var code: StatusCode
        var took: Duration
    }

    private struct State {
        var acknowledged: [String: Set<String>] = [:]
        var acknowledgedAt: [ContinuousClock.Instant] = []
        var failures: [Failure] = []
        var stopped = false
    }

    private let state = Mutex(State())

    func run(_ user: String, on system: SafetySystem) async {
        while !self.state.withLock({ $0.stopped }) {
            let id = UUID().uuidString
            let began = ContinuousClock.now
            do {
                try await system.checkIn(user, id: id)
                self.state.withLock { state in
                    state.acknowledged[user, default: []].insert(id)
                    state.acknowledgedAt.append(.now)
                }
                // Check-ins a minute apart, so none is merged or over the hour's limit.
                system.clock.advance(by: 60)
            } catch {
                let took = ContinuousClock.now - began
                self.state.withLock { $0.failures.append(Failure(code: RPCError(answering: error).code, took: took)) }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    func stop() { self.state.withLock { $0.stopped = true } }

    var acknowledgedCount: Int { self.state.withLock { $0.acknowledgedAt.count } }
    var failures: [Failure] { self.state.withLock { $0.failures } }

    func acknowledgedIDs(of user: String) -> Set<String> { self.state.withLock { $0.acknowledged[user] ?? [] } }

    func firstAcknowledged(after instant: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        self.state.withLock { $0.acknowledgedAt.first { $0 > instant } }
    }

    func acknowledged(after instant: ContinuousClock.Instant) -> Int {
        self.state.withLock { $0.acknowledgedAt.filter { $0 > instant }.count }
    }
}

extension SafetySystem {
    /// The request ids of `user`'s check-ins as PostgreSQL keeps them.
    func storedRequestIDs(of user: String) async throws -> [String] {
        let store = try #require(self.service.store as? PostgresSafetyStore)
        return try await store.database.read { db in
            try await db.rows("SELECT request_id FROM heartbeat WHERE user_id = \(user)") {
                try $0.value(0, as: String.self)
            }
        }
    }
}
