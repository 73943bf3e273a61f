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
