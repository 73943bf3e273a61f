public import NIOCore
import SwiftProtobuf

/// Splits a byte stream into frames: a 4-byte unsigned big-endian length N, then N bytes.
///
/// NIOExtras' `LengthFieldBasedFrameDecoder` would buffer whatever length a peer declares
/// (up to 4 GiB); this decoder checks the declared length against `maxFrameSize` before
/// buffering anything, so a hostile peer can never make the buffer grow past the limit.
public struct LengthPrefixedFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest frame body accepted, in bytes.
    public let maxFrameSize: Int

    public init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else {
            return .needMoreData
        }
        guard Int(length) <= self.maxFrameSize else {
            throw FrameTooLargeError(declaredSize: Int(length), limit: self.maxFrameSize)
        }
        guard buffer.readableBytes >= 4 + Int(length) else {
            return .needMoreData
        }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(Self.wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try self.decode(context: context, buffer: &buffer) == .continue {}
        // Bytes of a half-sent frame left at close are dropped: the peer never finished it.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

/// A peer declared a frame larger than the limit.
public struct FrameTooLargeError: Error, CustomStringConvertible, Equatable {
    public let declaredSize: Int
    public let limit: Int

    public init(declaredSize: Int, limit: Int) {
        self.declaredSize = declaredSize
        self.limit = limit
    }

    public var description: String {
        "frame of \(self.declaredSize) bytes exceeds the limit of \(self.limit) bytes"
    }
}

extension ByteBufferAllocator {
    /// Serializes `frame` behind its 4-byte length prefix, straight into one buffer: no
    /// intermediate array, and one write per frame where `LengthFieldPrepender` makes two.
    func buffer(framing frame: WireFrame) throws -> ByteBuffer {
        let framed: PrefixedBytes = try frame.serializedBytes(options: deterministicEncoding)
        return framed.buffer
    }
}

/// Storage that swift-protobuf serializes into: a `ByteBuffer` whose first four bytes hold the
/// body's length, big-endian, and whose body swift-protobuf fills in place.
struct PrefixedBytes: SwiftProtobufContiguousBytes {
    private(set) var buffer: ByteBuffer

    init(repeating byte: UInt8, count: Int) {
        self.buffer = ByteBufferAllocator().buffer(capacity: 4 + count)
        self.buffer.writeInteger(UInt32(count))
        self.buffer.writeRepeatingByte(byte, count: count)
    }

    init<S: Sequence>(_ sequence: S) where S.Element == UInt8 {
        let bytes = Array(sequence)
        self.init(repeating: 0, count: bytes.count)
        self.buffer.setBytes(bytes, at: 4)
    }

    var count: Int { self.buffer.readableBytes - 4 }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try self.buffer.withUnsafeReadableBytes { try body(UnsafeRawBufferPointer(rebasing: $0.dropFirst(4))) }
    }

    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try self.buffer.withUnsafeMutableReadableBytes {
            try body(UnsafeMutableRawBufferPointer(rebasing: $0.dropFirst(4)))
        }
    }
}

extension ChannelHandlerContext {
    /// Writes `frame` (not flushed). Returns false, after reporting the error down the
    /// pipeline, if it could not be encoded (only invalid UTF-8 could cause that).
    func write(frame: WireFrame) -> Bool {
        do {
            self.write(NIOAny(try self.channel.allocator.buffer(framing: frame)), promise: nil)
            return true
        } catch {
            self.fireErrorCaught(error)
            return false
        }
    }
}
