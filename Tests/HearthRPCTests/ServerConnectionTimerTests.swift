import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import HearthRPC

/// A server connection on an `EmbeddedChannel`: its timers (idleness, deadlines, the drain's)
/// run on the test's clock (`advanceTime`), so no test here sleeps. Synchronous throughout: an
/// embedded loop is used from one thread.
@Suite("Server connection timers on a test clock")
struct ServerConnectionTimerTests {
    static let waits = "hearth.test.v1.Test/Wait"
    static let answers = "hearth.test.v1.Test/Answer"
    static let refuses = "hearth.test.v1.Test/Refuse"
    static let denies = "hearth.test.v1.Test/Deny"
    static let health = "hearth.health.v1.Health/Check"

    /// One connection with a method that waits until it is cancelled.
    final class Connection {
        /// How many handlers ended by cancellation.
        final class Count: Sendable {
            let value = Atomic<Int>(0)
        }

        let channel = EmbeddedChannel()
        let cancelled = Count()
        var loop: EmbeddedEventLoop { self.channel.embeddedEventLoop }

        init(_ configuration: ServerConfiguration) throws {
            let cancelled = self.cancelled
            let wait: RawHandler = { _, _ in
                // Ends when the call's task is cancelled (a deadline, a CANCEL, the drain's end).
                let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
                for await _ in stream {}
                continuation.finish()
                cancelled.value.wrappingAdd(1, ordering: .relaxed)
                throw CancellationError()
            }
            let answer: RawHandler = { payload, _ in payload }
            let refuse: RawHandler = { _, _ in throw RPCError(.unauthenticated, "bad token") }
            let deny: RawHandler = { _, _ in throw RPCError(.permissionDenied, "not yours") }
            try self.channel.pipeline.syncOperations.addServerConnectionHandlers(
                router: MethodRouter(
                    handlers: [
                        ServerConnectionTimerTests.waits: wait, ServerConnectionTimerTests.answers: answer,
                        ServerConnectionTimerTests.refuses: refuse, ServerConnectionTimerTests.health: answer,
                        ServerConnectionTimerTests.denies: deny,
                    ],
                    forwarder: nil,
                    publicMethods: [ServerConnectionTimerTests.health],
                    callers: nil,
                    logger: testLogger
                ),
                configuration: configuration,
                callsInFlight: CallCounter(),
                partialFrames: PartialFrameBudget(limit: configuration.maxPartialFrameBytes),
                logger: Logger(label: "test")
            )
            try self.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        func send(_ frame: WireFrame) throws {
            try self.channel.writeInbound(try self.channel.allocator.buffer(framing: frame))
            self.loop.run()
        }

        func request(_ callID: UInt64, _ method: String = ServerConnectionTimerTests.waits, timeoutMs: UInt32 = 0)
            throws
        {
            var frame = WireFrame.control(.request, callID)
            frame.method = method
            frame.timeoutMs = timeoutMs
            try self.send(frame)
        }

        /// The frames written since the last look.
        func written() throws -> [WireFrame] {
            var frames: [WireFrame] = []
            while var buffer = try self.channel.readOutbound(as: ByteBuffer.self) {
                while let length = buffer.readInteger(as: UInt32.self), let body = buffer.readSlice(length: Int(length))
                {
                    frames.append(try WireFrame(decoding: body))
                }
            }
            return frames
        }

        var isOpen: Bool { self.channel.isActive }
    }

    @Test("an idle connection gets GOAWAY at idleTimeout, not a millisecond before, and is closed after the grace")
    func idle() throws {
        let connection = try Connection(ServerConfiguration(idleTimeout: .seconds(10)))
        connection.loop.advanceTime(by: .seconds(10) - .milliseconds(1))
        #expect(try connection.written().isEmpty)
        connection.loop.advanceTime(by: .milliseconds(1))
        let goAway = try #require(try connection.written().first)
        #expect(goAway.kind == .goaway && goAway.status.code == .unavailable)
        #expect(goAway.status.message.contains("idle"))
        #expect(connection.isOpen)
        connection.loop.advanceTime(by: ServerConnectionHandler.idleGoAwayGrace)
        #expect(!connection.isOpen)
    }

    @Test("a call in flight keeps an idle connection open; the idle time counts again from its answer")
    func idleWithCall() throws {
        let connection = try Connection(ServerConfiguration(idleTimeout: .seconds(10)))
        try connection.request(1, timeoutMs: 25_000)
        connection.loop.advanceTime(by: .seconds(25) - .milliseconds(1))
        #expect(try connection.written().isEmpty, "still running: no GOAWAY")
        connection.loop.advanceTime(by: .milliseconds(1))
        let answers = try connection.written()
        #expect(answers.map(\.kind) == [.response], "\(answers)")
        #expect(answers.first?.isResponse(to: 1) == true && answers.first?.status.code == .deadlineExceeded)
        connection.loop.advanceTime(by: .seconds(10) - .milliseconds(1))
        #expect(try connection.written().isEmpty, "idle counts from the answer")
        connection.loop.advanceTime(by: .milliseconds(1))
        #expect(try connection.written().map(\.kind) == [.goaway])
    }

    @Test("a deadline: DEADLINE_EXCEEDED at timeout_ms on the loop's clock, the handler cancelled, no second answer")
    func deadline() throws {
        let connection = try Connection(ServerConfiguration())
        try connection.request(7, timeoutMs: 500)
        connection.loop.advanceTime(by: .milliseconds(499))
        #expect(try connection.written().isEmpty)
        connection.loop.advanceTime(by: .milliseconds(1))
        let answers = try connection.written()
        #expect(answers.count == 1)
        #expect(answers.first?.isResponse(to: 7) == true)
        #expect(answers.first?.status.code == .deadlineExceeded)
        connection.loop.run()
        #expect(connection.cancelled.value.load(ordering: .relaxed) == 1)
        #expect(try connection.written().isEmpty, "the handler's end answers nothing more")
    }

