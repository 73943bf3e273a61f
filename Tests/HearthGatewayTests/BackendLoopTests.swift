import EchoService
import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import Logging
import NIOCore
import NIOPosix
import SwiftProtobuf
import Testing

@testable import HearthGateway

@Suite("Backend connections per event loop", .timeLimit(.minutes(1)))
struct BackendLoopTests {
    @Test("a call started from an event loop goes out on a connection of that loop")
    func callsStayOnTheirLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let backend = Replica(name: "replica-0")
        let loops = Array(group.makeIterator())
        let replica = HearthGateway.Replica(
            host: "127.0.0.1",
            port: try await backend.port,
            connections: 1,
            connectTimeout: .seconds(30),
            policy: EjectionPolicy(),
            loops: loops
        )
        let metadata: Metadata = [TrustedMetadata.credential: credential]
        for loop in loops {
            let client = replica.client(on: loop)
            // The first call waits for its connection; once connected, a call starts on it at once.
            _ = try await client.start(
                Hearth_Echo_V1_Echo.Method.echo.name,
                payload: Data(),
                metadata: metadata,
                timeout: nil,
                on: loop
            )
            .value
            let call = client.start(
                Hearth_Echo_V1_Echo.Method.echo.name,
                payload: Data(),
                metadata: metadata,
                timeout: nil,
                on: loop
            )
            #expect(ObjectIdentifier(call.response.eventLoop) == ObjectIdentifier(loop))
            _ = try await call.value
        }
        #expect(replica.client(on: loops[0]) !== replica.client(on: loops[1]))
        // A loop of another group gets a client too.
        #expect(replica.client(on: MultiThreadedEventLoopGroup.singleton.next()) === replica.client(on: loops[0]))
        await replica.close()
        await backend.stop()
        try await group.shutdownGracefully()
    }

    @Test(
        "a call whose deadline passes while its connection is being made counts neither way; a connect that times out counts"
    )
    func deadlineWhileConnectingCountsForNothing() async throws {
        let hole = try HangingListener()
        defer { hole.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let replica = HearthGateway.Replica(
            host: "127.0.0.1",
            port: hole.port,
            connections: 1,
            // Far longer than the 50 ms call below, even on a starved machine.
            connectTimeout: .seconds(5),
            policy: EjectionPolicy(consecutiveFailures: 5),
            loops: [loop]
        )
        let pool = BackendPool(
            prefix: "hearth.echo.",
            credential: "unused",
            replicas: [replica],
            logger: Logger(label: "test")
        )
        func call(within budget: TimeAmount = .milliseconds(50)) async -> RPCError? {
            let request = ForwardedRequest(
                method: Hearth_Echo_V1_Echo.Method.echo.name,
                payload: Data(),
                metadata: [TrustedMetadata.credential: credential],
                deadline: .now() + budget
            )
            do {
                _ = try await pool.startOnReplica(request, on: loop).value
                return nil
            } catch {
                return error as? RPCError
            }
        }
        for _ in 0..<3 { _ = replica.recordFailure(now: .now) }
        // A deadline already past: refused before any replica is tried, and counts for nothing.
        #expect(await call(within: .zero)?.code == .deadlineExceeded)
        #expect(replica.consecutiveFailures == 3)
        // The connect hangs for 5 s: this call's 50 ms run out first. That is the call's
        // budget, not news of the replica: the failures stay as they were (no reset, no count).
        #expect(await call()?.code == .deadlineExceeded)
        #expect(replica.consecutiveFailures == 3)
        // Once the connect has timed out it counts, and a call is refused at once (backing off).
        try await eventually("the connect timed out") { await call()?.code == .unavailable }
        #expect(replica.consecutiveFailures >= 4)
        await replica.close()
        try await group.shutdownGracefully()
    }

    @Test("a lone replica that refuses connections: one refused connect counts once, not once per path")
    func refusedConnectCountsOnce() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let backend = Replica(name: "gone")
        let port = try await backend.port
        await backend.stop()
        let replica = HearthGateway.Replica(
            host: "127.0.0.1",
            port: port,
            connections: 1,
            connectTimeout: .seconds(5),
            policy: EjectionPolicy(consecutiveFailures: 5),
            loops: [loop]
        )
        let pool = BackendPool(
            prefix: "hearth.echo.",
            credential: "unused",
            replicas: [replica],
            logger: Logger(label: "test")
        )
        let request = ForwardedRequest(
            method: Hearth_Echo_V1_Echo.Method.echo.name,
            payload: Data(),
            metadata: [TrustedMetadata.credential: credential],
            deadline: .now() + .seconds(5)
        )
        // The call waits on the connect its pick started; the refusal counts on the call's path.
        let error = await #expect(throws: RPCError.self) { _ = try await pool.startOnReplica(request, on: loop).value }
        #expect(error?.code == .unavailable)
        #expect(replica.consecutiveFailures == 1)
        await replica.close()
        try await group.shutdownGracefully()
    }

    @Test("a replica slower than a call's deadline, but answering its health check, stays in rotation")
    func slowReplicaStays() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let backend = Replica(name: "replica-0")
        // One failed check would eject it; the check has 30 s to be answered, and checks are
        // that far apart.
        let policy = EjectionPolicy(consecutiveFailures: 1, duration: .seconds(60), healthCheckTimeout: .seconds(30))
        let replica = HearthGateway.Replica(
            host: "127.0.0.1",
            port: try await backend.port,
            connections: 1,
            connectTimeout: .seconds(30),
            policy: policy,
            loops: [loop]
        )
        let pool = BackendPool(
            prefix: "hearth.probe.",
            credential: "unused",
            replicas: [replica],
            logger: Logger(label: "test")
        )
        // Connected first, so that the short calls below are sent, not left waiting for it.
        _ = try await replica.client(on: loop).start(
            Hearth_Echo_V1_Echo.Method.echo.name,
            payload: Data(),
            metadata: [TrustedMetadata.credential: credential],
            timeout: .seconds(30),
            on: loop
        ).value
        var hold = Hearth_Echo_V1_EchoRequest()
        hold.sleepMs = 60_000
        for _ in 0..<3 {
            let request = ForwardedRequest(
                method: ProbeService.hold,
                payload: try hold.serializedData(),
                metadata: [TrustedMetadata.credential: credential],
                // Long enough to be sent on a loaded machine (one that passes before the call
                // goes out is no unanswered call, and starts no check); short against the 60 s
                // the replica takes, and the three (15 s) against the 30 s between checks.
                deadline: .now() + .seconds(5)
            )
            let error = await #expect(throws: RPCError.self) {
                _ = try await pool.startOnReplica(request, on: loop).value
            }
            #expect(error?.code == .deadlineExceeded)
        }
        // Three deadlines passed within the 30 s spacing: one check, answered SERVING.
        try await eventually("the health check finished") { replica.finishedChecksAfterUnansweredCalls == 1 }
        #expect(!replica.isEjected)
        #expect(replica.consecutiveFailures == 0)
        await replica.close()
        await backend.stop()
        try await group.shutdownGracefully()
    }
}
