import EchoService
import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import Synchronization
import Testing

@testable import HearthGateway

/// A resolver the test controls: what each name answers, changed while calls run.
final class TestResolver: AddressResolver {
    private let answers = Mutex<[String: Result<[String], ResolutionFailed>]>([:])
    private let lookUps = Mutex(0)

    func answer(_ host: String, _ addresses: [String]) { self.answers.withLock { $0[host] = .success(addresses) } }
    func fail(_ host: String) {
        self.answers.withLock { $0[host] = .failure(ResolutionFailed(host: host, reason: "SERVFAIL")) }
    }

    var count: Int { self.lookUps.withLock { $0 } }

    func addresses(of host: String) async throws -> [String] {
        self.lookUps.withLock { $0 += 1 }
        guard let answer = self.answers.withLock({ $0[host] }) else {
            throw ResolutionFailed(host: host, reason: "no such name")
        }
        return try answer.get()
    }
}

/// Backends given as a host name: every address the name has is a replica, looked up again while
/// calls run (replicas on 127.0.0.2, 127.0.0.3 and 127.0.0.4, one port).
@Suite("Gateway: replicas found by name", .timeLimit(.minutes(2)), .serialized)
struct GatewayDiscoveryTests {
    static let name = "probe.hearth.test"

    /// Replicas named a, b, c... on 127.0.0.2, 127.0.0.3... sharing one port, each reporting
    /// to its own `events`.
    static func replicas(_ count: Int, events: [Events]? = nil) async throws -> [Replica] {
        let events = events ?? (0..<count).map { _ in Events() }
        let first = Replica(name: "a", host: "127.0.0.2", events: events[0])
        let port = try await first.port
        var replicas = [first]
        for index in 1..<count {
            let name = String(UnicodeScalar(UInt8(97 + index)))
            replicas.append(Replica(name: name, host: "127.0.0.\(index + 2)", port: port, events: events[index]))
        }
        for replica in replicas { _ = try await replica.port }
        return replicas
    }

    /// Who answered `calls` calls in a row (each call's replica name), every one OK.
    static func served(_ calls: Int, _ harness: GatewayHarness, token: String) async throws -> Set<String> {
        var names: Set<String> = []
        for _ in 0..<calls {
            let answer = try await harness.call(authorization: "Bearer \(token)")
            names.insert(String(answer.text.split(separator: "|")[0]))
        }
        return names
    }

    static let route = "hearth.probe."

    /// A gateway whose one backend is the name on `port`, looked up through `resolver` every
    /// `interval`; `body` gets the gateway and a user's token.
    static func withGateway(
        port: Int,
        resolver: TestResolver,
        interval: Duration,
        connectTimeout: Duration = .seconds(30),
        _ body: (GatewayHarness, String) async throws -> Void
    ) async throws {
        try await GatewayHarness.run(
            replicas: 0,
            connectTimeout: connectTimeout,
            backends: [(Self.name, port)],
            resolver: resolver,
            discoveryInterval: interval
        ) { harness in
            try await body(harness, try await harness.token())
        }
    }

    @Test("addresses the name gains are admitted once they serve; one it loses takes no new call, and its calls end")
    func followsTheName() async throws {
        let events = (0..<3).map { _ in Events() }
        let replicas = try await Self.replicas(3, events: events)
        let port = try await replicas[0].port
        // c's address is announced before anything serves on it.
        await replicas[2].stop()
        let resolver = TestResolver()
        resolver.answer(Self.name, ["127.0.0.2"])
        try await Self.withGateway(port: port, resolver: resolver, interval: .milliseconds(50)) { harness, token in
            try await eventually("the name's address replaces the name") {
                harness.gateway.backends(of: Self.route) == ["127.0.0.2:\(port)"]
            }
            #expect(try await Self.served(4, harness, token: token) == ["a"])

            resolver.answer(Self.name, ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
            try await eventually("b is admitted") { harness.gateway.backends(of: Self.route).count == 2 }
            let lookUps = resolver.count
            try await eventually("looked up again since") { resolver.count > lookUps + 2 }
            #expect(
                Set(harness.gateway.backends(of: Self.route)) == ["127.0.0.2:\(port)", "127.0.0.3:\(port)"],
                "an address where nothing answers the health check is not admitted"
            )
            try await eventually("calls reach a and b") {
                try await Self.served(8, harness, token: token) == ["a", "b"]
            }

            let c = Replica(name: "c", host: "127.0.0.4", port: port, events: events[2])
            defer { Task { await c.stop() } }
            try await eventually("c is admitted once it serves") { harness.gateway.backends(of: Self.route).count == 3 }
            try await eventually("calls reach all three") {
                try await Self.served(12, harness, token: token) == ["a", "b", "c"]
            }

            // A call in flight on a (held calls, which run until the test lets them end, go round
            // until one lands there); then the name loses a's address.
            var held: [Task<Hearth_Echo_V1_EchoResponse, any Error>] = []
            while held.count < 12, !(0..<held.count).contains(where: { events[0].contains("started:held-\($0)") }) {
                let index = held.count
                held.append(
                    Task {
                        try await harness.call(
                            ProbeService.stubborn,
                            {
                                var request = Hearth_Echo_V1_EchoRequest()
                                request.text = "held-\(index)"
                                return request
                            }(),
                            authorization: "Bearer \(token)"
                        )
                    }
                )
                try await eventually("held call \(index) runs") {
                    events.contains { $0.contains("started:held-\(index)") }
                }
            }
            let onA = try #require((0..<held.count).first { events[0].contains("started:held-\($0)") })
            resolver.answer(Self.name, ["127.0.0.3", "127.0.0.4"])
            try await eventually("a leaves the rotation") { harness.gateway.backends(of: Self.route).count == 2 }
            try await eventually("calls reach b and c only") {
                try await Self.served(8, harness, token: token) == ["b", "c"]
            }
            // a's call is still under way after a left, a's connection kept for it; it ends as
            // it would have.
            #expect(harness.gateway.retiringBackends(of: Self.route) == 1)
            for index in held.indices { for replica in events { replica.record("open:held-\(index)") } }
            for call in held { _ = try await call.value }
            #expect(events[0].contains("done:held-\(onA)"))
            try await eventually("a is closed once its call ended") {
                harness.gateway.retiringBackends(of: Self.route) == 0
            }
            await c.stop()
        }
        for replica in replicas { await replica.stop() }
    }

