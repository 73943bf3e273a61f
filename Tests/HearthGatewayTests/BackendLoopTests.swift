import EchoService
import Foundation
import HearthRPC
import NIOCore
import NIOPosix
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
            policy: EjectionPolicy(),
            loops: loops
        )
        let metadata: Metadata = [TrustedMetadata.credential: credential]
        for loop in loops {
            let client = replica.client(on: loop)
            // The first call connects (in a task); once connected, a call starts without one.
            _ = try await client.start(
                EchoService.echoMethod,
                payload: Data(),
                metadata: metadata,
                timeout: nil,
                on: loop
            )
            .value
            let call = client.start(EchoService.echoMethod, payload: Data(), metadata: metadata, timeout: nil, on: loop)
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
}
