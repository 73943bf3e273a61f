import Foundation
import NIOCore
import SwiftProtobuf

// The frame envelope is encoded and decoded by hand: every call crosses it twice on each
// hop, and swift-protobuf's generic reading and writing of it took about 30% of the echo
// server's CPU (BENCHMARKS.md, "Hot path"). The results are swift-protobuf's to the byte:
// tests compare both on random frames, and the fuzz target checks every input it tries.

extension WireFrame {
    /// Decodes a frame body (the bytes after the length prefix).
    ///
    /// Frames made only of the envelope's own fields, in their own wire types, are read here;
    /// anything else (unknown fields, a field twice where it cannot merge, invalid UTF-8, a
    /// malformed varint) is handed whole to swift-protobuf, which decodes it or says why not.
    ///
    /// Past ``Metadata/maxEntries`` metadata entries (a call is refused for them), it keeps one
    /// more than the limit and no others: a 4 MiB frame of empty entries would otherwise be two
    /// million of them before anything looked. A frame with too many that must go to
    /// swift-protobuf is refused whole.
    ///
    /// `previous` is a frame decoded before on the same connection: its method and metadata
    /// strings are taken again where this frame carries the same bytes in the same place (a
    /// connection calls the same method with the same keys and credential, call after call),
    /// instead of allocating and checking new ones.
    init(decoding body: ByteBuffer, reusingStringsOf previous: WireFrame? = nil) throws {
        if let frame = body.withUnsafeReadableBytes({ bytes in
            var reader = FrameReader(bytes: bytes, previous: previous)
            return reader.readFrame()
        }) {
            self = frame
        } else {
            let entries = body.withUnsafeReadableBytes { bytes in
                var reader = FrameReader(bytes: bytes)
                return reader.countMetadataEntries()
            }
            guard entries <= Metadata.maxEntries else { throw TooManyMetadataEntries(count: entries) }
            self = try WireFrame(serializedBytes: body.readableBytesSpan)
        }
    }
}

extension WireFrame {
    /// Whether a connection may keep this request, decoded from a body of `bodyBytes`, for its
    /// next frame's decoder to reuse its strings: few entries, and few bytes besides the payload
    /// (which the connection drops). A connection keeps it between calls, so a peer must not be
    /// able to pin a large frame's metadata (or unknown fields) on each of its connections.
    func isWorthReusing(bodyBytes: Int) -> Bool {
        self.metadata.count <= Self.maxReusedEntries && bodyBytes - self.payload.count <= Self.maxReusedBytes
    }

    /// Up to this many metadata entries, and bytes besides the payload (a bearer token and a
    /// few keys fit), a request is kept for reuse.
    static let maxReusedEntries = 16
    static let maxReusedBytes = 2048
}

extension WireFrame {
    /// The bytes of this frame's body on the wire (without its length prefix), given its status
    /// already serialized (nil without one).
    func encodedSize(status: [UInt8]?) -> Int {
        var size = 0
        if self.callID != 0 { size += 1 + varintSize(self.callID) }
        if self.kind.rawValue != 0 { size += 1 + varintSize(enumBits(self.kind.rawValue)) }
        size += fieldSize(bytes: self.method.utf8.count)
        for entry in self.metadata { size += entrySize(entry).total }
        if self.timeoutMs != 0 { size += 1 + varintSize(UInt64(self.timeoutMs)) }
        size += fieldSize(bytes: self.payload.count)
        if let status { size += 1 + varintSize(UInt64(status.count)) + status.count }
        return size + self.unknownFields.data.count
    }
}

extension ByteBufferAllocator {
    /// Serializes `frame` behind its 4-byte length prefix, straight into one buffer sized
    /// exactly: one allocation and one write per frame.
    func buffer(framing frame: WireFrame) throws -> ByteBuffer {
        let status: [UInt8]? = frame.hasStatus ? try frame.status.serializedBytes() : nil
        let unknown = frame.unknownFields.data
        let size = frame.encodedSize(status: status)

        var buffer = self.buffer(capacity: 4 + size)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 4 + size) { bytes in
            var writer = FrameWriter(bytes: bytes)
            writer.writeLength(UInt32(size))
            if frame.callID != 0 {
                writer.writeTag(1, .varint)
                writer.writeVarint(frame.callID)
            }
            if frame.kind.rawValue != 0 {
                writer.writeTag(2, .varint)
                writer.writeVarint(enumBits(frame.kind.rawValue))
            }
            writer.writeStringField(3, frame.method)
            for entry in frame.metadata {
                writer.writeTag(4, .lengthDelimited)
                writer.writeVarint(UInt64(entrySize(entry).body))
                writer.writeStringField(1, entry.key)
                writer.writeStringField(2, entry.value)
                writer.writeBytes(entry.unknownFields.data)
            }
            if frame.timeoutMs != 0 {
                writer.writeTag(5, .varint)
                writer.writeVarint(UInt64(frame.timeoutMs))
            }
            if !frame.payload.isEmpty {
                writer.writeTag(6, .lengthDelimited)
                writer.writeVarint(UInt64(frame.payload.count))
                writer.writeBytes(frame.payload)
            }
            if let status {
                writer.writeTag(7, .lengthDelimited)
                writer.writeVarint(UInt64(status.count))
                status.withUnsafeBytes { writer.writeBytes($0) }
            }
            writer.writeBytes(unknown)
            precondition(writer.index == 4 + size, "frame size computed wrong")
            return writer.index
        }
        return buffer
    }
}

