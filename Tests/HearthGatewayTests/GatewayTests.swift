import EchoService
import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import JWTKit
import SwiftProtobuf
import Testing

@testable import HearthGateway

@Suite("Gateway", .timeLimit(.minutes(1)))
struct GatewayTests {
    private func echo(text: String = "", sleepMs: UInt32 = 0) -> Hearth_Echo_V1_EchoRequest {
        var request = Hearth_Echo_V1_EchoRequest()
        request.text = text
        request.sleepMs = sleepMs
        return request
    }

    @Test("calls are spread over both replicas of a service, with the verified user")
    func routesToReplicas() async throws {
        try await GatewayHarness.run { harness in
            let token = try await harness.token(for: "alice")
            var served: Set<String> = []
            for _ in 0..<20 {
                let fields = try await harness.call(authorization: "Bearer \(token)").text.split(separator: "|")
                served.insert(String(fields[0]))
                #expect(fields[1] == "alice")
            }
            #expect(served == ["replica-0", "replica-1"])

            let echoed = try await harness.call(
                Hearth_Echo_V1_Echo.Method.echo.name,
                self.echo(text: "hi"),
                authorization: "Bearer \(token)"
            )
            #expect(echoed.text == "hi")
        }
    }

    @Test("a client cannot act as someone else: x-hearth-* keys and the token are not forwarded")
    func spoofedMetadataIsStripped() async throws {
        try await GatewayHarness.run { harness in
            let token = try await harness.token(for: "alice")
            let fields = try await harness.call(
                authorization: "Bearer \(token)",
                metadata: [
                    "x-hearth-user": "mallory", "x-hearth-internal": "guess", "x-hearth-role": "admin", "x-app": "1",
                ]
            ).text.split(separator: "|")
            #expect(fields[1] == "alice")
            let keys = Set(fields[2].split(separator: ","))
            #expect(keys.contains("x-app"))
            #expect(!keys.contains("x-hearth-role"))
            #expect(!keys.contains("authorization"))
        }
    }

