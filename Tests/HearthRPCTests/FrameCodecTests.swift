import Foundation
import HearthCore
import NIOCore
import SwiftProtobuf
import Testing

@testable import HearthRPC

/// The hand-written frame codec against swift-protobuf, the reference: the same bytes out,
/// the same frames in, the same refusals.
@Suite("Frame codec")
struct FrameCodecTests {
    static let texts = ["", "a", "x-request-id", "authorization", "Bearer abc.def", "héllo", "時間", "🏠", "\u{0}"]

    static func randomText(_ random: inout SplitMix64) -> String {
        if Bool.random(using: &random) { return Self.texts.randomElement(using: &random)! }
        let count = Int.random(in: 0...200, using: &random)
        return String((0..<count).map { _ in Character(UnicodeScalar(UInt8.random(in: 32...126, using: &random))) })
    }

    static func randomFrame(_ random: inout SplitMix64) -> WireFrame {
        var frame = WireFrame()
        // Values at every varint length, including the 10-byte ones.
        frame.callID =
            Bool.random(using: &random)
            ? 0 : UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random)
        frame.kind = WireFrame.Kind(rawValue: [0, 1, 2, 3, 4, 5, 6, 7, 300, -1].randomElement(using: &random)!)!
        frame.method = Self.randomText(&random)
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            var entry = WireFrame.MetadataEntry()
            entry.key = Self.randomText(&random)
            entry.value = Self.randomText(&random)
            frame.metadata.append(entry)
        }
        frame.timeoutMs = Bool.random(using: &random) ? 0 : UInt32.random(in: 0...UInt32.max, using: &random)
        let payloadSize = [0, 1, 127, 128, 256, 16_384].randomElement(using: &random)!
        frame.payload = Data((0..<payloadSize).map { _ in UInt8.random(in: 0...255, using: &random) })
        if Bool.random(using: &random) {
            frame.status.code = StatusCode(rawValue: Int.random(in: 0...16, using: &random))!
            frame.status.message = Self.randomText(&random)
            if Bool.random(using: &random) {
                var violation = Hearth_Rpc_V1_FieldViolation()
                violation.field = "name"
                violation.description_p = Self.randomText(&random)
                frame.status.violations = [violation]
            }
            frame.status.retryAfterMs = UInt32.random(in: 0...100_000, using: &random)
        }
        return frame
    }

    /// The hand decoder's answer and swift-protobuf's, as comparable values. The hand decoder
    /// must answer the same whatever frame it may reuse strings of.
    static func bothDecodings(_ bytes: [UInt8], reusingStringsOf previous: WireFrame? = nil) -> (
        hand: WireFrame?, reference: WireFrame?
    ) {
        var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        let hand = try? WireFrame(decoding: buffer)
        #expect((try? WireFrame(decoding: buffer, reusingStringsOf: previous)) == hand)
        return (hand, try? WireFrame(serializedBytes: bytes))
    }

    /// A REQUEST for `method` with `entries`, in order.
    static func request(_ method: String, _ entries: [(String, String)] = []) -> WireFrame {
        var frame = WireFrame()
        frame.callID = 1
        frame.kind = .request
        frame.method = method
        frame.metadata = entries.map { key, value in
            var entry = WireFrame.MetadataEntry()
            entry.key = key
            entry.value = value
            return entry
        }
        return frame
    }

    /// `frame` as the writer frames it, without its length prefix: what the decoder reads.
    static func body(of frame: WireFrame) throws -> ByteBuffer {
        let written = try ByteBufferAllocator().buffer(framing: frame)
        return written.getSlice(at: 4, length: written.readableBytes - 4)!
    }

    static func referenceBytes(_ frame: WireFrame) throws -> [UInt8] {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return try frame.serializedBytes(options: options)
    }

    @Test("random frames: written to the byte as swift-protobuf writes them, read back as swift-protobuf reads them")
    func randomFrames() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        var previous: WireFrame?
        for round in 0..<1_000 {
            // Gives the test pool's thread back often: other tests' clients wait on it, and a
            // debug build takes milliseconds per frame. (The fuzz target checks millions.)
            if round % 20 == 0 { await Task.yield() }
            let frame = Self.randomFrame(&random)
            var written = try ByteBufferAllocator().buffer(framing: frame)
            let expected = try Self.referenceBytes(frame)
            #expect(written.readInteger(as: UInt32.self) == UInt32(expected.count), "seed \(seed)")
            #expect(Array(written.readableBytesView) == expected, "seed \(seed)")
            #expect(try WireFrame(decoding: written) == frame, "seed \(seed)")
            // Half the texts come from a short list: strings of the frame before are often reused.
            #expect(try WireFrame(decoding: written, reusingStringsOf: previous) == frame, "seed \(seed)")
            previous = frame
        }
    }

    @Test(
        "random damage: flipped, cut and inserted bytes decode as swift-protobuf decodes them, or are refused by both"
    )
    func damagedFrames() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        var refused = 0
        for round in 0..<2_000 {
            if round % 20 == 0 { await Task.yield() }
            let undamaged = Self.randomFrame(&random)
            var bytes = try Self.referenceBytes(undamaged)
            guard !bytes.isEmpty else { continue }
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &random)
                case 1: bytes.removeSubrange(at...)
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: at)
                }
                if bytes.isEmpty { break }
            }
            // The frame before the damage: its strings match the damaged ones byte for byte,
            // in length only, or not at all.
            let (hand, reference) = Self.bothDecodings(bytes, reusingStringsOf: undamaged)
            #expect(hand == reference, "seed \(seed), bytes \(bytes)")
            if reference == nil { refused += 1 }
        }
        // The damage must reach both outcomes, or this test proves little.
        #expect(refused > 100 && refused < 1_900, "refused \(refused)")
    }

    @Test(
        "shapes the hand decoder passes to swift-protobuf decode the same",
        arguments: [
            // A 10-byte call_id, the longest varint; an 11-byte one, malformed.
            [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            // kind -1, as protobuf writes a negative enum.
            [0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            // An unknown field (15, varint), and one of another wire type (fixed32).
            [0x08, 0x01, 0x78, 0x05],
            [0x08, 0x01, 0x7D, 0x01, 0x02, 0x03, 0x04],
            // method as a varint: a known field in the wrong wire type.
            [0x18, 0x05],
            // Invalid UTF-8 in the method, and in a metadata value.
            [0x1A, 0x02, 0xC3, 0x28],
            [0x22, 0x05, 0x0A, 0x01, 0x61, 0x12, 0x00, 0x22, 0x04, 0x12, 0x02, 0xFF, 0xFE],
            // A metadata entry with an unknown field.
            [0x22, 0x05, 0x0A, 0x01, 0x61, 0x18, 0x07],
            // Two statuses, which merge: code from the first, message from the second.
            [0x3A, 0x02, 0x08, 0x05, 0x3A, 0x03, 0x12, 0x01, 0x78],
            // A length running past the end, and a tag of field 0.
            [0x32, 0x09, 0x01],
            [0x00, 0x01],
        ] as [[UInt8]]
    )
    func edgeShapes(bytes: [UInt8]) {
        let (hand, reference) = Self.bothDecodings(bytes)
        #expect(hand == reference)
    }

    @Test("past 64 metadata entries a frame keeps one more and no others; one only swift-protobuf reads is refused")
    func metadataEntriesBounded() throws {
        func body(entries: Int, unknownField: Bool) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.writeBytes([0x08, 0x01, 0x10, 0x01])  // call_id 1, REQUEST
            for _ in 0..<entries { buffer.writeBytes([0x22, 0x00]) }  // field 4, empty
            if unknownField { buffer.writeBytes([0xF8, 0x01, 0x07]) }  // field 31 = 7
            return buffer
        }
        let many = try WireFrame(decoding: body(entries: 100_000, unknownField: false))
        #expect(many.callID == 1 && many.metadata.count == Metadata.maxEntries + 1)
        #expect(throws: TooManyMetadataEntries.self) {
            try WireFrame(decoding: body(entries: 100_000, unknownField: true))
        }
        // An entry whose empty length is written in 10 bytes sends the frame to swift-protobuf;
        // the entries after it are counted all the same.
        var overlong = ByteBuffer(bytes: [0x08, 0x01, 0x22] + Array(repeating: 0x80, count: 9) + [0x00])
        for _ in 0..<100_000 { overlong.writeBytes([0x22, 0x00]) }
        #expect(throws: TooManyMetadataEntries.self) { try WireFrame(decoding: overlong) }
        // Within the limit, a frame with an unknown field still goes to swift-protobuf.
        let fallback = try WireFrame(decoding: body(entries: Metadata.maxEntries, unknownField: true))
        #expect(fallback.metadata.count == Metadata.maxEntries && !fallback.unknownFields.data.isEmpty)
    }

    @Test("a non-ASCII method and metadata round-trip")
    func nonASCII() throws {
        let frame = Self.request("hearth.tâches.v1/Créer", [("x-名前", "時間 🏠")])
        #expect(try WireFrame(decoding: Self.body(of: frame)) == frame)
    }

    @Test("a frame reuses the strings of the frame before only where the bytes are the same")
    func reusedStrings() throws {
        let request = Self.request
        let before = request("hearth.a.v1.A/Get", [("x-hearth-internal", "ann"), ("x-request-id", "r1")])
        let afters = [
            before,
            // The same length, one byte apart.
            request("hearth.a.v1.A/Put", [("x-hearth-internal", "bob"), ("x-request-id", "r2")]),
            // Entries in another order, one more, one fewer, none; an empty method.
            request("hearth.a.v1.A/Get", [("x-request-id", "r1"), ("x-hearth-internal", "ann"), ("k", "")]),
            request("hearth.a.v1.A/Get", [("x-hearth-internal", "ann")]),
            request("", []),
            request("時間", [("x-hearth-internal", "時間")]),
        ]
        for after in afters {
            #expect(try WireFrame(decoding: Self.body(of: after), reusingStringsOf: before) == after)
        }
        // The same bytes give the very strings of the frame before (their storage, for strings
        // too long to be stored inline), not copies.
        let again = try WireFrame(decoding: Self.body(of: before), reusingStringsOf: before)
        let storage = { (text: String) in text.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil }
        #expect(storage(again.method) == storage(before.method))
        #expect(storage(again.metadata[0].key) == storage(before.metadata[0].key))
    }

    @Test("a request is kept for reuse only with few entries and few bytes besides its payload")
    func worthReusing() throws {
        var frame = Self.request("hearth.a.v1.A/Get", (0..<WireFrame.maxReusedEntries).map { ("k\($0)", "v") })
        frame.payload = Data(repeating: 7, count: 10_000)
        let bodyBytes = { (frame: WireFrame) in try Self.body(of: frame).readableBytes }
        #expect(frame.isWorthReusing(bodyBytes: try bodyBytes(frame)), "a large payload does not count")
        var more = frame
        more.metadata.append(frame.metadata[0])
        #expect(!more.isWorthReusing(bodyBytes: try bodyBytes(more)), "one entry too many")
        // Grown to exactly the bytes allowed besides the payload, then one more.
        var fitting = frame
        let room = WireFrame.maxReusedBytes - (try bodyBytes(frame) - frame.payload.count)
        fitting.metadata[0].value = String(repeating: "x", count: room)
        // The length prefixes grow by a byte past 127: cut back to the bound.
        fitting.metadata[0].value.removeLast(try bodyBytes(fitting) - fitting.payload.count - WireFrame.maxReusedBytes)
        #expect(try bodyBytes(fitting) - fitting.payload.count == WireFrame.maxReusedBytes)
        #expect(fitting.isWorthReusing(bodyBytes: try bodyBytes(fitting)))
        var over = fitting
        over.metadata[1].value += "x"
        #expect(!over.isWorthReusing(bodyBytes: try bodyBytes(over)), "one byte over")
    }
}
