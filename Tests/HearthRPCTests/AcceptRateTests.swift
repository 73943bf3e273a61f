import Foundation
import NIOCore
import Synchronization
import Testing

@testable import HearthRPC

/// How fast one address may open connections to a public listener (the gateway).
@Suite("Accept rate per address", .timeLimit(.minutes(1)))
struct AcceptRateTests {
    /// A clock the test moves.
    final class ManualTime: Sendable {
        private let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { self.value.withLock { $0 } }
        func advance(by seconds: TimeInterval) { self.value.withLock { $0 += seconds } }
    }

    @Test("a burst passes, one more is refused with when to retry, refilled at the rate; addresses apart")
    func bucketPerAddress() {
        let time = ManualTime()
        let limiter = AcceptLimiter(rate: AcceptRate(perSecond: 2, burst: 3), now: { time.now })
        for _ in 0..<3 { #expect(limiter.admit("192.0.2.1") == nil) }
        #expect(limiter.admit("192.0.2.1") == 0.5, "the next in half a second at 2 a second")
        #expect(limiter.admit("192.0.2.2") == nil, "another address has a bucket of its own")
        time.advance(by: 0.5)
        #expect(limiter.admit("192.0.2.1") == nil)
        #expect(limiter.admit("192.0.2.1") != nil)
        #expect(AcceptRate(perSecond: 50, burst: 256).description == "50 a second (bursts of 256)")
        #expect(AcceptRate(perSecond: 0.5, burst: 1).description == "0.5 a second (bursts of 1)")
    }

    @Test("buckets that refilled are let go once there are many; one still refilling is kept")
    func memoryIsBounded() {
        let time = ManualTime()
        let limiter = AcceptLimiter(rate: AcceptRate(perSecond: 1, burst: 2), now: { time.now }, sweepAbove: 100)
        for host in 0..<100 { #expect(limiter.admit("10.0.0.\(host)") == nil) }
        #expect(limiter.admit("attacker") == nil && limiter.admit("attacker") == nil)
        #expect(limiter.admit("attacker") != nil)
        // 1 s later every host's bucket is full again (one token taken, one refilled); the
        // attacker's (two taken, one refilled) is not.
        time.advance(by: 1)
        #expect(limiter.tracked == 101)
        #expect(limiter.admit("newcomer") == nil)
        #expect(limiter.tracked == 2, "the attacker's and the newcomer's")
        #expect(limiter.admit("attacker") == nil)
        #expect(limiter.admit("attacker") != nil, "its bucket was kept: closing and reconnecting gains nothing")
    }

    @Test("over TCP: connections past the burst get GOAWAY RESOURCE_EXHAUSTED with retry_after_ms; others go on")
    func refusedOverTCP() async throws {
        var configuration = ServerConfiguration()
        // One every 1,000 s: no token comes back while the test runs.
        configuration.acceptRatePerAddress = AcceptRate(perSecond: 0.001, burst: 2)
        try await withTestServer(configuration: configuration) { _, port in
            for id in 1...2 {
                let admitted = try await RawConnection.connect(port: port)
                try await admitted.send(.control(.ping, UInt64(id)))
                #expect(try await admitted.waitFor { $0.kind == .pong } != nil)
                await admitted.close()  // closed at once: it still counted
            }
            let third = try await RawConnection.connect(port: port)
            let goAway = try #require(try await third.waitFor { $0.kind == .goaway })
            #expect(goAway.status.code == .resourceExhausted)
            #expect(
                goAway.status.message == "connections from 127.0.0.1 come faster than 0.001 a second (bursts of 2)"
            )
            #expect((900_000...1_000_000).contains(goAway.status.retryAfterMs), "about 1,000 s")
            #expect(try await third.waitUntilClosed())

            let other = try await RawConnection.connect(port: port, from: "127.0.0.2")
            try await other.send(.control(.ping, 3))
            #expect(try await other.waitFor { $0.kind == .pong } != nil)
            await other.close()
        }
    }
}
