public import NIOCore
import SwiftProtobuf
import Synchronization

/// Splits a byte stream into frames: a 4-byte unsigned big-endian length N, then N bytes.
///
/// NIOExtras' `LengthFieldBasedFrameDecoder` would buffer whatever length a peer declares
/// (up to 4 GiB); this decoder checks the declared length against `maxFrameSize` before
/// buffering anything, so a hostile peer can never make the buffer grow past the limit. On a
/// server, the bytes of frames not yet complete also count against a budget all of its
/// connections share (``PartialFrameBudget``), and a frame must keep up a minimum pace
/// (``FramePace``), so that no peer holds its share of the budget for long by dribbling.
public struct LengthPrefixedFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest frame body accepted, in bytes.
    public let maxFrameSize: Int
    private let budget: PartialFrameBudget?
    /// The peer's address as the budget counts it (``PartialFrameBudget/perAddressLimit``).
    private let peerAddress: String?
    /// Keeps the frame still arriving to its pace; nil without one (a client).
    private let paceWatch: FramePaceWatch?
    /// The smaller limit until a call on the connection has passed authentication; nil: none.
    private let untilAuthenticated: FrameLimitUntilAuthenticated?
    /// What this connection holds of the budget: the bytes of its frame still arriving.
    private var held = 0

    /// - Parameters:
    ///   - budget: shared by a server's connections; nil on a client.
    ///   - peerAddress: what the budget counts this peer's bytes under, for its per-address
    ///     share; nil: none applies.
    ///   - pace: how fast a frame must arrive once begun; nil: no limit (a client).
    ///   - readingTime: the clock the pace is measured by: the connection's time spent
    ///     reading, which its handler stops while it holds reads back.
    ///   - untilAuthenticated: a smaller limit until a call has passed authentication.
    public init(
        maxFrameSize: Int,
        budget: PartialFrameBudget? = nil,
        peerAddress: String? = nil,
        pace: FramePace? = nil,
        readingTime: ReadingTime = ReadingTime(),
        untilAuthenticated: FrameLimitUntilAuthenticated? = nil
    ) {
        self.maxFrameSize = maxFrameSize
        self.untilAuthenticated = untilAuthenticated
        self.budget = budget
        self.peerAddress = peerAddress
        self.paceWatch = pace.map { FramePaceWatch(pace: $0, budget: budget, readingTime: readingTime) }
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try self.decode(context: context, buffer: &buffer, holding: true)
    }

    /// One frame off `buffer`, if it is all there; when it is not and `holding`, the bytes
    /// that are take their share of the budget.
    private mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer, holding: Bool) throws
        -> DecodingState
    {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else {
            if holding { try self.stillArriving(length: nil, received: buffer.readableBytes, context: context) }
            return .needMoreData
        }
        guard Int(length) <= self.maxFrameSize else {
            throw FrameTooLargeError(declaredSize: Int(length), limit: self.maxFrameSize)
        }
        if let early = self.untilAuthenticated, !early.lifted, Int(length) > early.limit {
            throw FrameTooLargeBeforeAuthenticationError(declaredSize: Int(length), limit: early.limit)
        }
        guard buffer.readableBytes >= 4 + Int(length) else {
            if holding { try self.stillArriving(length: Int(length), received: buffer.readableBytes, context: context) }
            return .needMoreData
        }
        buffer.moveReaderIndex(forwardBy: 4)
        let frame = buffer.readSlice(length: Int(length))!
        self.paceWatch?.frameEnded()
        // The decoder is not called again for an empty buffer: give back what the frame held.
        if buffer.readableBytes < self.held { try self.hold(buffer.readableBytes) }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        // Closing: what is left takes no more of the budget.
        while try self.decode(context: context, buffer: &buffer, holding: false) == .continue {}
        // Bytes of a half-sent frame left at close are dropped: the peer never finished it.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        self.paceWatch?.stop()
        try self.hold(0)
        return .needMoreData
    }

    public mutating func decoderRemoved(context: ChannelHandlerContext) {
        self.paceWatch?.stop()
        try? self.hold(0)
    }

    /// A frame is not all here yet: `received` bytes of it (prefix included) are, of a body of
    /// `length` bytes (nil while the prefix itself is incomplete). Checks its pace, then holds
    /// its share of the budget.
    private mutating func stillArriving(length: Int?, received: Int, context: ChannelHandlerContext) throws {
        try self.paceWatch?.arrived(length: length, received: received, context: context)
        try self.hold(received)
    }

    /// Holds `bytes` of the budget for the frame still arriving (none once it is complete).
    private mutating func hold(_ bytes: Int) throws {
        guard let budget = self.budget, bytes != self.held else { return }
        if bytes > self.held {
            if let refusal = budget.take(bytes - self.held, from: self.peerAddress) { throw refusal }
        } else {
            budget.give(self.held - bytes, from: self.peerAddress)
        }
        self.held = bytes
    }
}