    @Test("a drain: GOAWAY and PING; a late REQUEST refused as never run; the drain's timeout answers calls in flight")
    func drainTimeout() throws {
        let connection = try Connection(ServerConfiguration())
        try connection.request(1)
        connection.channel.pipeline.fireUserInboundEventTriggered(DrainEvent())
        #expect(try connection.written().map(\.kind) == [.goaway, .ping])
        try connection.request(2)
        let refused = try #require(try connection.written().first)
        #expect(refused.isResponse(to: 2) && refused.status.code == .unavailable)
        #expect(Metadata(entries: refused.metadata)[TrustedMetadata.notRun] != nil)
        connection.channel.pipeline.fireUserInboundEventTriggered(DrainTimeoutEvent())
        connection.loop.run()
        let cut = try connection.written()
        #expect(cut.first?.isResponse(to: 1) == true && cut.first?.status.code == .unavailable)
        #expect(!connection.isOpen)
    }

    @Test("a drain with nothing in flight closes when its PING's wait passes, not before")
    func drainPongWait() throws {
        var configuration = ServerConfiguration()
        configuration.drainPongWait = .seconds(2)
        let connection = try Connection(configuration)
        connection.channel.pipeline.fireUserInboundEventTriggered(DrainEvent())
        connection.loop.advanceTime(by: .seconds(2) - .milliseconds(1))
        #expect(connection.isOpen)
        connection.loop.advanceTime(by: .milliseconds(1))
        #expect(!connection.isOpen)
    }

    @Test("a drain with nothing in flight closes at the PONG to its PING")
    func drainPong() throws {
        let connection = try Connection(ServerConfiguration())
        connection.channel.pipeline.fireUserInboundEventTriggered(DrainEvent())
        #expect(connection.isOpen)
        try connection.send(.control(.pong, 0))
        #expect(!connection.isOpen)
    }

    @Test(
        "no authenticated call within the window: GOAWAY UNAUTHENTICATED at that moment; PINGs, health checks and refused calls do not count"
    )
    func unauthenticatedClosed() throws {
        var configuration = ServerConfiguration()
        configuration.authenticationWindow = .seconds(10)
        let connection = try Connection(configuration)
        try connection.send(.control(.ping, 1))
        try connection.request(2, ServerConnectionTimerTests.health)
        try connection.request(3, ServerConnectionTimerTests.refuses)
        connection.loop.advanceTime(by: .seconds(9))
        try connection.send(.control(.ping, 4))
        let before = try connection.written()
        #expect(before.map(\.kind) == [.pong, .response, .response, .pong])
        connection.loop.advanceTime(by: .seconds(1) - .milliseconds(1))
        #expect(connection.isOpen)
        connection.loop.advanceTime(by: .milliseconds(1))
        let goAway = try #require(try connection.written().first)
        #expect(goAway.kind == .goaway && goAway.status.code == .unauthenticated)
        #expect(!connection.isOpen)
    }

    @Test("one authenticated call within the window keeps the connection, however long it then stays")
    func authenticatedKept() throws {
        var configuration = ServerConfiguration()
        configuration.authenticationWindow = .seconds(10)
        let connection = try Connection(configuration)
        connection.loop.advanceTime(by: .seconds(10) - .milliseconds(1))
        try connection.request(1, ServerConnectionTimerTests.answers)
        #expect(try connection.written().map(\.kind) == [.response])
        connection.loop.advanceTime(by: .seconds(60))
        let later = try connection.written()
        #expect(connection.isOpen && later.isEmpty)
    }

    @Test("an unknown method proves nothing; a call denied for what it asks (PERMISSION_DENIED) proves who is calling")
    func whatAuthenticates() throws {
        var configuration = ServerConfiguration()
        configuration.authenticationWindow = .seconds(10)
        let unknown = try Connection(configuration)
        try unknown.request(1, "hearth.test.v1.Test/NoSuchMethod")
        unknown.loop.advanceTime(by: .seconds(10))
        #expect(try unknown.written().map(\.kind) == [.response, .goaway])
        #expect(!unknown.isOpen)
        let denied = try Connection(configuration)
        try denied.request(1, ServerConnectionTimerTests.denies)
        denied.loop.advanceTime(by: .seconds(60))
        #expect(denied.isOpen)
    }

    @Test(
        "a slow first call still running when the window ends is answered; no new call is taken; then the connection closes"
    )
    func slowFirstCall() throws {
        var configuration = ServerConfiguration()
        configuration.authenticationWindow = .seconds(10)
        let connection = try Connection(configuration)
        try connection.request(1, timeoutMs: 15_000)
        connection.loop.advanceTime(by: .seconds(10))
        let goAway = try #require(try connection.written().first)
        #expect(goAway.kind == .goaway && goAway.status.code == .unauthenticated)
        #expect(connection.isOpen)
        try connection.request(2, ServerConnectionTimerTests.answers)
        let refused = try #require(try connection.written().first)
        #expect(refused.isResponse(to: 2) && refused.status.code == .unavailable)
        connection.loop.advanceTime(by: .seconds(5))
        let answer = try #require(try connection.written().first)
        #expect(answer.isResponse(to: 1) && answer.status.code == .deadlineExceeded)
        #expect(!connection.isOpen)
    }
}