    @Test("a lookup that fails or answers nothing changes nothing")
    func failedLookUpKeepsReplicas() async throws {
        let replicas = try await Self.replicas(2)
        let port = try await replicas[0].port
        let resolver = TestResolver()
        resolver.answer(Self.name, ["127.0.0.2", "127.0.0.3"])
        try await Self.withGateway(port: port, resolver: resolver, interval: .milliseconds(20)) { harness, token in
            try await eventually("both admitted") {
                Set(harness.gateway.backends(of: Self.route)) == ["127.0.0.2:\(port)", "127.0.0.3:\(port)"]
            }
            for change in [{ resolver.fail(Self.name) }, { resolver.answer(Self.name, []) }] {
                change()
                let lookUps = resolver.count
                try await eventually("looked up a few times") { resolver.count >= lookUps + 3 }
                #expect(Set(harness.gateway.backends(of: Self.route)) == ["127.0.0.2:\(port)", "127.0.0.3:\(port)"])
                try await eventually("calls reach both") {
                    try await Self.served(6, harness, token: token) == ["a", "b"]
                }
            }
        }
        for replica in replicas { await replica.stop() }
    }

    @Test("a replica that fails to connect has the name looked up again at once, not at the next interval")
    func failedConnectLooksUpAgain() async throws {
        let replicas = try await Self.replicas(2)
        let port = try await replicas[0].port
        let resolver = TestResolver()
        resolver.answer(Self.name, ["127.0.0.2"])
        try await Self.withGateway(
            port: port,
            resolver: resolver,
            interval: .seconds(3600),
            connectTimeout: .seconds(5)
        ) { harness, token in
            try await eventually("a admitted") { harness.gateway.backends(of: Self.route) == ["127.0.0.2:\(port)"] }
            #expect(try await Self.served(2, harness, token: token) == ["a"])
            // a's pod is replaced by b's: a stops, the name points at b.
            await replicas[0].kill()
            resolver.answer(Self.name, ["127.0.0.3"])
            try await eventually("calls reach b") {
                (try? await harness.call(authorization: "Bearer \(token)"))?.text.hasPrefix("b|") == true
            }
            #expect(harness.gateway.backends(of: Self.route) == ["127.0.0.3:\(port)"])
        }
        for replica in replicas { await replica.stop() }
    }

    @Test("an IPv6 address among a name's addresses is a replica like any other, named in brackets")
    func ipv6Replica() async throws {
        let first = Replica(name: "a", host: "127.0.0.2", events: Events())
        let port = try await first.port
        let second = Replica(name: "b", host: "::1", port: port, events: Events())
        _ = try await second.port
        let resolver = TestResolver()
        resolver.answer(Self.name, ["127.0.0.2", "::1"])
        try await Self.withGateway(port: port, resolver: resolver, interval: .milliseconds(50)) { harness, token in
            try await eventually("both admitted") {
                Set(harness.gateway.backends(of: Self.route)) == ["127.0.0.2:\(port)", "[::1]:\(port)"]
            }
            try await eventually("calls reach both") {
                try await Self.served(6, harness, token: token) == ["a", "b"]
            }
        }
        await first.stop()
        await second.stop()
    }

    @Test("the system's resolver: a name's addresses from /etc/hosts; an address is no name")
    func systemResolver() async throws {
        let addresses = try await SystemResolver().addresses(of: "localhost")
        #expect(addresses.contains("127.0.0.1") || addresses.contains("::1"))
        #expect(Set(addresses).count == addresses.count, "each once")
        #expect(SystemResolver.isAddress("127.0.0.2") && SystemResolver.isAddress("::1"))
        #expect(!SystemResolver.isAddress("safety-headless") && !SystemResolver.isAddress("localhost"))
    }
}