// MARK: Reading

/// Protobuf's wire types, as the envelope uses them.
private enum WireType: UInt64 {
    case varint = 0
    case lengthDelimited = 2
}

/// Reads one frame body; nil as soon as anything falls outside what it reads by hand.
private struct FrameReader {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    /// Whose strings are reused when the bytes are the same (see `WireFrame(decoding:reusingStringsOf:)`).
    let previous: WireFrame?

    init(bytes: UnsafeRawBufferPointer, previous: WireFrame? = nil) {
        self.bytes = bytes
        self.previous = previous
    }

    mutating func readFrame() -> WireFrame? {
        var frame = WireFrame()
        var sawStatus = false
        while self.index < self.bytes.count {
            guard let tag = self.readVarint() else { return nil }
            switch (tag >> 3, WireType(rawValue: tag & 7)) {
            case (1, .varint):
                guard let value = self.readVarint() else { return nil }
                frame.callID = value
            case (2, .varint):
                guard let value = self.readVarint() else { return nil }
                frame.kind = WireFrame.Kind(rawValue: Int(Int32(truncatingIfNeeded: value))) ?? .unspecified
            case (3, .lengthDelimited):
                guard let method = self.readString(reusing: self.previous?.method) else { return nil }
                frame.method = method
            case (4, .lengthDelimited):
                let index = frame.metadata.count
                let like = self.previous.flatMap { index < $0.metadata.count ? $0.metadata[index] : nil }
                guard let field = self.readField(), let entry = Self.readEntry(field, like: like) else { return nil }
                if index <= Metadata.maxEntries { frame.metadata.append(entry) }
            case (5, .varint):
                guard let value = self.readVarint() else { return nil }
                frame.timeoutMs = UInt32(truncatingIfNeeded: value)
            case (6, .lengthDelimited):
                guard let field = self.readField() else { return nil }
                frame.payload = field.isEmpty ? Data() : Data(bytes: field.baseAddress!, count: field.count)
            case (7, .lengthDelimited):
                // A second status merges into the first: swift-protobuf's to do.
                guard !sawStatus, let field = self.readField(),
                    let status = try? WireStatus(serializedBytes: Array(field))
                else { return nil }
                frame.status = status
                sawStatus = true
            default:
                return nil
            }
        }
        return frame
    }

    /// How many metadata entries (field 4) the frame holds, counted without reading them, up
    /// to where its bytes stop being well-formed fields (swift-protobuf refuses those anyway).
    mutating func countMetadataEntries() -> Int {
        var count = 0
        var groups = 0
        while self.index < self.bytes.count, let tag = self.readVarint(maxBytes: 10) {
            switch tag & 7 {
            case 0: guard self.readVarint(maxBytes: 10) != nil else { return count }
            case 1: guard self.skip(8) else { return count }
            case 2:
                // Lengths as swift-protobuf reads them, up to 10 bytes: a 10-byte length the
                // counter stopped at would leave every entry after it uncounted.
                guard let length = self.readVarint(maxBytes: 10), length <= UInt64(self.bytes.count - self.index) else {
                    return count
                }
                self.index += Int(length)
                if tag >> 3 == 4, groups == 0 { count += 1 }
            case 3: groups += 1
            case 4:
                guard groups > 0 else { return count }
                groups -= 1
            case 5: guard self.skip(4) else { return count }
            default: return count
            }
        }
        return count
    }

    private mutating func skip(_ count: Int) -> Bool {
        guard self.bytes.count - self.index >= count else { return false }
        self.index += count
        return true
    }

