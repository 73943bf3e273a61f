import Foundation
import NIOCore
import NIOEmbedded
import SwiftProtobuf
import Testing

@testable import HearthRPC

/// A connection's smaller frame limit until a call on it has passed authentication (the
/// gateway's 64 KiB), on an embedded channel.
@Suite("Frame limit before authentication")
struct FrameLimitBeforeAuthenticationTests {
    typealias Connection = ServerConnectionTimerTests.Connection
    static let limit = 1024

    static var configuration: ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.maxFrameSizeBeforeAuthentication = Self.limit
        return configuration
    }

    /// A REQUEST for `method` whose encoded body is exactly `size` bytes.
    static func request(_ callID: UInt64, _ method: String, size: Int) throws -> WireFrame {
        var frame = WireFrame.control(.request, callID)
        frame.method = method
        // The payload's own length prefix grows with it: find the size that lands exactly.
        for padding in stride(from: size, through: 0, by: -1) {
            frame.payload = Data(repeating: 0x61, count: padding)
            if try frame.serializedData().count == size { return frame }
        }
        throw Unreachable(size: size)
    }

    struct Unreachable: Error {
        let size: Int
    }

    /// Only the length prefix of a frame of `size` bytes: the limit applies before its body.
    static func announce(_ size: Int, on connection: Connection) throws {
        var prefix = connection.channel.allocator.buffer(capacity: 4)
        prefix.writeInteger(UInt32(size))
        try connection.channel.writeInbound(prefix)
        connection.loop.run()
    }

    @Test(
        "a first frame of exactly the limit is taken; one byte more gets GOAWAY naming Authenticate, and the connection closes"
    )
    func boundary() throws {
        let atLimit = try Connection(Self.configuration)
        try atLimit.send(try Self.request(1, ServerConnectionTimerTests.answers, size: Self.limit))
        let answer = try #require(try atLimit.written().first)
        #expect(answer.isResponse(to: 1) && !answer.hasStatus)

        let over = try Connection(Self.configuration)
        try Self.announce(Self.limit + 1, on: over)
        let goAway = try #require(try over.written().first)
        #expect(goAway.kind == .goaway && goAway.status.code == .resourceExhausted)
        #expect(goAway.status.message.contains("frame of \(Self.limit + 1) bytes before any call"))
        #expect(goAway.status.message.contains("hearth.gateway.v1.Gateway/Authenticate"))
        #expect(!over.isOpen)
    }

    @Test("after a call passed authentication, frames up to the server's limit are taken, PERMISSION_DENIED included")
    func liftedByAnAuthenticatedCall() throws {
        for method in [ServerConnectionTimerTests.answers, ServerConnectionTimerTests.denies] {
            let connection = try Connection(Self.configuration)
            try connection.request(1, method)
            #expect(try connection.written().map(\.kind) == [.response])
            try connection.send(try Self.request(2, ServerConnectionTimerTests.answers, size: 256 * 1024))
            let answer = try #require(try connection.written().first)
            #expect(answer.isResponse(to: 2) && !answer.hasStatus, "after \(method)")
            #expect(connection.isOpen)
        }
    }

    @Test("health checks, UNAUTHENTICATED answers, unknown methods and PINGs do not lift it")
    func notLiftedByWhatProvesNothing() throws {
        let connection = try Connection(Self.configuration)
        try connection.request(1, ServerConnectionTimerTests.health)
        try connection.request(2, ServerConnectionTimerTests.refuses)
        try connection.request(3, "hearth.test.v1.Test/NoSuchMethod")
        try connection.send(.control(.ping, 4))
        #expect(try connection.written().map(\.kind) == [.response, .response, .response, .pong])
        try Self.announce(Self.limit + 1, on: connection)
        let goAway = try #require(try connection.written().first)
        #expect(goAway.kind == .goaway && goAway.status.code == .resourceExhausted)
        #expect(!connection.isOpen)
    }

    @Test("without the setting (the services), the server's own limit applies from the first frame")
    func servicesHaveNone() throws {
        let connection = try Connection(ServerConfiguration())
        try connection.send(try Self.request(1, ServerConnectionTimerTests.answers, size: 256 * 1024))
        let answer = try #require(try connection.written().first)
        #expect(answer.isResponse(to: 1) && !answer.hasStatus)
    }
}
