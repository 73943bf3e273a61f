import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOTestUtils
import SwiftProtobuf
import Synchronization
import Testing

@testable import HearthRPC

@Suite("Frame decoder")
struct FrameDecoderTests {
    private func framed(_ body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.count))
        buffer.writeBytes(body)
        return buffer
    }

    @Test("frames split at every byte or coalesced decode the same")
    func byteByByteAndCoalesced() throws {
        let bodies: [[UInt8]] = [[], [1], Array(repeating: 7, count: 300), Array(0...255)]
        let pairs = bodies.map { (self.framed($0), [ByteBuffer(bytes: $0)]) }
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: pairs,
            decoderFactory: { LengthPrefixedFrameDecoder(maxFrameSize: 1024) }
        )
    }

    @Test("a frame of exactly the limit is accepted; one byte more is refused before buffering")
    func sizeLimitBoundary() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 1024)))
        try channel.writeInbound(self.framed(Array(repeating: 1, count: 1024)))
        let frame = try #require(try channel.readInbound(as: ByteBuffer.self))
        #expect(frame.readableBytes == 1024)

        // Only the 4-byte header of the oversized frame is sent: refused at once, nothing buffered.
        var header = ByteBuffer()
        header.writeInteger(UInt32(1025))
        #expect(throws: FrameTooLargeError(declaredSize: 1025, limit: 1024)) {
            try channel.writeInbound(header)
        }
    }

    @Test("frames still arriving share a budget: up to its limit held, one byte more refused, released when done")
    func partialFrameBudget() throws {
        let budget = PartialFrameBudget(limit: 1000)
        func connection() -> EmbeddedChannel {
            EmbeddedChannel(
                handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 4096, budget: budget))
            )
        }
        func start(_ length: Int, sending bytes: Int) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt32(length))
            buffer.writeBytes(Array(repeating: 1, count: bytes - 4))
            return buffer
        }
        let first = connection()
        let second = connection()
        try first.writeInbound(start(2000, sending: 600))
        #expect(budget.inUse == 600)
        try second.writeInbound(start(2000, sending: 400))
        #expect(budget.inUse == 1000, "exactly the limit")
        #expect(throws: PartialFramesOverBudgetError(limit: 1000)) {
            try second.writeInbound(ByteBuffer(bytes: [1]))
        }
        #expect(budget.inUse == 1000, "the refused byte is not held")

        // The first frame completes: its share is given back.
        try first.writeInbound(ByteBuffer(bytes: Array(repeating: 1, count: 2004 - 600)))
        #expect(try first.readInbound(as: ByteBuffer.self)?.readableBytes == 2000)
        #expect(budget.inUse == 400)
        // A connection that closes (the refused one, at once) gives back what it held.
        _ = try? second.finish()
        #expect(budget.inUse == 0)
        _ = try first.finish()
    }

    @Test("one address holds at most its share of the budget: up to it, one byte more refused, others unaffected")
    func partialFrameShare() throws {
        let budget = PartialFrameBudget(limit: 1000, perAddressLimit: 400)
        func connection(from address: String) -> EmbeddedChannel {
            EmbeddedChannel(
                handler: ByteToMessageHandler(
                    LengthPrefixedFrameDecoder(maxFrameSize: 4096, budget: budget, peerAddress: address)
                )
            )
        }
        func start(sending bytes: Int) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt32(2000))
            buffer.writeBytes(Array(repeating: 1, count: bytes - 4))
            return buffer
        }
        // Two connections of one host share its 400 bytes.
        let first = connection(from: "192.0.2.1")
        let second = connection(from: "192.0.2.1")
        try first.writeInbound(start(sending: 250))
        try second.writeInbound(start(sending: 150))
        #expect(budget.inUse(by: "192.0.2.1") == 400 && budget.inUse == 400, "exactly the share")
        let refused = #expect(throws: PartialFramesOverBudgetError.self) {
            try second.writeInbound(ByteBuffer(bytes: [1]))
        }
        #expect(refused == PartialFramesOverBudgetError(limit: 400, address: "192.0.2.1"))
        #expect(
            refused?.description
                == "requests still arriving from 192.0.2.1 hold 400 bytes, the most one address may; retry once they are in"
        )
        #expect(budget.inUse(by: "192.0.2.1") == 400, "the refused byte is not held")
        _ = try? second.finish()  // the server closes the refused connection: its bytes come back
        #expect(budget.inUse(by: "192.0.2.1") == 250 && budget.inUse == 250)

        // Another host has a share of its own, until the whole budget is held.
        let others = ["192.0.2.2", "192.0.2.3"].map { connection(from: $0) }
        try others[0].writeInbound(start(sending: 400))
        try others[1].writeInbound(start(sending: 350))
        #expect(budget.inUse == 1000)
        #expect(throws: PartialFramesOverBudgetError(limit: 1000)) {
            try others[1].writeInbound(ByteBuffer(bytes: [1]))
        }

        // Done or gone, every byte is given back, and the host's count with it.
        try first.writeInbound(ByteBuffer(bytes: Array(repeating: 1, count: 2004 - 250)))
        #expect(try first.readInbound(as: ByteBuffer.self)?.readableBytes == 2000)
        _ = try? others[0].finish()
        _ = try? others[1].finish()
        _ = try? first.finish()
        #expect(budget.inUse == 0 && budget.inUse(by: "192.0.2.1") == 0)
    }

    @Test("a frame must keep pace: grace plus its length at the minimum rate, to the nanosecond")
    func framePace() throws {
        // 10 s plus 1 s per 1,000 bytes: a 2,000-byte frame has 12 s.
        let pace = FramePace(grace: .seconds(10), minBytesPerSecond: 1000)
        #expect(pace.allowance(forFrameOf: 2000) == .seconds(12))
        let clock = ManualDeadline()
        func advance(to offset: TimeAmount) { clock.set(offset) }
        func connection() -> EmbeddedChannel {
            EmbeddedChannel(
                handler: ByteToMessageHandler(
                    LengthPrefixedFrameDecoder(
                        maxFrameSize: 4096,
                        pace: pace,
                        readingTime: ReadingTime(clock: clock.now)
                    )
                )
            )
        }
        let channel = connection()
        var start = ByteBuffer()
        start.writeInteger(UInt32(2000))
        start.writeBytes(Array(repeating: 1, count: 96))
        try channel.writeInbound(start)
        advance(to: .seconds(12))
        try channel.writeInbound(ByteBuffer(bytes: [1]))  // exactly on time: taken
        advance(to: .seconds(12) + .nanoseconds(1))
        #expect(throws: FrameTooSlowError.self) {
            try channel.writeInbound(ByteBuffer(bytes: [1]))
        }

        // A frame that completes starts the next one's clock afresh.
        advance(to: .zero)
        let next = connection()
        try next.writeInbound(self.framed(Array(repeating: 2, count: 2000)).getSlice(at: 0, length: 1000)!)
        advance(to: .seconds(12))
        var rest = self.framed(Array(repeating: 2, count: 2000))
        rest.moveReaderIndex(forwardBy: 1000)
        rest.writeInteger(UInt32(2000))  // and the prefix of another
        try next.writeInbound(rest)
        #expect(try next.readInbound(as: ByteBuffer.self)?.readableBytes == 2000)
        advance(to: .seconds(24))
        try next.writeInbound(ByteBuffer(bytes: [1]))  // 12 s into the second frame: taken
        _ = try? next.finish()

        // Before its length is known a frame has the grace alone.
        advance(to: .zero)
        let prefixOnly = connection()
        try prefixOnly.writeInbound(ByteBuffer(bytes: [0, 0]))
        advance(to: .seconds(10) + .nanoseconds(1))
        let error = #expect(throws: FrameTooSlowError.self) {
            try prefixOnly.writeInbound(ByteBuffer(bytes: [0]))
        }
        #expect(error?.declaredSize == nil && error?.received == 3 && error?.allowed == .seconds(10))
        #expect(
            error?.description
                == "frame's length prefix arriving too slowly, 3 bytes after 10 s: "
                + "a frame must arrive within 10 s plus 1 s per 1000 bytes"
        )

        // On a server, only while its partial-frame budget is more than half used.
        advance(to: .zero)
        let budget = PartialFrameBudget(limit: 1000)
        func budgeted() -> EmbeddedChannel {
            EmbeddedChannel(
                handler: ByteToMessageHandler(
                    LengthPrefixedFrameDecoder(
                        maxFrameSize: 4096,
                        budget: budget,
                        pace: pace,
                        readingTime: ReadingTime(clock: clock.now)
                    )
                )
            )
        }
        let slow = budgeted()
        try slow.writeInbound(ByteBuffer(bytes: [0, 0, 7, 208] + Array(repeating: 1, count: 96)))  // 2,000 bytes
        advance(to: .seconds(20))
        try slow.writeInbound(ByteBuffer(bytes: [1]))  // late, but 101 of 1,000 held: taken
        let other = budgeted()
        try other.writeInbound(ByteBuffer(bytes: [0, 0, 7, 208] + Array(repeating: 1, count: 396)))
        #expect(budget.inUse == 501 && budget.isUnderPressure)
        #expect(throws: FrameTooSlowError.self) { try slow.writeInbound(ByteBuffer(bytes: [1])) }
        _ = try? slow.finish()
        #expect(budget.inUse == 400, "the refused frame's share is given back as it closes")
        // With room to spare, twice the allowance and no more (12 s here: 24 s, then refused).
        let room = PartialFrameBudget(limit: 1000)
        let slowest = EmbeddedChannel(
            handler: ByteToMessageHandler(
                LengthPrefixedFrameDecoder(
                    maxFrameSize: 4096,
                    budget: room,
                    pace: pace,
                    readingTime: ReadingTime(clock: clock.now)
                )
            )
        )
        try slowest.writeInbound(ByteBuffer(bytes: [0, 0, 7, 208, 1]))
        advance(to: .seconds(44))
        try slowest.writeInbound(ByteBuffer(bytes: [1]))
        advance(to: .seconds(44) + .nanoseconds(1))
        let twice = #expect(throws: FrameTooSlowError.self) { try slowest.writeInbound(ByteBuffer(bytes: [1])) }
        #expect(twice?.allowed == .seconds(24))
        _ = try? slowest.finish()
        _ = try? other.finish()
    }

    @Test("a frame whose peer goes silent is refused by a timer at its allowance, to the nanosecond")
    func silentFrame() throws {
        // 10 s plus 1 s per 1,000 bytes: a 2,000-byte frame has 12 s, 24 s while there is room.
        let pace = FramePace(grace: .seconds(10), minBytesPerSecond: 1000)
        func connection(budget: PartialFrameBudget?) -> EmbeddedChannel {
            let loop = EmbeddedEventLoop()
            return EmbeddedChannel(
                handler: ByteToMessageHandler(
                    LengthPrefixedFrameDecoder(
                        maxFrameSize: 4096,
                        budget: budget,
                        pace: pace,
                        readingTime: ReadingTime(clock: { loop.now })
                    )
                ),
                loop: loop
            )
        }
        let start = ByteBuffer(bytes: [0, 0, 7, 208] + Array(repeating: 1, count: 96))

        // Under pressure (a decoder without a budget always is): refused at 12 s.
        let silent = connection(budget: nil)
        try silent.writeInbound(start)
        silent.embeddedEventLoop.advanceTime(by: .seconds(12))
        try silent.throwIfErrorCaught()
        silent.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        let refusal = #expect(throws: FrameTooSlowError.self) { try silent.throwIfErrorCaught() }
        #expect(refusal?.declaredSize == 2000 && refusal?.received == 100 && refusal?.allowed == .seconds(12))
        _ = try? silent.finish()

        // With room in the budget: twice the allowance, unless the room runs out meanwhile.
        let budget = PartialFrameBudget(limit: 1000)
        let roomy = connection(budget: budget)
        try roomy.writeInbound(start)
        roomy.embeddedEventLoop.advanceTime(by: .seconds(24))
        try roomy.throwIfErrorCaught()
        roomy.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        let twice = #expect(throws: FrameTooSlowError.self) { try roomy.throwIfErrorCaught() }
        #expect(twice?.allowed == .seconds(24))
        _ = try? roomy.finish()
        #expect(budget.inUse == 0)

        let behind = connection(budget: budget)
        try behind.writeInbound(start)
        behind.embeddedEventLoop.advanceTime(by: .seconds(15))
        try behind.throwIfErrorCaught()
        let other = connection(budget: budget)
        try other.writeInbound(ByteBuffer(bytes: [0, 0, 7, 208] + Array(repeating: 1, count: 397)))
        #expect(budget.inUse == 501 && budget.isUnderPressure)
        // Looked at again within a second of the pressure, not at 24 s.
        behind.embeddedEventLoop.advanceTime(by: FramePaceWatch.pressureRecheck)
        let pressed = #expect(throws: FrameTooSlowError.self) { try behind.throwIfErrorCaught() }
        #expect(pressed?.allowed == .seconds(12))
        _ = try? behind.finish()

        // A frame that completed leaves the timer nothing to refuse; the next one is timed afresh.
        let steady = connection(budget: nil)
        try steady.writeInbound(start)
        steady.embeddedEventLoop.advanceTime(by: .seconds(11))
        var rest = ByteBuffer(bytes: Array(repeating: 1, count: 1904))
        rest.writeBytes([0, 0, 7, 208, 1])  // and the first bytes of another
        try steady.writeInbound(rest)
        #expect(try steady.readInbound(as: ByteBuffer.self)?.readableBytes == 2000)
        steady.embeddedEventLoop.advanceTime(by: .seconds(12))
        try steady.throwIfErrorCaught()  // the second frame is 12 s old: on time
        steady.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        #expect(throws: FrameTooSlowError.self) { try steady.throwIfErrorCaught() }
        _ = try? steady.finish()
        _ = try? other.finish()

        // A large frame's timer (14 s) does not keep a small frame after it from being refused
        // at its own allowance (the grace, 10 s, for a prefix alone).
        let mixed = connection(budget: nil)
        try mixed.writeInbound(ByteBuffer(bytes: [0, 0, 15, 160] + Array(repeating: 1, count: 100)))  // 4,000 bytes
        mixed.embeddedEventLoop.advanceTime(by: .seconds(1))
        try mixed.writeInbound(ByteBuffer(bytes: Array(repeating: 1, count: 3900) + [0, 0]))
        #expect(try mixed.readInbound(as: ByteBuffer.self)?.readableBytes == 4000)
        mixed.embeddedEventLoop.advanceTime(by: .seconds(10))
        try mixed.throwIfErrorCaught()
        mixed.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        let small = #expect(throws: FrameTooSlowError.self) { try mixed.throwIfErrorCaught() }
        #expect(small?.declaredSize == nil && small?.allowed == .seconds(10))
        _ = try? mixed.finish()
    }

    @Test("a frame that stops arriving is refused after maxStall without a byte, whatever its allowance")
    func stalledFrame() throws {
        // An allowance of minutes (a 100 KB frame at 1,000 bytes a second), a stall limit of 5 s.
        let pace = FramePace(grace: .seconds(30), minBytesPerSecond: 1000, maxStall: .seconds(5))
        func connection(budget: PartialFrameBudget) -> EmbeddedChannel {
            let loop = EmbeddedEventLoop()
            return EmbeddedChannel(
                handler: ByteToMessageHandler(
                    LengthPrefixedFrameDecoder(
                        maxFrameSize: 200_000,
                        budget: budget,
                        pace: pace,
                        readingTime: ReadingTime(clock: { loop.now })
                    )
                ),
                loop: loop
            )
        }
        let budget = PartialFrameBudget(limit: 1_000_000)
        let start = ByteBuffer(bytes: [0, 1, 134, 160] + Array(repeating: 1, count: 96))  // 100,000 bytes

        // Silent after its first bytes: refused by the timer 5 s after them, to the nanosecond,
        // though the budget has room and its allowance (130 s) is far off.
        let silent = connection(budget: budget)
        try silent.writeInbound(start)
        silent.embeddedEventLoop.advanceTime(by: .seconds(5))
        try silent.throwIfErrorCaught()
        silent.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        let refusal = #expect(throws: FrameTooSlowError.self) { try silent.throwIfErrorCaught() }
        #expect(refusal?.stalledFor == .seconds(5) + .nanoseconds(1) && refusal?.received == 100)
        #expect(
            refusal?.description
                == "frame of 100000 bytes stalled, 100 bytes in: no byte for 5 s "
                + "(a frame begun must keep arriving, at most 5 s without a byte)"
        )
        _ = try? silent.finish()
        #expect(budget.inUse == 0)

        // A byte now and then keeps it going: each one starts the stall limit afresh.
        let trickle = connection(budget: budget)
        try trickle.writeInbound(start)
        for _ in 0..<10 {
            trickle.embeddedEventLoop.advanceTime(by: .seconds(5))
            try trickle.writeInbound(ByteBuffer(bytes: [1]))
        }
        try trickle.throwIfErrorCaught()
        // Refused at its next bytes once it stalled (here before the timer looked).
        trickle.embeddedEventLoop.advanceTime(by: .seconds(5) + .nanoseconds(1))
        #expect(throws: FrameTooSlowError.self) {
            try trickle.throwIfErrorCaught()
            try trickle.writeInbound(ByteBuffer(bytes: [1]))
        }
        _ = try? trickle.finish()

        // The default pace stalls after 10 s.
        #expect(FramePace.default.maxStall == .seconds(10))
    }

    @Test("a frame's pace leaves out the time the server held reads back (its answers unread by the peer)")
    func paceLeavesOutBackpressure() throws {
        let clock = ManualDeadline()
        let configuration = ServerConfiguration(framePace: FramePace(grace: .seconds(10), minBytesPerSecond: 1000))
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addServerConnectionHandlers(
            router: MethodRouter(handlers: [:], forwarder: nil, publicMethods: [], callers: nil, logger: testLogger),
            configuration: configuration,
            callsInFlight: CallCounter(),
            // Small enough that the frame below puts it under pressure.
            partialFrames: PartialFrameBudget(limit: 150),
            readingTime: ReadingTime(clock: clock.now),
            logger: Logger(label: "test")
        )
        channel.pipeline.fireChannelActive()
        // A 2,000-byte frame has 12 s. Its first bytes at 0 s.
        var start = ByteBuffer()
        start.writeInteger(UInt32(2000))
        start.writeBytes(Array(repeating: 1, count: 96))
        try channel.writeInbound(start)
        // From 1 s to 100 s the peer does not read our answers: we stop reading its frames.
        clock.set(.seconds(1))
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        clock.set(.seconds(100))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        // 13 s on the wall clock since the frame began, 12 s of it reading: on time.
        clock.set(.seconds(111))
        try channel.writeInbound(ByteBuffer(bytes: [1]))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "no GOAWAY")
        // A nanosecond more of reading time: late.
        clock.set(.seconds(111) + .nanoseconds(1))
        try channel.writeInbound(ByteBuffer(bytes: [1]))
        var written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        written.moveReaderIndex(forwardBy: 4)
        let goAway = try WireFrame(serializedBytes: Array(written.readableBytesView))
        #expect(goAway.kind == .goaway && goAway.status.code == .deadlineExceeded)
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a declared length of 4 GiB is refused from the header alone")
    func hugeDeclaredLength() throws {
        let channel = EmbeddedChannel(
            handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 4 << 20))
        )
        var header = ByteBuffer()
        header.writeInteger(UInt32.max)
        #expect(throws: FrameTooLargeError.self) { try channel.writeInbound(header) }
    }

    @Test("frames are serialized in place behind their length prefix, byte for byte as swift-protobuf makes them")
    func framing() throws {
        for size in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            var frame = WireFrame()
            frame.callID = UInt64(size) * 7919
            frame.kind = .response
            frame.method = "hearth.echo.v1.Echo/Echo"
            frame.metadata = Metadata.entries(of: ["x-request-id": "r\(size)", "b": "2", "a": "1"])
            frame.payload = Data((0..<size).map { UInt8(truncatingIfNeeded: $0) })
            frame.status.code = .notFound
            var options = BinaryEncodingOptions()
            options.useDeterministicOrdering = true
            let expected: [UInt8] = try frame.serializedBytes(options: options)

            var buffer = try ByteBufferAllocator().buffer(framing: frame)
            #expect(buffer.readInteger(as: UInt32.self) == UInt32(expected.count))
            #expect(Array(buffer.readableBytesView) == expected)
        }
    }

    @Test("metadata is DESIGN.md's map<string, string> on the wire: entries {1: key, 2: value}, the last of a key wins")
    func metadataIsAMapOnTheWire() throws {
        func entry(_ key: String, _ value: String) -> [UInt8] {
            let body =
                [0x0A, UInt8(key.utf8.count)] + Array(key.utf8) + [0x12, UInt8(value.utf8.count)] + Array(value.utf8)
            return [0x22, UInt8(body.count)] + body  // field 4, length-delimited
        }
        // What any protobuf library writes for map<string, string> {"a": "1", "x-request-id": "r"}, with
        // "a" sent twice as a peer may.
        let bytes = entry("a", "0") + entry("x-request-id", "r") + entry("a", "1")
        let frame = try WireFrame(serializedBytes: bytes)
        let metadata = Metadata(entries: frame.metadata)
        #expect(metadata["a"] == "1" && metadata["x-request-id"] == "r" && metadata["b"] == nil)
        #expect(metadata.keys == ["a", "x-request-id"])

        var written = WireFrame()
        written.metadata = Metadata.entries(of: ["a": "1"])
        #expect(try written.serializedBytes() == entry("a", "1"))
    }

    @Test("a truncated frame produces nothing and is dropped at close")
    func truncated() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 1024)))
        var partial = self.framed(Array(repeating: 9, count: 100))
        partial.moveWriterIndex(to: 50)
        try channel.writeInbound(partial)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(try channel.finish().isClean)
    }
}

/// A clock for ``ReadingTime`` that moves only when a test sets it.
final class ManualDeadline: Sendable {
    private let base = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private let offset = Mutex(TimeAmount.zero)

    func set(_ offset: TimeAmount) { self.offset.withLock { $0 = offset } }
    func now() -> NIODeadline { self.base + self.offset.withLock { $0 } }
}