    @Test("a method for Hearth's own services is refused to clients, PERMISSION_DENIED, and never forwarded")
    func servicesOnlyMethods() async throws {
        try await GatewayHarness.run(replicas: 1, internalMethods: [Hearth_Echo_V1_Echo.Method.echo.name]) { harness in
            let token = "Bearer \(try await harness.token())"
            do {
                _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, authorization: token)
                Issue.record("forwarded")
            } catch let error as RPCError {
                #expect(error.code == .permissionDenied && error.message.contains("Hearth's own services"))
            }
            _ = try await harness.call(authorization: token)  // the route's other methods pass
            // Without a token, that is said first.
            await expectCode(.unauthenticated) {
                _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, authorization: nil)
            }
        }
    }

    @Test("forwarded calls are counted by method and code in the gateway's metrics")
    func metricsCountForwardedCalls() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let token = try await harness.token()
            _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, authorization: "Bearer \(token)")
            _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, authorization: "Bearer \(token)")
            _ = try? await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, authorization: nil)
            var failing = self.echo()
            failing.failWithCode = 5
            _ = try? await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, failing, authorization: "Bearer \(token)")

            let echo = try #require(harness.metrics.snapshot()[Hearth_Echo_V1_Echo.Method.echo.name])
            #expect(echo.countsByCode == [.ok: 2, .unauthenticated: 1, .notFound: 1])
        }
    }

    @Test("metadata the gateway could not forward whole is refused there, at its boundary")
    func metadataLimit() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let token = try await harness.token()
            // Authorization is not forwarded; the 3 entries the gateway adds make 64, the most a
            // service takes.
            func extra(_ count: Int) -> [String: String] {
                Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", "v") })
            }
            let fields = try await harness.call(authorization: "Bearer \(token)", metadata: extra(61)).text
                .split(separator: "|")
            #expect(fields[2].split(separator: ",").count == Metadata.maxEntries)
            let error = await #expect(throws: RPCError.self) {
                _ = try await harness.call(authorization: "Bearer \(token)", metadata: extra(62))
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("62 besides authorization, at most 61") == true)
        }
    }

    @Test("health checks need no token")
    func healthWithoutToken() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let status = try await HealthClient(client: harness.client).check()
            #expect(status == .serving)
        }
    }

    @Test("without a token, any method is UNAUTHENTICATED, one of no known service too: the token comes first")
    func tokenFirst() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            for method in ["hearth.nope.v1.Nope/Nope", "hearth.probe.v1.Probe/MadeUp"] {
                let error = await #expect(throws: RPCError.self) {
                    _ = try await harness.call(method, authorization: nil)
                }
                #expect(error?.code == .unauthenticated, "\(method)")
            }
        }
    }

    @Test("a method of no known service is UNIMPLEMENTED")
    func unknownPackage() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let token = try await harness.token()
            let error = await #expect(throws: RPCError.self) {
                _ = try await harness.call("hearth.nope.v1.Nope/Nope", authorization: "Bearer \(token)")
            }
            #expect(error?.code == .unimplemented)
            // Under a route's prefix, without a token, and answered UNIMPLEMENTED by the service.
            _ = try? await harness.call("hearth.probe.v1.Probe/MadeUp", authorization: nil)
            _ = try? await harness.call("hearth.probe.v1.Probe/MadeUp2", authorization: "Bearer \(token)")
            _ = try await harness.call(authorization: "Bearer \(token)")
            // Made-up names are counted together; a method is named once a service answered it OK.
            let metrics = harness.metrics.snapshot()
            #expect(metrics["hearth.nope.v1.Nope/Nope"] == nil && metrics["hearth.probe.v1.Probe/MadeUp"] == nil)
            #expect(metrics["hearth.probe.v1.Probe/MadeUp2"] == nil)
            #expect(
                metrics[MethodMetrics.otherMethods]?.countsByCode == [.unimplemented: 2, .unauthenticated: 1]
            )
            #expect(metrics[ProbeService.method]?.countsByCode == [.ok: 1])
        }
    }

    @Test("services refuse calls without the internal credential, except health checks")
    func directCallsNeedTheCredential() async throws {
        let replica = Replica(name: "direct")
        let client = RPCClient(host: "127.0.0.1", port: try await replica.port)
        let echo = Hearth_Echo_V1_Echo.Client(client)
        for metadata in [[:], [TrustedMetadata.credential: "wrong"], [TrustedMetadata.user: "alice"]] {
            let error = await #expect(throws: RPCError.self) {
                _ = try await echo.echo(self.echo(text: "x"), options: CallOptions(metadata: metadata))
            }
            #expect(error?.code == .unauthenticated)
        }
        let status = try await HealthClient(client: client).check()
        #expect(status == .serving)
        let ok = try await echo.echo(
            self.echo(text: "x"),
            options: CallOptions(metadata: [TrustedMetadata.credential: credential])
        )
        #expect(ok.text == "x")
        await client.close()
        await replica.stop()
    }

    @Test("the client's deadline is forwarded, and the route timeout caps it")
    func deadlines() async throws {
        try await GatewayHarness.run(replicas: 1, routeTimeout: .milliseconds(200)) { harness in
            let token = try await harness.token()
            let clock = ContinuousClock()
            var start = clock.now
            let clientDeadline = await #expect(throws: RPCError.self) {
                _ = try await harness.call(
                    Hearth_Echo_V1_Echo.Method.echo.name,
                    self.echo(sleepMs: 60_000),
                    authorization: "Bearer \(token)",
                    timeout: .milliseconds(100)
                )
            }
            #expect(clientDeadline?.code == .deadlineExceeded)
            // Far sooner than the 60 s handler, even on a starved machine.
            #expect(clock.now - start < .seconds(30))

            start = clock.now
            let routeDeadline = await #expect(throws: RPCError.self) {
                _ = try await harness.call(
                    Hearth_Echo_V1_Echo.Method.echo.name,
                    self.echo(sleepMs: 60_000),
                    authorization: "Bearer \(token)"
                )
            }
            #expect(routeDeadline?.code == .deadlineExceeded)
            #expect(clock.now - start < .seconds(30))
        }
    }

    @Test("rate limit per user: the burst passes, the next is RESOURCE_EXHAUSTED with retry_after")
    func rateLimit() async throws {
        try await GatewayHarness.run(replicas: 1, limits: RateLimiter.Limits(perSecond: 2, burst: 3)) { harness in
            let alice = "Bearer \(try await harness.token(for: "alice"))"
            let bob = "Bearer \(try await harness.token(for: "bob"))"
            for _ in 0..<3 { _ = try await harness.call(authorization: alice) }
            let limited = await #expect(throws: RPCError.self) { _ = try await harness.call(authorization: alice) }
            #expect(limited?.code == .resourceExhausted)
            #expect(limited?.retryAfter == .milliseconds(500))
            _ = try await harness.call(authorization: bob)  // others are not affected

            harness.clock.advance(by: 0.5)
            _ = try await harness.call(authorization: alice)
            await #expect(throws: RPCError.self) { _ = try await harness.call(authorization: alice) }
        }
    }

    @Test(
        "calls in flight per user: the 3rd of 3 is forwarded, the 4th RESOURCE_EXHAUSTED; others unaffected; any end frees a place"
    )
    func callsInFlightPerUser() async throws {
        let limits = RateLimiter.Limits(perSecond: 1, burst: 1_000, maxInFlight: 3)
        try await GatewayHarness.run(replicas: 1, limits: limits) { harness in
            let alice = "Bearer \(try await harness.token(for: "alice"))"
            let bob = "Bearer \(try await harness.token(for: "bob"))"
            var held: [Task<Hearth_Echo_V1_EchoResponse, any Error>] = []
            for index in 0..<3 { held.append(try await harness.hold("a\(index)", for: 60_000, authorization: alice)) }
            #expect(harness.gateway.callsInFlight(of: "alice") == 3)
            let refused = await #expect(throws: RPCError.self) { _ = try await harness.call(authorization: alice) }
            #expect(refused?.code == .resourceExhausted)
            #expect(refused?.message.contains("at most 3") == true, "\(String(describing: refused))")
            #expect(harness.gateway.callsInFlight(of: "alice") == 3, "a refused call holds no place")
            _ = try await harness.call(authorization: bob)

            // A call the client cancels frees its place, and so does one the replica refuses.
            held[0].cancel()
            _ = await held[0].result
            try await eventually("the cancelled call's place is free") {
                harness.gateway.callsInFlight(of: "alice") == 2
            }
            let unknown = await #expect(throws: RPCError.self) {
                _ = try await harness.call("hearth.echo.v1.Echo/NoSuchMethod", authorization: alice)
            }
            #expect(unknown?.code == .unimplemented)
            #expect(harness.gateway.callsInFlight(of: "alice") == 2)
            _ = try await harness.call(authorization: alice)
            #expect(harness.gateway.callsInFlight(of: "alice") == 2)

            for call in held.dropFirst() { call.cancel() }
            for call in held { _ = await call.result }
            try await eventually("every place is free") { harness.gateway.callsInFlight(of: "alice") == 0 }
            #expect(harness.gateway.callsInFlight(of: "bob") == 0)
        }
    }

    @Test("cancelling a call at the client cancels it at the backend")
    func cancelIsForwarded() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let token = "Bearer \(try await harness.token())"
            let call = try await harness.hold("c", for: 60_000, authorization: token)
            call.cancel()
            _ = await call.result
            try await eventually("the backend's handler was cancelled") { harness.events.contains("cancelled:c") }
        }
    }

    @Test(
        "a request larger than its route's replicas take is refused at the gateway; calls sharing the connection go on"
    )
    func requestOverTheRoutesFrameLimit() async throws {
        let mib = 1024 * 1024
        // The gateway takes 8 MiB frames (checkins' photos); the echo and probe replicas 4 MiB.
        // (Bytes, not text: a debug build checks every character of a long string.)
        try await GatewayHarness.run(replicas: 1, gatewayFrameSize: 8 * mib) { harness in
            let token = "Bearer \(try await harness.token())"
            let call = try await harness.hold("h", for: 500, authorization: token)
            var big = Hearth_Echo_V1_EchoRequest()
            big.payload = Data(count: 5 * mib)
            let error = await #expect(throws: RPCError.self) {
                _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, big, authorization: token)
            }
            #expect(
                error?.code == .resourceExhausted && error?.message.contains("\(4 * mib)") == true,
                "\(String(describing: error))"
            )
            // At the edge: the payload alone fits (the most a check of the payload and a 64-byte
            // envelope let through), but not with the metadata the gateway adds (the internal
            // credential, the user, the request id).
            big.payload = Data(count: 4 * mib - 64 - Hearth_Echo_V1_Echo.Method.echo.name.utf8.count - 5)
            let edge = await #expect(throws: RPCError.self) {
                _ = try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, big, authorization: token)
            }
            #expect(edge?.code == .resourceExhausted, "\(String(describing: edge))")
            _ = try await call.value
            big.payload = Data(count: 4 * mib - 1024)
            #expect(
                try await harness.call(Hearth_Echo_V1_Echo.Method.echo.name, big, authorization: token).payload.count
                    == 4 * mib
                    - 1024
            )
        }
    }

    @Test("a backend that dies under a call in flight: the client gets UNAVAILABLE promptly")
    func backendDiesInFlight() async throws {
        // The route's deadline beyond the bound below, and the handler's 60 s beyond both: a
        // call that waited for either would fail it.
        try await GatewayHarness.run(replicas: 1, routeTimeout: .seconds(45)) { harness in
            let token = "Bearer \(try await harness.token())"
            let call = try await harness.hold("d", for: 60_000, authorization: token)
            let clock = ContinuousClock()
            let start = clock.now
            await harness.replicas[0].kill()
            let error = await #expect(throws: RPCError.self) { _ = try await call.value }
            #expect(error?.code == .unavailable)
            #expect(clock.now - start < .seconds(30))
        }
    }

}
