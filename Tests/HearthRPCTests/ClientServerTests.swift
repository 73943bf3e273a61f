import EchoService
import Foundation
import HearthContracts
import HearthCore
import HearthTestSupport
import Histogram
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SwiftProtobuf
import Synchronization
import Testing

@testable import HearthRPC

/// The Swift client against a real server on a free port.
@Suite("Client and server", .timeLimit(.minutes(1)))
struct ClientServerTests {
    @Test("typed echo round trip, with metadata and a request id")
    func echo() async throws {
        try await withTestServer { _, port in
            let client = makeClient(port: port)
            let payload = Data([0, 1, 2, 255])
            let response = try await Hearth_Echo_V1_Echo.Client(client).echo(
                echoRequest(text: "hello", payload: payload)
            )
            #expect(response.text == "hello")
            #expect(response.payload == payload)

            let observed = try await client.call(
                "hearth.test.v1.Test/Observed",
                echoRequest(text: "meta"),
                as: Hearth_Echo_V1_EchoResponse.self,
                options: CallOptions(metadata: ["x-request-id": "req-42"])
            )
            #expect(observed.text == "meta request-id=req-42 peer-set=true")
            await client.close()
        }
    }

    @Test("10,000 concurrent calls on one connection are all answered correctly")
    func tenThousandConcurrentCalls() async throws {
        let configuration = ServerConfiguration(maxConcurrentCallsPerConnection: 10_000)
        try await withTestServer(configuration: configuration) { _, port in
            let client = Hearth_Echo_V1_Echo.Client(makeClient(port: port))
            let mismatches = try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<10_000 {
                    group.addTask {
                        let text = "call \(i)"
                        let payload = withUnsafeBytes(of: UInt32(i).bigEndian) { Data($0) }
                        let response = try await client.echo(echoRequest(text: text, sleepMs: 20, payload: payload))
                        return response.text == text && response.payload == payload
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 0 : 1) }
            }
            #expect(mismatches == 0)
            await client.rpc.close()
        }
    }

    @Test("status codes: the asked-for code, domain errors mapped, internals not leaked")
    func errors() async throws {
        try await withTestServer { _, port in
            let client = makeClient(port: port)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            let notFound = await #expect(throws: RPCError.self) { try await echo.echo(echoRequest(failWithCode: 5)) }
            #expect(notFound?.code == .notFound)

            let invalid = await #expect(throws: RPCError.self) { try await echo.echo(echoRequest(failWithCode: 17)) }
            #expect(invalid?.code == .invalidArgument)
            #expect(invalid?.violations.first?.field == "fail_with_code")

            let domain = await #expect(throws: RPCError.self) {
                try await client.callRaw("hearth.test.v1.Test/Domain", payload: Data())
            }
            #expect(domain?.code == .failedPrecondition)
            #expect(domain?.message == "domain rule broken")

            let crash = await #expect(throws: RPCError.self) {
                try await client.callRaw("hearth.test.v1.Test/Crash", payload: Data())
            }
            #expect(crash?.code == .internal)
            #expect(crash?.message == "internal error")

            let unknown = await #expect(throws: RPCError.self) {
                try await client.callRaw("hearth.nope.v1.Nope/Nope", payload: Data())
            }
            #expect(unknown?.code == .unimplemented)
            await client.close()
        }
    }

    @Test("client deadline: DEADLINE_EXCEEDED at the timeout, and the server stops the handler")
    func clientDeadline() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let client = makeClient(port: port)
            _ = try await Hearth_Echo_V1_Echo.Client(client).echo(echoRequest(text: "connect first"))
            let clock = ContinuousClock()
            let start = clock.now
            let error = await #expect(throws: RPCError.self) {
                try await client.callRaw(
                    "hearth.test.v1.Test/Observed",
                    payload: echoRequest(text: "d", sleepMs: 60_000).serializedData(),
                    options: CallOptions(timeout: .milliseconds(100))
                )
            }
            #expect(error?.code == .deadlineExceeded)
            // Not the handler's minute (a loaded CI machine has stalled this for 6 s).
            #expect(clock.now - start < .seconds(30))
            try await eventually("the server cancelled the handler") { signals.contains("cancelled:d") }
            await client.close()
        }
    }

    @Test("cancelling the calling task sends CANCEL: the server's handler stops")
    func taskCancellation() async throws {
        let signals = Signals()
        try await withTestServer(services: [EchoService(), TestService(signals: signals)]) { _, port in
            let client = makeClient(port: port)
            let call = Task {
                try await client.callRaw(
                    "hearth.test.v1.Test/Observed",
                    payload: echoRequest(text: "t", sleepMs: 60_000).serializedData()
                )
            }
            try await eventually("the handler started") { signals.contains("started:t") }
            call.cancel()
            let result = await call.result
            #expect(throws: RPCError.self) { try result.get() }
            try await eventually("the server cancelled the handler") { signals.contains("cancelled:t") }
            await client.close()
        }
    }

    @Test("losing the connection fails calls in flight with UNAVAILABLE")
    func connectionLoss() async throws {
        let signals = Signals()
        let server = RPCServer(services: [TestService(signals: signals)], logger: testLogger)
        let run = Task { try await server.run() }
        let port = try await server.localAddress.port!
        let client = makeClient(port: port)
        let inFlight = Task {
            try await client.call(
                "hearth.test.v1.Test/Observed",
                echoRequest(text: "lost", sleepMs: 60_000),
                as: Hearth_Echo_V1_EchoResponse.self
            )
        }
        try await eventually("the call is in flight") { signals.contains("started:lost") }
        run.cancel()  // closes every connection at once
        let error = await #expect(throws: RPCError.self) { try await inFlight.value }
        #expect(error?.code == .unavailable)
        _ = try? await run.value
        await client.close()
    }

    @Test("the client reconnects after the server restarts on the same port")
    func reconnect() async throws {
        let first = RPCServer(services: [EchoService()], logger: testLogger)
        let firstRun = Task { try await first.run() }
        let port = try await first.localAddress.port!
        let client = makeClient(port: port)
        let echo = Hearth_Echo_V1_Echo.Client(client)
        #expect(try await echo.echo(echoRequest(text: "one")).text == "one")

        first.beginShutdown()
        try await firstRun.value
        let down = await #expect(throws: RPCError.self) { try await echo.echo(echoRequest(text: "down")) }
        #expect(down?.code == .unavailable)

        let second = RPCServer(
            configuration: ServerConfiguration(port: port),
            services: [EchoService()],
            logger: testLogger
        )
        let secondRun = Task { try await second.run() }
        _ = try await second.localAddress
        try await eventually("calls succeed again") {
            (try? await echo.echo(echoRequest(text: "two")).text) == "two"
        }
        second.beginShutdown()
        try await secondRun.value
        await client.close()
    }

    @Test("a port already taken fails the server's start with an error naming the process and the address")
    func portTaken() async throws {
        try await withTestServer { _, port in
            var logger = testLogger
            logger[metadataKey: "process"] = "echo"
            let second = RPCServer(
                configuration: ServerConfiguration(port: port),
                services: [EchoService()],
                logger: logger
            )
            do {
                try await second.run()
                Issue.record("two servers on one port")
            } catch let error as ListenFailed {
                let text = "\(error)"
                #expect(
                    text.hasPrefix("echo cannot listen on ") && text.hasSuffix(":\(port): Address already in use"),
                    "\(text)"
                )
            }
        }
    }

    @Test("after the server closes an idle connection, the next call goes out on a new one")
    func reconnectAfterIdleGoAway() async throws {
        // Long enough that a fresh connection is not itself idle before its first call goes out
        // (the client sends it from the connect's completion, on the event loop), even on a
        // loaded machine.
        try await withTestServer(configuration: ServerConfiguration(idleTimeout: .seconds(5))) { _, port in
            let client = makeClient(port: port)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            #expect(try await echo.echo(echoRequest(text: "first")).text == "first")
            try await eventually("the idle connection got GOAWAY") { !client.allConnectionsAcceptCalls }
            #expect(try await echo.echo(echoRequest(text: "second")).text == "second")
            await client.close()
        }
    }

    @Test("a connection made ahead and let go idle is no refusal: none is reported and the next call goes out at once")
    func unusedConnectionLetGoIdle() async throws {
        // Idle after 5 s: the unused connection is let go long after the refusal window (100 ms)
        // whatever the machine's pauses, and the next connection lasts (5 s and the grace) until
        // the call after it arrives.
        try await withTestServer(configuration: ServerConfiguration(idleTimeout: .seconds(5))) { _, port in
            // A backoff the call would notice: had the idle close counted as a refusal, the call
            // would fail fast with UNAVAILABLE for 5 s.
            let client = RPCClient(
                configuration: .init(
                    host: "127.0.0.1",
                    port: port,
                    backoff: Backoff(initial: .seconds(5), maximum: .seconds(5), jitter: 0),
                    refusalWindow: .milliseconds(100)
                )
            )
            var connects: [EventLoopFuture<RPCConnection>] = []
            var refusals: [RPCError] = []
            #expect(!client.prepareForCalls(connectStarted: { connects.append($0) }, refused: { refusals.append($0) }))
            _ = try await #require(connects.first).get()
            try await eventually("the unused connection got GOAWAY") { !client.allConnectionsAcceptCalls }
            _ = client.prepareForCalls(connectStarted: { connects.append($0) }, refused: { refusals.append($0) })
            #expect(refusals.isEmpty, "\(refusals)")
            #expect(try await Hearth_Echo_V1_Echo.Client(client).echo(echoRequest(text: "after")).text == "after")
            await client.close()
        }
    }

    @Test("a server that refuses a connection at once is not hammered: calls back off with retry_after")
    func backoffWhenRefusedAtOnce() async throws {
        try await withTestServer(configuration: ServerConfiguration(maxConnections: 1)) { _, port in
            let holder = try await RawConnection.connect(port: port)
            try await holder.send(.control(.ping, 1))
            _ = try #require(try await holder.waitFor { $0.kind == .pong })

            // The backoff's clock moves only when the test moves it: the second call falls
            // inside it however long the tests running beside this one keep its task waiting.
            let clock = ManualDeadlines()
            var configuration = RPCClient.Configuration(
                host: "127.0.0.1",
                port: port,
                backoff: Backoff(initial: .seconds(5), maximum: .seconds(5), jitter: 0)
            )
            configuration.now = clock.now
            let client = RPCClient(configuration: configuration)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            let first = await #expect(throws: RPCError.self) { _ = try await echo.echo(echoRequest(text: "x")) }
            #expect(first?.code == .unavailable)
            let second = await #expect(throws: RPCError.self) { _ = try await echo.echo(echoRequest(text: "x")) }
            #expect(second?.code == .unavailable)
            #expect(second?.retryAfter != nil, "failed fast from the backoff instead of connecting again")

            // Room again: once the backoff passes, calls succeed (each try lets 5 s pass, so a
            // refusal from before the server saw the holder go backs off no longer than that).
            await holder.close()
            try await eventually("calls succeed again") {
                clock.advance(by: .seconds(5))
                return (try? await echo.echo(echoRequest(text: "y")).text) == "y"
            }
            await client.close()
        }
    }

    @Test("a deadline that passes while connecting: DEADLINE_EXCEEDED, marked as never sent (safe to try elsewhere)")
    func deadlineWhileConnecting() async throws {
        let hole = try HangingListener()
        defer { hole.close() }
        let client = makeClient(port: hole.port)
        let error = await #expect(throws: RPCError.self) {
            _ = try await Hearth_Echo_V1_Echo.Client(client).echo(
                echoRequest(text: "x"),
                options: CallOptions(timeout: .milliseconds(100))
            )
        }
        #expect(error?.code == .deadlineExceeded)
        #expect(error?.wasNeverSent == true)
        #expect(error?.message.contains("while connecting") == true)
        await client.close()
    }

    @Test("a call cancelled while its connection is being made: CANCELLED, marked as never sent")
    func cancelWhileConnecting() async throws {
        let hole = try HangingListener()
        defer { hole.close() }
        let client = makeClient(port: hole.port)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        // Started without a task: the call waits for the hanging connect until it is cancelled.
        let call = client.start(
            Hearth_Echo_V1_Echo.Method.echo.name,
            payload: Data(),
            metadata: [:],
            timeout: nil,
            on: loop
        )
        call.cancel()
        let error = await #expect(throws: RPCError.self) { _ = try await call.response.get() }
        #expect(error?.code == .cancelled)
        #expect(error?.wasNeverSent == true)
        await client.close()
    }

    @Test(
        "extra connections: opened when the others hold their limit, counting calls that wait for a connect; past them the server refuses"
    )
    func extraConnections() async throws {
        try await self.withTwoCallsAConnection { server, client, signals, gates in
            // Four calls started before any connection is up: two wait for each connect.
            let held = try await gates(["g0", "g1", "g2", "g3"])
            try await eventually("the server runs all four") {
                (0..<4).allSatisfy { signals.contains("started:g\($0)") }
            }
            #expect(server.openConnections == 2)
            let refused = await #expect(throws: RPCError.self) {
                _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            }
            #expect(refused?.code == .resourceExhausted)

            // One ends: its connection takes the next call.
            signals.send("open:g0")
            _ = try await held[0].response.get()
            _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            for index in 1..<4 { signals.send("open:g\(index)") }
            for call in held { _ = try await call.response.get() }
            #expect(server.openConnections == 2)
        }
    }

    @Test(
        "a connection the server says is full (handlers of cancelled calls still running) is passed over: the call goes out again on an extra one"
    )
    func connectionFullAtTheServer() async throws {
        try await self.withTwoCallsAConnection { server, client, signals, gates in
            // Two calls whose handlers ignore the cancel: the client counts none, the server two.
            let held = try await gates(["z0", "z1"])
            try await eventually("both handlers run") {
                signals.contains("started:z0") && signals.contains("started:z1")
            }
            for call in held { call.cancel() }
            for call in held { _ = try? await call.response.get() }

            // Refused on the first connection (marked as not run), then sent on the extra one.
            _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            #expect(server.openConnections == 2)
            // The full one stays passed over while the extra one has room.
            _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            for text in ["z0", "z1"] { signals.send("open:\(text)") }
            try await eventually("the handlers ended") {
                signals.contains("gate-done:z0") && signals.contains("gate-done:z1")
            }
        }
    }

    @Test(
        "an extra connection backing off after a refused connect is passed over: the overflow is the server's RESOURCE_EXHAUSTED, not a fast UNAVAILABLE"
    )
    func extraConnectionBackingOff() async throws {
        // One connection is all the server takes; a refused connect is not tried again for a minute.
        try await self.withTwoCallsAConnection(
            maxConnections: 1,
            backoff: Backoff(initial: .seconds(60), maximum: .seconds(60))
        ) {
            server,
            client,
            signals,
            gates in
            let held = try await gates(["b0", "b1"])
            try await eventually("both run") { signals.contains("started:b0") && signals.contains("started:b1") }
            let first = await #expect(throws: RPCError.self) {
                _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            }
            // The extra connection is refused: UNAVAILABLE, or, when the refusal came before the
            // call went out, the full connection's answer to the call tried once more.
            #expect([.unavailable, .resourceExhausted].contains(first?.code), "\(String(describing: first))")
            #expect(client.slots.extra[0].room(at: 2) == .none, "the extra connection was tried, and backs off")
            // While it backs off, the overflow goes to the full connection, which refuses it.
            for _ in 0..<3 {
                let next = await #expect(throws: RPCError.self) {
                    _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
                }
                #expect(next?.code == .resourceExhausted, "\(String(describing: next))")
            }
            for text in ["b0", "b1"] { signals.send("open:\(text)") }
            for call in held { _ = try await call.response.get() }
            _ = try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            #expect(server.openConnections == 1)
        }
    }

    /// A server taking 2 calls a connection (and at most `maxConnections`), a client of it with
    /// one extra connection whose callers run on its connections' loop (as the gateway's do),
    /// and `gates`, which starts a `Gate` call named after each text in one go on that loop.
    private func withTwoCallsAConnection(
        maxConnections: Int = 10_000,
        backoff: Backoff = Backoff(),
        _ body: (
            RPCServer, RPCClient, Signals, _ gates: ([String]) async throws -> [StartedCall]
        ) async throws -> Void
    ) async throws {
        let signals = Signals()
        try await withTestServer(
            configuration: ServerConfiguration(maxConcurrentCallsPerConnection: 2, maxConnections: maxConnections),
            services: [EchoService(), TestService(signals: signals)]
        ) { server, port in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let client = RPCClient(
                configuration: .init(
                    host: "127.0.0.1",
                    port: port,
                    extraConnections: 1,
                    maxCallsPerConnection: 2,
                    backoff: backoff
                ),
                group: loop
            )
            func gates(_ texts: [String]) async throws -> [StartedCall] {
                let payloads = try texts.map { try echoRequest(text: $0).serializedData() }
                return try await loop.submit {
                    payloads.map {
                        client.start("hearth.test.v1.Test/Gate", payload: $0, metadata: [:], timeout: nil, on: loop)
                    }
                }.get()
            }
            try await body(server, client, signals, gates)
            await client.close()
        }
    }

    @Test("a call from a task already cancelled is not sent: CANCELLED, marked as never sent, no connection made")
    func callFromCancelledTask() async throws {
        try await withTestServer { server, port in
            let client = makeClient(port: port)
            let call = Task {
                try? await Task.sleep(for: .seconds(3600))  // ends at once when cancelled
                return try await client.callRaw(Hearth_Echo_V1_Echo.Method.echo.name, payload: Data())
            }
            call.cancel()
            let error = await #expect(throws: RPCError.self) { _ = try await call.value }
            #expect(error?.code == .cancelled)
            #expect(error?.wasNeverSent == true)
            #expect(server.openConnections == 0)
            await client.close()
        }
    }

    @Test("calls made while the connection is being made all go out on it once it is up")
    func callsWaitingForOneConnection() async throws {
        try await withTestServer { server, port in
            let client = makeClient(port: port)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<50 {
                    group.addTask {
                        let answer = try await echo.echo(echoRequest(text: "\(i)"))
                        #expect(answer.text == "\(i)")
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.openConnections == 1)
            await client.close()
        }
    }

    @Test("a pool of connections spreads calls round-robin")
    func pool() async throws {
        try await withTestServer { _, port in
            let client = makeClient(port: port, connections: 4)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        let text = try await echo.echo(echoRequest(text: "\(i)")).text
                        #expect(text == "\(i)")
                    }
                }
                try await group.waitForAll()
            }
            await client.close()
        }
    }

    @Test("health: SERVING for the process and its services, SERVICE_UNKNOWN otherwise, NOT_SERVING while draining")
    func health() async throws {
        let server = RPCServer(services: [EchoService()], logger: testLogger)
        let run = Task { try await server.run() }
        let port = try await server.localAddress.port!
        let client = makeClient(port: port)
        let health = HealthClient(client: client)
        #expect(try await health.check() == .serving)
        #expect(try await health.check(service: "hearth.echo.v1.Echo") == .serving)
        #expect(try await health.check(service: "hearth.nope.v1.Nope") == .serviceUnknown)
        server.health.setServing(false)
        #expect(try await health.check() == .notServing)
        server.beginShutdown()
        try await run.value
        await client.close()
    }

    @Test("health after a storage fault: NOT_SERVING until the hold passes with no other, to the nanosecond")
    func healthAfterStorageFault() {
        let clock = ManualDeadline()
        let state = HealthState(serving: ["hearth.echo.v1.Echo"], storageFaultHold: .seconds(30), now: clock.now)
        #expect(state.status(of: "") == .serving)
        #expect(state.noteStorageFault(), "the first fault is news")
        clock.set(.seconds(10))
        #expect(!state.noteStorageFault(), "a fault during the hold is not, and starts it again")
        clock.set(.seconds(40) - .nanoseconds(1))
        #expect(state.status(of: "") == .notServing)
        #expect(state.status(of: "hearth.echo.v1.Echo") == .notServing)
        #expect(state.status(of: "hearth.nope.v1.Nope") == .serviceUnknown)
        clock.set(.seconds(40))
        #expect(state.status(of: "") == .serving)
        #expect(state.noteStorageFault(), "a fault after the hold is news again")
        state.setServing(false)
        clock.set(.seconds(100))
        #expect(state.status(of: "") == .notServing, "draining")
    }

    @Test("health hears only of store faults: contention or any other error leaves it SERVING")
    func healthHearsStoreFaultsOnly() {
        struct Failure: StorageFailure {
            var mayPass: Bool
            var isStoreFault: Bool
        }
        let state = HealthState(serving: [])
        state.noteFailure(Failure(mayPass: true, isStoreFault: false), logger: testLogger)
        state.noteFailure(RPCError(.invalidArgument, "bad"), logger: testLogger)
        #expect(state.status(of: "") == .serving)
        state.noteFailure(Failure(mayPass: true, isStoreFault: true), logger: testLogger)
        #expect(state.status(of: "") == .notServing)
    }

    @Test("a request over the frame limit fails alone; the connection keeps serving")
    func oversizedRequest() async throws {
        try await withTestServer { _, port in
            let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port, maxFrameSize: 2048))
            let echo = Hearth_Echo_V1_Echo.Client(client)
            let error = await #expect(throws: RPCError.self) {
                try await echo.echo(echoRequest(payload: Data(count: 4096)))
            }
            #expect(error?.code == .resourceExhausted)
            let small = try await echo.echo(echoRequest(text: "small"))
            #expect(small.text == "small")
            await client.close()
        }
    }

    @Test("64 metadata entries pass; 65 are INVALID_ARGUMENT, and the connection keeps serving")
    func metadataEntryLimit() async throws {
        try await withTestServer { _, port in
            let client = makeClient(port: port)
            func call(withEntries count: Int) async throws -> Hearth_Echo_V1_EchoResponse {
                let metadata = Dictionary(uniqueKeysWithValues: (1...count).map { ("k\($0)", "v") })
                return try await Hearth_Echo_V1_Echo.Client(client).echo(
                    echoRequest(text: "\(count)"),
                    options: CallOptions(metadata: metadata)
                )
            }
            let atLimit = try await call(withEntries: Metadata.maxEntries)
            #expect(atLimit.text == "64")
            let error = await #expect(throws: RPCError.self) { try await call(withEntries: Metadata.maxEntries + 1) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("64 metadata entries") == true)
            let after = try await call(withEntries: 1)
            #expect(after.text == "1")
            await client.close()
        }
    }

    @Test("PING over the client's connection")
    func ping() async throws {
        try await withTestServer { _, port in
            let connection = try await RPCConnection.connect(host: "127.0.0.1", port: port).get()
            try await connection.ping()
            await connection.close()
        }
    }

    @Test("graceful shutdown of a ServiceGroup (as on SIGTERM) drains: the in-flight call completes")
    func serviceGroupDrain() async throws {
        let signals = Signals()
        let server = RPCServer(services: [TestService(signals: signals)], logger: testLogger)
        let group = ServiceGroup(services: [server], logger: testLogger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.localAddress.port!
            let client = makeClient(port: port)
            let inFlight = Task {
                try await client.call(
                    "hearth.test.v1.Test/Gate",
                    echoRequest(text: "drained"),
                    as: Hearth_Echo_V1_EchoResponse.self
                )
            }
            try await eventually("the call is in flight") { signals.contains("started:drained") }
            await group.triggerGracefulShutdown()
            try await eventually("the server stopped serving") { server.health.status(of: "") == .notServing }
            signals.send("open:drained")
            #expect(try await inFlight.value.text == "drained")
            try await tasks.waitForAll()
            await client.close()
        }
    }

    @Test("client interceptors wrap every call, in order, and see its outcome")
    func clientInterceptors() async throws {
        let metrics = MethodMetrics()
        let tagger = MetadataTagger()
        try await withTestServer { _, port in
            let client = RPCClient(
                configuration: .init(host: "127.0.0.1", port: port),
                interceptors: [ClientObservabilityInterceptor(metrics: metrics, logger: testLogger), tagger]
            )
            let observed = try await client.call(
                "hearth.test.v1.Test/Observed",
                echoRequest(text: "tagged"),
                as: Hearth_Echo_V1_EchoResponse.self
            )
            #expect(observed.text.contains("request-id=from-interceptor"))
            _ = try? await Hearth_Echo_V1_Echo.Client(client).echo(echoRequest(failWithCode: 7))
            #expect(metrics.snapshot()["hearth.test.v1.Test/Observed"]?.countsByCode[.ok] == 1)
            #expect(metrics.snapshot()[Hearth_Echo_V1_Echo.Method.echo.name]?.countsByCode[.permissionDenied] == 1)
            await client.close()
        }
    }

    @Test("observability interceptor counts calls by method and code")
    func metrics() async throws {
        let metrics = MethodMetrics()
        try await withTestServer(interceptors: [ServerObservabilityInterceptor(metrics: metrics)]) { _, port in
            let client = makeClient(port: port)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            _ = try await echo.echo(echoRequest(text: "a"))
            _ = try await echo.echo(echoRequest(text: "b"))
            _ = try? await echo.echo(echoRequest(failWithCode: 5))
            let stats = try #require(metrics.snapshot()[Hearth_Echo_V1_Echo.Method.echo.name])
            #expect(stats.countsByCode[.ok] == 2)
            #expect(stats.countsByCode[.notFound] == 1)
            #expect(stats.latencyMicros.totalCount == 3)
            await client.close()
        }
    }
}

/// Adds a request id to every call, as a credentials interceptor would add its header.
private struct MetadataTagger: ClientInterceptor {
    func intercept(
        method: String,
        payload: Data,
        options: CallOptions,
        next: @Sendable (String, Data, CallOptions) async throws -> Data
    ) async throws -> Data {
        var options = options
        options.metadata["x-request-id"] = "from-interceptor"
        return try await next(method, payload, options)
    }
}

/// A clock for a client's backoffs that stands still until a test moves it.
final class ManualDeadlines: Sendable {
    private let current = Mutex(NIODeadline.now())

    var now: @Sendable () -> NIODeadline { { self.current.withLock { $0 } } }

    func advance(by amount: TimeAmount) { self.current.withLock { $0 = $0 + amount } }
}