/// The bytes of frames still arriving on all of a server's connections, at most `limit`, and
/// at most `perAddressLimit` from one peer address. Without it, connections that each send most
/// of a large frame and then wait (a slowloris with big frames) could make the server hold the
/// frame limit times the connection limit (4 MiB x 10,000); without the share, one host could
/// hold all of it and turn everyone else's uploads away.
public final class PartialFrameBudget: Sendable {
    public let limit: Int
    /// The most one address may hold (a gateway's clients); nil: no share (a service, whose
    /// frames all come from the gateway).
    public let perAddressLimit: Int?
    private let used = Atomic<Int>(0)
    private let byAddress = Mutex<[String: Int]>([:])

    public init(limit: Int, perAddressLimit: Int? = nil) {
        self.limit = limit
        self.perAddressLimit = perAddressLimit
    }

    /// The bytes `address` holds now.
    public func inUse(by address: String) -> Int {
        self.byAddress.withLock { $0[address] ?? 0 }
    }

    /// Takes `bytes` for a peer at `address` if that keeps within both limits; else the refusal.
    func take(_ bytes: Int, from address: String?) -> PartialFramesOverBudgetError? {
        guard let share = self.perAddressLimit, let address else {
            return self.take(bytes) ? nil : PartialFramesOverBudgetError(limit: self.limit)
        }
        return self.byAddress.withLock { held in
            let holding = held[address] ?? 0
            guard holding + bytes <= share else {
                return PartialFramesOverBudgetError(limit: share, address: address)
            }
            guard self.take(bytes) else { return PartialFramesOverBudgetError(limit: self.limit) }
            held[address] = holding + bytes
            return nil
        }
    }

    func give(_ bytes: Int, from address: String?) {
        if self.perAddressLimit != nil, let address {
            self.byAddress.withLock { held in
                let left = (held[address] ?? 0) - bytes
                held[address] = left > 0 ? left : nil
            }
        }
        self.give(bytes)
    }

    /// The bytes held now.
    public var inUse: Int { self.used.load(ordering: .relaxed) }

    /// Whether more than half of it is held: frames behind their ``FramePace`` are refused.
    public var isUnderPressure: Bool { self.inUse > self.limit / 2 }

    /// Takes `bytes` if that stays within the limit (never over it, even for a moment, so a
    /// take that fits is never refused for another that did not).
    func take(_ bytes: Int) -> Bool {
        var used = self.used.load(ordering: .relaxed)
        while used + bytes <= self.limit {
            let (exchanged, found) = self.used.weakCompareExchange(
                expected: used,
                desired: used + bytes,
                ordering: .relaxed
            )
            if exchanged { return true }
            used = found
        }
        return false
    }

    func give(_ bytes: Int) {
        self.used.wrappingSubtract(bytes, ordering: .relaxed)
    }
}

/// A frame still arriving would take the server's partial-frame budget past its limit, or its
/// peer address's share of it past that.
public struct PartialFramesOverBudgetError: Error, CustomStringConvertible, Equatable {
    public let limit: Int
    /// The address whose share was full; nil when the whole budget was.
    public var address: String? = nil

    public var description: String {
        guard let address = self.address else {
            return "the server is busy receiving other large requests; retry later"
        }
        return "requests still arriving from \(address) hold \(self.limit) bytes, the most one address may; "
            + "retry once they are in"
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
