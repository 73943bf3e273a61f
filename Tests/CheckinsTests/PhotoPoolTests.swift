import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Synchronization
import Testing

@testable import CheckinsService

/// Photos are normalized a few at a time, each decoded once, never for a call that is gone.
@Suite("Photo pool", .timeLimit(.minutes(1)))
struct PhotoPoolTests {
    /// Work that waits until the test opens it, saying when it began.
    final class Gate: Sendable {
        private let opened = Atomic<Bool>(false)
        private let began = Atomic<Int>(0)

        var started: Int { self.began.load(ordering: .relaxed) }
        func open() { self.opened.store(true, ordering: .relaxed) }

        /// Blocks its thread until opened, or until told to stop (then `.stopped`).
        func work(_ shouldStop: () -> Bool) throws(PhotoNormalizer.NormalizeFailure) -> Int {
            self.began.add(1, ordering: .relaxed)
            while !self.opened.load(ordering: .relaxed) {
                if shouldStop() { throw .stopped }
                usleep(1000)
            }
            return 1
        }

        /// Its work, run on `pool`.
        func submit(to pool: PhotoPool) -> Task<Int, any Error> {
            Task { try await pool.run { stop throws(PhotoNormalizer.NormalizeFailure) in try self.work(stop) } }
        }
    }

    /// A pool of one worker and one place to wait, its worker held by a gate's work.
    private static func poolWithOneRunning() async throws -> (PhotoPool, Gate, Task<Int, any Error>) {
        let pool = PhotoPool(workers: 1, queueLimit: 1)
        let gate = Gate()
        let running = gate.submit(to: pool)
        try await eventually("the first is running") { gate.started == 1 }
        return (pool, gate, running)
    }

    @Test("workers run, queueLimit wait, one more is refused RESOURCE_EXHAUSTED with when to retry")
    func bounded() async throws {
        let (pool, gate, running) = try await Self.poolWithOneRunning()
        let waiting = gate.submit(to: pool)
        try await eventually("the second waits") { pool.admitted == 2 }
        let refused = await #expect(throws: RPCError.self) {
            _ = try await pool.run { _ throws(PhotoNormalizer.NormalizeFailure) in 0 }
        }
        #expect(refused?.code == .resourceExhausted)
        #expect((refused?.retryAfter ?? .zero) >= .milliseconds(100))
        #expect(refused?.message.contains("1 at a time, 1 waiting") == true)
        gate.open()
        let first = try await running.value
        let second = try await waiting.value
        #expect(first == 1 && second == 1)
        #expect(pool.admitted == 0)
        #expect(try await pool.run { _ throws(PhotoNormalizer.NormalizeFailure) in 2 } == 2, "room again")
        try await pool.shutdown()
    }

    @Test("a call cancelled while it waits is never run; one cancelled while running stops at its next step")
    func cancelled() async throws {
        let (pool, gate, running) = try await Self.poolWithOneRunning()
        let other = Gate()
        let waiting = other.submit(to: pool)
        try await eventually("the second waits") { pool.admitted == 2 }
        waiting.cancel()
        running.cancel()
        for task in [running, waiting] {
            let error = await #expect(throws: RPCError.self) { _ = try await task.value }
            #expect(error?.code == .cancelled)
        }
        #expect(gate.started == 1, "the first stopped at its next step, its gate never opened")
        #expect(other.started == 0, "the second's work never began")
        try await pool.shutdown()
    }

    @Test("an upload is decoded at most twice for each image kept, however many encodings it takes to fit")
    func decodedOnce() throws {
        // Noise does not compress: 1,400 px a side is 5.9 MB as PNG, and fits 1 MB only after
        // its edge shrinks four times (1,152, 864, 648, 486). A xorshift fills it: the system
        // generator takes seconds in a debug build, and holds a thread other tests wait for.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let noise = Images.png(width: 1400, height: 1400) { _, _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return (UInt8(truncatingIfNeeded: state), UInt8(truncatingIfNeeded: state >> 8), 0)
        }
        #expect(noise.count > 5_000_000 && noise.count <= PhotoNormalizer.maxUploadBytes, "\(noise.count) bytes")
        let decodes = PhotoNormalizer.DecodeCount()
        let photo = try PhotoNormalizer.$decodeCount.withValue(decodes) { try PhotoNormalizer.normalize(noise) }
        // The photo: streamed into its first encoding (too large), then into memory once; its
        // thumbnail: streamed, and it fits.
        #expect(decodes.value == 3)
        #expect(photo.full.data.count <= PhotoNormalizer.maxStoredBytes && photo.full.width < 1400)
        #expect(photo.thumbnail.width == 320)
    }

    @Test("a full day is refused before its photo is decoded")
    func fullDayNotDecoded() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        for _ in 0..<10 { _ = try await fixture.checkIn(session) }
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = session.id
        request.clientRequestID = "eleventh"
        request.capturedAt = .init(date: fixture.clock.now())
        request.photo = Images.flatPNG(width: 64, height: 64)
        let decodes = PhotoNormalizer.DecodeCount()
        await PhotoNormalizer.$decodeCount.withValue(decodes) {
            await expectCode(.resourceExhausted) {
                _ = try await fixture.service.createCheckIn(request, fixture.context("sam"))
            }
            // The control: a day with room decodes it, for the photo and for its thumbnail (the
            // count reaches the pool's threads).
            request.sessionID = try! await fixture.nestAndSession().1.id
            _ = try? await fixture.service.createCheckIn(request, fixture.context("sam"))
        }
        #expect(decodes.value == 2)
    }
}