    /// A metadata entry; `like` is the entry in the same place of the previous frame.
    private static func readEntry(_ field: UnsafeRawBufferPointer, like: WireFrame.MetadataEntry?) -> WireFrame
        .MetadataEntry?
    {
        var reader = FrameReader(bytes: field)
        var entry = WireFrame.MetadataEntry()
        while reader.index < field.count {
            guard let tag = reader.readVarint() else { return nil }
            switch (tag >> 3, WireType(rawValue: tag & 7)) {
            case (1, .lengthDelimited):
                guard let key = reader.readString(reusing: like?.key) else { return nil }
                entry.key = key
            case (2, .lengthDelimited):
                guard let value = reader.readString(reusing: like?.value) else { return nil }
                entry.value = value
            default:
                return nil
            }
        }
        return entry
    }

    /// A varint of at most `maxBytes` bytes; its low 64 bits. Reading a frame takes 9 (63
    /// bits): longer ones, rare and full of edge cases, are left to swift-protobuf. Counting
    /// what swift-protobuf will read takes all of protobuf's 10.
    private mutating func readVarint(maxBytes: Int = 9) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while self.index < self.bytes.count, shift < 7 * UInt64(maxBytes) {
            let byte = self.bytes[self.index]
            self.index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    /// The body of a length-delimited field.
    private mutating func readField() -> UnsafeRawBufferPointer? {
        guard let length = self.readVarint(), length <= UInt64(self.bytes.count - self.index) else { return nil }
        let start = self.index
        self.index += Int(length)
        return UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.index])
    }

    /// A string field: `candidate` when it has the same bytes (no allocation, no validation).
    /// Metadata and method names are ASCII nearly always: those skip the generic UTF-8
    /// validation, which is several times slower.
    private mutating func readString(reusing candidate: String?) -> String? {
        guard let field = self.readField() else { return nil }
        if let candidate, !field.isEmpty, candidate.utf8.count == field.count,
            candidate.utf8.withContiguousStorageIfAvailable({
                memcmp($0.baseAddress!, field.baseAddress!, field.count) == 0
            }) == true
        {
            return candidate
        }
        let utf8 = field.assumingMemoryBound(to: UInt8.self)
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return String(validating: utf8, as: UTF8.self) }
        return String(decoding: utf8, as: UTF8.self)
    }
}

// MARK: Writing

/// An enum's number as protobuf writes it: an int32, sign-extended to 64 bits.
private func enumBits(_ rawValue: Int) -> UInt64 {
    UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: rawValue)))
}

private func varintSize(_ value: UInt64) -> Int {
    value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
}

/// A length-delimited field of `count` bytes, tag included; 0 when empty (proto3 omits it).
private func fieldSize(bytes count: Int) -> Int {
    count == 0 ? 0 : 1 + varintSize(UInt64(count)) + count
}

/// A metadata entry's body size, and its size as a field of the frame.
private func entrySize(_ entry: WireFrame.MetadataEntry) -> (body: Int, total: Int) {
    let body =
        fieldSize(bytes: entry.key.utf8.count) + fieldSize(bytes: entry.value.utf8.count)
        + entry.unknownFields.data.count
    return (body, 1 + varintSize(UInt64(body)) + body)
}

/// Writes a frame into memory sized for it beforehand.
private struct FrameWriter {
    let bytes: UnsafeMutableRawBufferPointer
    var index = 0

    init(bytes: UnsafeMutableRawBufferPointer) {
        self.bytes = bytes
    }

    /// The 4-byte big-endian length prefix.
    mutating func writeLength(_ length: UInt32) {
        self.bytes.storeBytes(of: length.bigEndian, toByteOffset: self.index, as: UInt32.self)
        self.index += 4
    }

    mutating func writeTag(_ field: UInt64, _ type: WireType) {
        self.writeVarint(field << 3 | type.rawValue)
    }

    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            self.bytes[self.index] = UInt8(truncatingIfNeeded: value) | 0x80
            self.index += 1
            value >>= 7
        }
        self.bytes[self.index] = UInt8(value)
        self.index += 1
    }

    mutating func writeBytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        (self.bytes.baseAddress! + self.index).copyMemory(from: base, byteCount: source.count)
        self.index += source.count
    }

    mutating func writeBytes(_ data: Data) {
        data.withUnsafeBytes { self.writeBytes($0) }
    }

    /// A string field; nothing when empty (proto3 omits it).
    mutating func writeStringField(_ field: UInt64, _ value: String) {
        guard !value.isEmpty else { return }
        var value = value
        value.withUTF8 { utf8 in
            self.writeTag(field, .lengthDelimited)
            self.writeVarint(UInt64(utf8.count))
            self.writeBytes(UnsafeRawBufferPointer(utf8))
        }
    }
}
