import Foundation
import HearthRPC
import NIOCore
import Testing

/// A connection closed for a protocol error, on real sockets: its GOAWAY reaches a peer that
/// is still sending, and a peer that never closes is let go within the linger's bound.
@Suite("Lingering close", .timeLimit(.minutes(1)))
struct LingeringCloseTests {
    static let limit = 64 * 1024

    @Test("a peer still sending a refused frame reads the GOAWAY that says why, not a reset")
    func goAwaySurvivesUnreadBytes() async throws {
        try await withTestServer(configuration: ServerConfiguration(maxFrameSize: Self.limit)) { _, port in
            for _ in 0..<5 {
                let raw = try await RawConnection.connect(port: port)
                // The length prefix of a frame past the limit, then 2 MiB of it in the same write.
                try await raw.sendBytes(RawConnection.prefix(4 * 1024 * 1024) + [UInt8](repeating: 7, count: 2 << 20))
                let goAway = try await raw.waitFor { $0.kind == .goaway }
                #expect(goAway?.status.code == .resourceExhausted, "\(raw.seen)")
                #expect(goAway?.status.message.contains("exceeds the limit of \(Self.limit) bytes") == true)
                #expect(try await raw.waitUntilClosed(), "\(raw.seen)")
            }
        }
    }

    @Test("a peer that never closes is closed by the server once the linger's bound has passed")
    func peerThatNeverCloses() async throws {
        try await withTestServer(configuration: ServerConfiguration(maxFrameSize: Self.limit)) { _, port in
            let raw = try await RawConnection.connect(port: port, keepsOpen: true)
            try await raw.sendBytes(RawConnection.prefix(Self.limit + 1))
            let goAway = try await raw.waitFor { $0.kind == .goaway }
            #expect(goAway?.status.code == .resourceExhausted, "\(raw.seen)")
            // Half-closed by the server (FIN) and kept open here. What this end still sends is
            // read and dropped while the server lingers; once it has closed, a byte sent is
            // answered with a reset, which closes this end too.
            let end = ContinuousClock.now + .seconds(30)
            while !raw.isClosed, ContinuousClock.now < end {
                try? await raw.sendBytes([0])
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(raw.isClosed, "\(raw.seen)")
            await raw.close()
        }
    }
}
