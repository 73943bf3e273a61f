import EchoService
import Foundation
import HearthContracts
import HearthRPC
import NIOCore
import SwiftProtobuf
import Testing

/// The wire contract, driven byte by byte from a bare client.
@Suite("Wire protocol", .timeLimit(.minutes(1)))
struct ProtocolTests {
    let echo = Hearth_Echo_V1_Echo.Method.echo.name

    @Test("pipelined requests are answered in completion order, PING with PONG")
    func outOfOrderCompletion() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let connection = try await RawConnection.connect(port: port)
            try await connection.send(
                .request(1, "hearth.test.v1.Test/Gate", echoRequest(text: "slow")),
                .request(2, self.echo, echoRequest(text: "fast")),
                .control(.ping, 99)
            )
            let fast = try #require(try await connection.waitFor { $0.isResponse(to: 2) })
            #expect(try Hearth_Echo_V1_EchoResponse(serializedBytes: fast.payload).text == "fast")
            #expect(try await connection.waitFor { $0.kind == .pong && $0.callID == 99 } != nil)
            signals.send("open:slow")
            _ = try #require(try await connection.waitFor { $0.isResponse(to: 1) })
            let order = connection.frames.map(\.callID)
            #expect(order.firstIndex(of: 2)! < order.firstIndex(of: 1)!)
            await connection.close()
        }
    }

    @Test("unknown method: UNIMPLEMENTED; undecodable payload: INVALID_ARGUMENT; connection stays up")
    func unknownMethodAndBadPayload() async throws {
        try await withTestServer { _, port in
            let connection = try await RawConnection.connect(port: port)
            var garbage = try WireFrame.request(2, self.echo, Hearth_Echo_V1_EchoRequest())
            garbage.payload = Data([0xFF, 0xFF, 0xFF])
            try await connection.send(
                .request(1, "hearth.echo.v1.Echo/Nope", Hearth_Echo_V1_EchoRequest()),
                garbage,
                .request(3, self.echo, echoRequest(text: "still here"))
            )
            let unknown = try #require(try await connection.waitFor { $0.isResponse(to: 1) })
            #expect(unknown.status.code == .unimplemented)
            #expect(unknown.status.message.contains("hearth.echo.v1.Echo/Nope"))
            let invalid = try #require(try await connection.waitFor { $0.isResponse(to: 2) })
            #expect(invalid.status.code == .invalidArgument)
            #expect(invalid.status.message.contains("hearth.echo.v1.EchoRequest"))
            let ok = try #require(try await connection.waitFor { $0.isResponse(to: 3) })
            #expect(ok.status.code == .ok)
            #expect(!connection.isClosed)
            await connection.close()
        }
    }

    @Test("on one connection each call's credential is checked, also one that differs from the last by a byte")
    func credentialPerCall() async throws {
        let secret = "credential-0123456789abcdef"
        func call(_ id: UInt64, credential: String) throws -> WireFrame {
            var frame = try WireFrame.request(id, self.echo, echoRequest(text: "hi"))
            var entry = WireFrame.MetadataEntry()
            entry.key = "x-hearth-internal"
            entry.value = credential
            frame.metadata = [entry]
            return frame
        }
        // The server's decoder reuses the last request's strings where the bytes are the same:
        // a credential of the same length, one byte apart, must not pass as the one before.
        let wrong = String(secret.dropLast()) + "0"
        try await withTestServer(configuration: ServerConfiguration(callers: .anyMethod(secret))) { _, port in
            let connection = try await RawConnection.connect(port: port)
            let codes = [secret, wrong, secret, secret + "0", secret]
            for (index, credential) in codes.enumerated() {
                try await connection.send(try call(UInt64(index + 1), credential: credential))
                let answer = try #require(try await connection.waitFor { $0.isResponse(to: UInt64(index + 1)) })
                #expect(answer.status.code == (credential == secret ? .ok : .unauthenticated), "call \(index + 1)")
            }
            await connection.close()
        }
    }

    @Test(
        "protocol violations get GOAWAY with the reason and a close; other connections are untouched",
        arguments: [
            ("garbage", [UInt8](RawConnection.prefix(4) + [0xFF, 0xFF, 0xFF, 0xFF]), StatusCode.invalidArgument),
            ("unknown kind", RawConnection.prefix(2) + [0x10, 0x09], StatusCode.invalidArgument),
            ("kind unspecified", RawConnection.prefix(2) + [0x08, 0x05], StatusCode.invalidArgument),
            ("request without method", RawConnection.prefix(4) + [0x08, 0x01, 0x10, 0x01], StatusCode.invalidArgument),
            ("oversized frame", RawConnection.prefix(4 * 1024 * 1024 + 1), StatusCode.resourceExhausted),
            // Refused at its prefix with a megabyte of its body behind it: the GOAWAY still
            // reaches the peer.
            (
                "oversized frame, body following",
                RawConnection.prefix(4 * 1024 * 1024 + 1) + [UInt8](repeating: 0, count: 1 << 20),
                StatusCode.resourceExhausted
            ),
        ]
    )
    func violations(name: String, bytes: [UInt8], code: StatusCode) async throws {
        try await withTestServer { _, port in
            let bystander = try await RawConnection.connect(port: port)
            try await bystander.send(.request(1, self.echo, echoRequest(text: "slow", sleepMs: 200)))

            let offender = try await RawConnection.connect(port: port)
            try await offender.sendBytes(bytes)
            let goAway = try #require(try await offender.waitFor { $0.kind == .goaway }, "\(name)")
            #expect(goAway.status.code == code)
            #expect(!goAway.status.message.isEmpty)
            #expect(try await offender.waitUntilClosed())

            let answer = try #require(try await bystander.waitFor { $0.isResponse(to: 1) })
            #expect(answer.status.code == .ok)
            #expect(!bystander.isClosed)
            await bystander.close()
        }
    }

    @Test("half-sent big frames past the server's partial-frame budget get GOAWAY; the budget frees when they go")
    func partialFrameBudget() async throws {
        let mib = 1024 * 1024
        var configuration = ServerConfiguration()
        configuration.maxPartialFrameBytes = 6 * mib
        // The budget alone: on a loaded machine the hog could otherwise be cut for stalling (10 s
        // without a byte) before the second connection comes, freeing the budget it tests.
        configuration.framePace = FramePace(grace: .seconds(600), minBytesPerSecond: 1, maxStall: nil)
        try await withTestServer(configuration: configuration) { server, port in
            // 3 MiB of a 4 MiB frame, then nothing: held, once the server has read it all.
            let hog = try await RawConnection.connect(port: port)
            try await hog.sendBytes(RawConnection.prefix(4 * mib) + Array(repeating: 0, count: 3 * mib))
            try await eventually("the hog's bytes are read") { server.partialFrameBytes == 3 * mib + 4 }
            // Another 3 MiB would pass 6 MiB: refused.
            let second = try await RawConnection.connect(port: port)
            try await second.sendBytes(RawConnection.prefix(4 * mib) + Array(repeating: 0, count: 3 * mib))
            let goAway = try #require(try await second.waitFor { $0.kind == .goaway })
            #expect(goAway.status.code == .resourceExhausted && goAway.status.message.contains("retry later"))
            #expect(try await second.waitUntilClosed())

            // Small calls go on meanwhile.
            let bystander = try await RawConnection.connect(port: port)
            try await bystander.send(.request(1, self.echo, echoRequest(text: "small")))
            #expect(try await bystander.waitFor { $0.isResponse(to: 1) }?.status.code == .ok)
            await bystander.close()
            // Once the hog is gone, a 3.5 MiB call goes through whole.
            await hog.close()
            let big = echoRequest(payload: Data(count: 7 * mib / 2))
            try await eventually("the hog's share is given back") {
                let caller = try await RawConnection.connect(port: port)
                try await caller.send(.request(1, self.echo, big))
                let answer = try await caller.waitFor { $0.isResponse(to: 1) || $0.kind == .goaway }
                await caller.close()
                return answer?.kind == .response && answer?.status.code == .ok
            }
        }
    }

    /// A server on which a 1 MiB frame has 200 ms plus 100 ms and half of one puts the 1 MiB
    /// partial-frame budget under pressure; `body` gets a connection that sent half of one.
    private func withHalfSentFrame(_ body: (RPCServer, Int, RawConnection) async throws -> Void) async throws {
        let mib = 1024 * 1024
        var configuration = ServerConfiguration()
        configuration.framePace = FramePace(grace: .milliseconds(200), minBytesPerSecond: 10 * mib)
        configuration.maxPartialFrameBytes = mib
        try await withTestServer(configuration: configuration) { server, port in
            let connection = try await RawConnection.connect(port: port)
            try await connection.sendBytes(RawConnection.prefix(mib) + Array(repeating: 0, count: mib / 2))
            try await body(server, port, connection)
        }
    }

    private func expectTooSlow(_ goAway: WireFrame?, on connection: RawConnection) async throws {
        let refusal = try #require(goAway)
        #expect(refusal.status.code == .deadlineExceeded)
        #expect(refusal.status.message.hasPrefix("frame of 1048576 bytes arriving too slowly"))
        #expect(try await connection.waitUntilClosed())
    }

    @Test("a frame dribbled slower than the server's pace gets GOAWAY DEADLINE_EXCEEDED; other calls go on")
    func framePace() async throws {
        try await self.withHalfSentFrame { _, port, slow in
            // A byte every 400 ms: some byte comes after the allowance however late the server
            // read the first ones (it may have refused the frame even sooner).
            var goAway: WireFrame?
            for _ in 0..<50 where goAway == nil {
                try await Task.sleep(for: .milliseconds(400))
                try? await slow.sendBytes([0])
                goAway = try await slow.waitFor(within: .milliseconds(100)) { $0.kind == .goaway }
            }
            try await self.expectTooSlow(goAway, on: slow)

            let bystander = try await RawConnection.connect(port: port)
            try await bystander.send(.request(1, self.echo, echoRequest(text: "small")))
            #expect(try await bystander.waitFor { $0.isResponse(to: 1) }?.status.code == .ok)
            await bystander.close()
        }
    }

    @Test("a half-sent frame whose peer goes silent gets GOAWAY DEADLINE_EXCEEDED at its allowance and its share back")
    func silentFrame() async throws {
        // The idle timeout (5 min) would be next.
        try await self.withHalfSentFrame { server, _, silent in
            let goAway = try await silent.waitFor(within: .seconds(30)) { $0.kind == .goaway }
            try await self.expectTooSlow(goAway, on: silent)
            try await eventually("the frame's share is given back") { server.partialFrameBytes == 0 }
        }
    }

    @Test("server deadline: DEADLINE_EXCEEDED at timeout_ms even if the handler ignores cancellation; no second answer")
    func deadlineWithStubbornHandler() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let connection = try await RawConnection.connect(port: port)
            let clock = ContinuousClock()
            let start = clock.now
            // The gate stays shut until the answer has come: the answer cannot be the handler's.
            try await connection.send(.request(1, "hearth.test.v1.Test/Gate", echoRequest(text: "a"), timeoutMs: 100))
            let answer = try #require(try await connection.waitFor { $0.isResponse(to: 1) })
            #expect(answer.status.code == .deadlineExceeded)
            #expect(clock.now - start >= .milliseconds(100))
            #expect(!signals.contains("gate-done:a"))

            // Once the handler does finish, nothing more is sent for call 1.
            signals.send("open:a")
            try await eventually("the handler finished") { signals.contains("gate-done:a") }
            try await connection.send(.request(2, self.echo, echoRequest(text: "after")))
            _ = try #require(try await connection.waitFor { $0.isResponse(to: 2) })
            #expect(connection.frames.filter { $0.callID == 1 }.count == 1)
            await connection.close()
        }
    }

    @Test("a call_id reused after its deadline gets its own answer, not the late one of the first call")
    func reusedCallID() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let connection = try await RawConnection.connect(port: port)
            // The first call's gate stays shut until its deadline's answer has come: that answer
            // cannot be the handler's, however late the loop runs its timer.
            try await connection.send(
                .request(5, "hearth.test.v1.Test/Gate", echoRequest(text: "first"), timeoutMs: 20)
            )
            let expired = try #require(try await connection.waitFor { $0.isResponse(to: 5) })
            #expect(expired.status.code == .deadlineExceeded)

            try await connection.send(.request(5, "hearth.test.v1.Test/Gate", echoRequest(text: "second")))
            signals.send("open:first")
            try await eventually("the first handler finished") { signals.contains("gate-done:first") }
            signals.send("open:second")
            let answers = try await {
                try await eventually("the second answer") {
                    connection.frames.filter { $0.isResponse(to: 5) }.count == 2
                }
                return connection.frames.filter { $0.isResponse(to: 5) }
            }()
            let second = try Hearth_Echo_V1_EchoResponse(serializedBytes: answers[1].payload)
            #expect(second.text == "second")
            await connection.close()
        }
    }

    @Test("handlers that ignore CANCEL still count against the calls-in-flight limit until they end")
    func cancelledButRunning() async throws {
        let signals = Signals()
        let configuration = ServerConfiguration(maxConcurrentCallsPerConnection: 2)
        try await withTestServer(
            configuration: configuration,
            services: [EchoService(), TestService(signals: signals)]
        ) {
            _,
            port in
            let connection = try await RawConnection.connect(port: port)
            for id in UInt64(1)...2 {
                try await connection.send(
                    .request(id, "hearth.test.v1.Test/Gate", echoRequest(text: "s\(id)")),
                    .control(.cancel, id)
                )
            }
            try await eventually("both handlers started") {
                signals.contains("started:s1") && signals.contains("started:s2")
            }
            try await connection.send(.request(3, self.echo, echoRequest(text: "3")))
            let refused = try #require(try await connection.waitFor { $0.isResponse(to: 3) })
            #expect(refused.status.code == .resourceExhausted)

            signals.send("open:s1")
            signals.send("open:s2")
            try await eventually("both handlers ended") {
                signals.contains("gate-done:s1") && signals.contains("gate-done:s2")
            }
            try await connection.send(.control(.ping, 9))
            _ = try #require(try await connection.waitFor { $0.kind == .pong })
            try await connection.send(.request(4, self.echo, echoRequest(text: "4")))
            #expect(try await connection.waitFor { $0.isResponse(to: 4) }?.status.code == .ok)
            #expect(!connection.frames.contains { $0.callID == 1 || $0.callID == 2 })
            await connection.close()
        }
    }

    @Test("a response over the frame limit is answered RESOURCE_EXHAUSTED; the connection stays up")
    func oversizedResponse() async throws {
        try await withTestServer(configuration: ServerConfiguration(maxFrameSize: 4096)) { _, port in
            let connection = try await RawConnection.connect(port: port)
            try await connection.send(
                .request(1, "hearth.test.v1.Test/Big", echoRequest(sleepMs: 5000)),
                .request(2, "hearth.test.v1.Test/Big", echoRequest(sleepMs: 1000))
            )
            let tooBig = try #require(try await connection.waitFor { $0.isResponse(to: 1) })
            #expect(tooBig.status.code == .resourceExhausted)
            let fine = try #require(try await connection.waitFor { $0.isResponse(to: 2) })
            #expect(fine.status.code == .ok)
            #expect(!connection.isClosed)
            await connection.close()
        }
    }

    @Test("CANCEL stops the handler and nothing is sent for that call")
    func cancel() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let connection = try await RawConnection.connect(port: port)
            try await connection.send(
                .request(7, "hearth.test.v1.Test/Observed", echoRequest(text: "c", sleepMs: 60_000))
            )
            try await eventually("the handler started") { signals.contains("started:c") }
            try await connection.send(.control(.cancel, 7))
            try await eventually("the handler was cancelled") { signals.contains("cancelled:c") }
            try await connection.send(.request(8, self.echo, echoRequest(text: "next")))
            _ = try #require(try await connection.waitFor { $0.isResponse(to: 8) })
            #expect(!connection.frames.contains { $0.callID == 7 })
            await connection.close()
        }
    }

    @Test("calls in flight per connection: the limit passes, one more is RESOURCE_EXHAUSTED")
    func concurrencyLimitBoundary() async throws {
        let signals = Signals()
        let configuration = ServerConfiguration(maxConcurrentCallsPerConnection: 4)
        try await withTestServer(
            configuration: configuration,
            services: [EchoService(), TestService(signals: signals)]
        ) {
            _,
            port in
            let connection = try await RawConnection.connect(port: port)
            for id in UInt64(1)...4 {
                try await connection.send(.request(id, "hearth.test.v1.Test/Gate", echoRequest(text: "g\(id)")))
            }
            try await eventually("four calls in flight") { (1...4).allSatisfy { signals.contains("started:g\($0)") } }
            try await connection.send(.request(5, self.echo, echoRequest(text: "5")))
            let refused = try #require(try await connection.waitFor { $0.isResponse(to: 5) })
            #expect(refused.status.code == .resourceExhausted)
            for id in 1...4 { signals.send("open:g\(id)") }
            for id in UInt64(1)...4 {
                let answer = try #require(try await connection.waitFor { $0.isResponse(to: id) })
                #expect(answer.status.code == .ok)
            }
            // With the four done, a new call fits again.
            try await connection.send(.request(6, self.echo, echoRequest(text: "6")))
            #expect(try await connection.waitFor { $0.isResponse(to: 6) }?.status.code == .ok)
            await connection.close()
        }
    }

    @Test(
        "connections from one address: the cap passes, one more gets GOAWAY RESOURCE_EXHAUSTED; other addresses go on"
    )
    func perAddressCap() async throws {
        var configuration = ServerConfiguration()
        configuration.maxConnectionsPerAddress = 2
        try await withTestServer(configuration: configuration) { _, port in
            let first = try await RawConnection.connect(port: port)
            let second = try await RawConnection.connect(port: port)
            for connection in [first, second] {
                try await connection.send(.control(.ping, 1))
                #expect(try await connection.waitFor { $0.kind == .pong } != nil)
            }
            let third = try await RawConnection.connect(port: port)
            let goAway = try #require(try await third.waitFor { $0.kind == .goaway })
            #expect(goAway.status.code == .resourceExhausted)
            #expect(goAway.status.message.contains("from 127.0.0.1 (limit 2)"), "\(goAway.status.message)")
            #expect(try await third.waitUntilClosed())

            // Another host is not refused for this one's connections.
            let other = try await RawConnection.connect(port: port, from: "127.0.0.2")
            try await other.send(.control(.ping, 2))
            #expect(try await other.waitFor { $0.kind == .pong } != nil)

            // Closing one makes room again for its address.
            await first.close()
            try await eventually("a new connection from 127.0.0.1 is admitted") { await Self.admits(port: port) }
            await second.close()
            await other.close()
        }
    }

    @Test("connections: the limit passes, one more gets GOAWAY RESOURCE_EXHAUSTED")
    func connectionLimitBoundary() async throws {
        try await withTestServer(configuration: ServerConfiguration(maxConnections: 2)) { _, port in
            let first = try await RawConnection.connect(port: port)
            let second = try await RawConnection.connect(port: port)
            try await first.send(.control(.ping, 1))
            try await second.send(.control(.ping, 1))
            #expect(try await first.waitFor { $0.kind == .pong } != nil)
            #expect(try await second.waitFor { $0.kind == .pong } != nil)

            let third = try await RawConnection.connect(port: port)
            let goAway = try #require(try await third.waitFor { $0.kind == .goaway })
            #expect(goAway.status.code == .resourceExhausted)
            #expect(try await third.waitUntilClosed())

            // Closing one makes room again.
            await first.close()
            try await eventually("a new connection is admitted") { await Self.admits(port: port) }
            await second.close()
        }
    }

    /// Runs `body` with a server whose call 1 on `connection` is in flight, held at the test
    /// service's gate until `signals` gets `open:TEXT`; the server's run ends before it returns.
    private func withCallInFlight(
        _ text: String,
        configuration: ServerConfiguration = ServerConfiguration(),
        _ body: (RPCServer, RawConnection, Signals) async throws -> Void
    ) async throws {
        let signals = Signals()
        let server = RPCServer(
            configuration: configuration,
            services: [EchoService(), TestService(signals: signals)],
            logger: testLogger
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let port = try await server.localAddress.port!
            let connection = try await RawConnection.connect(port: port)
            try await connection.send(.request(1, "hearth.test.v1.Test/Gate", echoRequest(text: text)))
            try await eventually("the call is in flight") { signals.contains("started:\(text)") }
            try await body(server, connection, signals)
            try await group.waitForAll()
        }
    }

    @Test("graceful shutdown: GOAWAY, in-flight calls finish, new calls refused, then close")
    func drain() async throws {
        try await self.withCallInFlight("in flight") { server, connection, signals in
            server.beginShutdown()
            let goAway = try #require(try await connection.waitFor { $0.kind == .goaway })
            #expect(goAway.status.code == .unavailable)
            try await connection.send(.request(2, self.echo, echoRequest(text: "too late")))
            let refused = try #require(try await connection.waitFor { $0.isResponse(to: 2) })
            #expect(refused.status.code == .unavailable)
            #expect(!connection.isClosed, "still open while call 1 runs")

            signals.send("open:in flight")
            let finished = try #require(try await connection.waitFor { $0.isResponse(to: 1) })
            #expect(finished.status.code == .ok)
            #expect(try await connection.waitUntilClosed())
        }
    }

    @Test(
        "a call still running when the drain's time runs out is answered UNAVAILABLE, not dropped with the connection"
    )
    func drainTimeoutAnswers() async throws {
        var configuration = ServerConfiguration()
        configuration.drainTimeout = .milliseconds(300)
        try await self.withCallInFlight("held", configuration: configuration) { server, connection, signals in
            let shutdownBegan = ContinuousClock.now
            server.beginShutdown()
            let answer = try #require(
                try await connection.waitFor(within: .seconds(30)) { $0.isResponse(to: 1) },
                "\(connection.seen), \(ContinuousClock.now - shutdownBegan) after the shutdown began"
            )
            #expect(answer.status.code == .unavailable)
            #expect(answer.status.message.contains("stopped before the call finished"))
            #expect(try await connection.waitUntilClosed())
            signals.send("open:held")
        }
    }

    @Test(
        "a request that crosses the draining server's GOAWAY is answered: the connection waits for the PONG behind it"
    )
    func drainAnswersCrossingRequests() async throws {
        // Neither the PONG wait nor the drain's own bound can be what closes it in this test.
        var configuration = ServerConfiguration()
        configuration.drainPongWait = .seconds(120)
        configuration.drainTimeout = .seconds(120)
        let server = RPCServer(configuration: configuration, services: [EchoService()], logger: testLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let port = try await server.localAddress.port!
            let connection = try await RawConnection.connect(port: port)
            // The server has taken the connection (a call answered on it), and nothing is in
            // flight: before, the connection closed as the GOAWAY went out.
            try await connection.send(.request(9, self.echo, echoRequest(text: "first")))
            _ = try #require(try await connection.waitFor { $0.isResponse(to: 9) })
            server.beginShutdown()
            _ = try #require(try await connection.waitFor { $0.kind == .goaway })
            let ping = try #require(try await connection.waitFor { $0.kind == .ping })
            #expect(ping.callID == 0)
            // Sent as if before the GOAWAY had been read.
            try await connection.send(.request(1, self.echo, echoRequest(text: "crossing")))
            let answer = try #require(try await connection.waitFor(within: .seconds(30)) { $0.isResponse(to: 1) })
            #expect(answer.status.code == .unavailable)
            #expect(answer.metadata.contains { $0.key == TrustedMetadata.notRun }, "marked as not run")
            #expect(!connection.isClosed)
            try await connection.send(.control(.pong, ping.callID))
            #expect(
                try await connection.waitUntilClosed(within: .seconds(30)),
                "closed at the PONG, not after a minute"
            )
            try await group.waitForAll()
        }
    }

    @Test("a client tells a call the server ran none of (it crossed a GOAWAY) from one it answered UNAVAILABLE")
    func notRunMayBeSentElsewhere() async throws {
        let server = try await ScriptedServer { request in
            var goAway = WireFrame.control(.goaway)
            goAway.status = RPCError(.unavailable, "server is shutting down").wireStatus
            var answer = WireFrame.control(.response, request.callID)
            answer.status =
                RPCError(.unavailable, request.method.hasSuffix("NotRun") ? "shutting down" : "disk full")
                .wireStatus
            if request.method.hasSuffix("NotRun") {
                answer.metadata = [
                    .with {
                        $0.key = TrustedMetadata.notRun
                        $0.value = "1"
                    }
                ]
            }
            return [goAway, answer]
        }
        for (method, notRun) in [("hearth.test.v1.Test/NotRun", true), ("hearth.test.v1.Test/Ran", false)] {
            let connection = try await RPCConnection.connect(host: "127.0.0.1", port: server.port).get()
            do {
                _ = try await connection.call(method: method, payload: Data(), timeout: .seconds(30))
                Issue.record("\(method) succeeded")
            } catch let error as RPCError {
                #expect(error.code == .unavailable && error.wasNeverSent == notRun, "\(method): \(error)")
            }
            try? await connection.channel.close()
        }
        await server.close()
    }

    /// Whether a new connection to `port` is served (a PING answered) rather than refused.
    static func admits(port: Int) async -> Bool {
        guard let next = try? await RawConnection.connect(port: port) else { return false }
        // Served: a PONG; refused: GOAWAY and a close (either comes at once; 5 s bound the wait).
        let admitted = try? await {
            try await next.send(.control(.ping, 5))
            return try await next.waitFor(within: .seconds(5)) { $0.kind == .pong || $0.kind == .goaway }?.kind == .pong
        }()
        await next.close()
        return admitted == true
    }
}
