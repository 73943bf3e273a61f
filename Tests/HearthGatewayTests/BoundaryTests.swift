import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import HearthGateway

/// Limits of the gateway pinned at their boundary: the last value accepted and the first refused.
@Suite("Gateway boundaries", .timeLimit(.minutes(1)))
struct GatewayBoundaryTests {
    @Test("nbf within the 60 s leeway: now+59 s is accepted, now+61 s is refused as not yet valid")
    func notBeforeLeeway() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let now = harness.clock.now()
            let within = try await harness.token(notBefore: now.addingTimeInterval(59))
            let beyond = try await harness.token(notBefore: now.addingTimeInterval(61))

            let fields = try await harness.call(authorization: "Bearer \(within)").text.split(separator: "|")
            try #require(fields.count >= 2)
            #expect(fields[1] == "alice")

            let error = await #expect(throws: RPCError.self) {
                _ = try await harness.call(authorization: "Bearer \(beyond)")
            }
            #expect(error?.code == .unauthenticated)
            #expect(error?.message.contains("token not valid before") == true, "\(String(describing: error))")

            // The same token is refused for its time only: 2 s later it is within the leeway.
            harness.clock.advance(by: 2)
            let later = try await harness.call(authorization: "Bearer \(beyond)").text.split(separator: "|")
            try #require(later.count >= 2)
            #expect(later[1] == "alice")
        }
    }

    @Test("nbf on whole seconds, at the verifier: exactly now+60 s is the last accepted, now+60.5 s is refused")
    func notBeforeExactLeeway() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let verifier = try await TokenVerifier(hmacSecret: jwtSecret, clock: clock)
        let signer = try await TokenSigner(hmacSecret: jwtSecret)
        let now = clock.now()
        func bearer(notBefore offset: TimeInterval) async throws -> String {
            let token = try await signer.token(
                for: HearthClaims(
                    subject: "alice",
                    issuedAt: now,
                    expiresAt: now.addingTimeInterval(3600),
                    notBefore: now.addingTimeInterval(offset)
                )
            )
            return "Bearer \(token)"
        }
        #expect(TokenVerifier.leeway == 60)
        let atLeeway = try await bearer(notBefore: 60)
        #expect(try await verifier.userID(authorization: atLeeway) == "alice")
        let overLeeway = try await bearer(notBefore: 60.5)
        let error = await #expect(throws: RPCError.self) { _ = try await verifier.userID(authorization: overLeeway) }
        #expect(error?.code == .unauthenticated)
        #expect(error?.message.contains("token not valid before") == true, "\(String(describing: error))")
    }

    @Test("4 consecutive failures keep a replica, the 5th ejects it; due for readmission exactly when the period ends")
    func ejectionAtFifthFailure() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        // Nothing is sent: failures are recorded at instants the test chooses.
        let replica = HearthGateway.Replica(
            host: "127.0.0.1",
            port: 9,
            connections: 1,
            connectTimeout: .seconds(2),
            policy: EjectionPolicy(),
            loops: [loop]
        )
        let policy = EjectionPolicy()
        #expect(policy.consecutiveFailures == 5 && policy.duration == .seconds(30))
        let t0 = ContinuousClock.now

        // A success in between starts the count again: failures must be consecutive.
        for _ in 0..<4 { #expect(!replica.recordFailure(now: t0)) }
        replica.recordSuccess()
        #expect(replica.consecutiveFailures == 0)

        for failure in 1...4 {
            #expect(!replica.recordFailure(now: t0), "failure \(failure) ejected it")
            #expect(!replica.isEjected, "after failure \(failure)")
        }
        #expect(replica.consecutiveFailures == 4)
        #expect(replica.recordFailure(now: t0), "the 5th failure ejects")
        #expect(replica.isEjected)
        #expect(!replica.recordFailure(now: t0), "already ejected: a 6th does not eject again")

        #expect(!replica.isDueForReadmission(now: t0))
        #expect(!replica.isDueForReadmission(now: t0 + .seconds(30) - .nanoseconds(1)))
        #expect(replica.isDueForReadmission(now: t0 + .seconds(30)))

        replica.readmit()
        #expect(!replica.isEjected && replica.consecutiveFailures == 0)
        await replica.close()
        try await group.shutdownGracefully()
    }

    @Test("a health check readmits a serving replica only once its ejection period has passed")
    func readmittedAfterEjectionPeriod() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let backend = Replica(name: "replica-0")
        let port = try await backend.port
        // Both replicas are the same serving backend; the health check has time on a busy machine.
        let policy = EjectionPolicy(consecutiveFailures: 5, duration: .seconds(30), healthCheckTimeout: .seconds(10))
        func replica() -> HearthGateway.Replica {
            HearthGateway.Replica(
                host: "127.0.0.1",
                port: port,
                connections: 1,
                connectTimeout: .seconds(5),
                policy: policy,
                loops: [loop]
            )
        }
        let recent = replica()
        let old = replica()
        let pool = BackendPool(
            prefix: "hearth.probe.",
            credential: "unused",
            replicas: [recent, old],
            logger: Logger(label: "test")
        )
        let now = ContinuousClock.now
        // Ejected now: 30 s to go. Ejected 31 s ago: its period ended 1 s ago.
        for _ in 0..<5 { _ = recent.recordFailure(now: now) }
        for _ in 0..<5 { _ = old.recordFailure(now: now - .seconds(31)) }
        #expect(recent.isEjected && old.isEjected)

        try await eventually("the replica whose period has passed is readmitted") {
            await pool.probeEjected()
            return !old.isEjected
        }
        #expect(old.consecutiveFailures == 0)
        #expect(recent.isEjected, "its period has not passed: it stays out although it serves")

        await pool.close()
        await backend.stop()
        try await group.shutdownGracefully()
    }
}
