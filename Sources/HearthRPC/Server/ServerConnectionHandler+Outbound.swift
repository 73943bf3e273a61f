import Foundation
import HearthCore
import Logging
import NIOCore
import SwiftProtobuf
import Synchronization

// What a server connection sends: responses, GOAWAY, and the close once it is written.
extension ServerConnectionHandler {
    /// Answers a call it ran none of with `error`, marked ``TrustedMetadata/notRun``: safe for
    /// the caller to send again, elsewhere.
    func refuseUnrun(_ callID: UInt64, _ error: RPCError) {
        self.respond(callID, .failure(error), metadata: [TrustedMetadata.notRun: "1"])
    }

    func respond(_ callID: UInt64, _ result: Result<Data, any Error>, metadata: Metadata? = nil) {
        var frame = WireFrame()
        frame.callID = callID
        frame.kind = .response
        if let metadata { frame.metadata = metadata.entries }
        switch result {
        case .success(let payload) where payload.count > self.configuration.maxFrameSize - Self.envelopeAllowance:
            let limit = self.configuration.maxFrameSize
            frame.status =
                RPCError(.resourceExhausted, "response of \(payload.count) bytes exceeds the frame limit of \(limit)")
                .wireStatus
        case .success(let payload):
            frame.payload = payload
        case .failure(let error):
            let rpcError = RPCError(answering: error)
            if let cause = rpcError.cause, rpcError.code == .internal || cause is any StorageFailure {
                self.logger.error(
                    "call failed",
                    metadata: ["call-id": "\(callID)", "peer": "\(self.peer)", "error": "\(String(reflecting: cause))"]
                )
                self.health?.noteFailure(cause, logger: self.logger)
            }
            frame.status = rpcError.wireStatus
        }
        self.write(frame)
    }

    /// Room left in a frame for everything but the payload of a response: its call id, kind
    /// and status come to well under 64 bytes (a request, which carries metadata, is measured
    /// whole: `WireFrame.encodedSize`).
    static let envelopeAllowance = 64

    func write(_ frame: WireFrame) {
        guard let context = self.context, context.write(frame: frame) else { return }
        let flushed = context.carryOut(
            self.flushes.wrote(),
            endOfTick: { [this = NIOLoopBound(self, eventLoop: context.eventLoop)] in this.value.endOfTick() }
        )
        if flushed { self.lastActivity = context.eventLoop.now }
    }

    func endOfTick() {
        guard self.flushes.tickEnded(), let context = self.context else { return }
        self.lastActivity = context.eventLoop.now
        context.flush()
    }

    /// Sends GOAWAY with its reason and flushes it; the connection stays open (draining).
    func sendGoAway(_ code: StatusCode, _ reason: String) {
        guard let context = self.context else { return }
        var frame = WireFrame()
        frame.kind = .goaway
        frame.status = RPCError(code, reason).wireStatus
        self.write(frame)
        if self.flushes.takeUnflushed() { context.flush() }
    }

    /// Flushes what is queued and closes once it is written, or after `closeWriteBound` if the
    /// peer does not read it (a full send buffer must not keep the connection open forever).
    func closeAfterFlush(context: ChannelHandlerContext) {
        let channel = context.channel
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(ByteBuffer()), promise: flushed)
        flushed.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: Self.closeWriteBound) { channel.close(promise: nil) }
    }

    /// How long a closing connection may take to write its last frames.
    static let closeWriteBound = TimeAmount.seconds(5)

    /// Closes a connection whose peer sent a frame it refused as it arrived (too large, past
    /// the budget of frames still arriving), in the middle of sending it: the GOAWAY goes out
    /// and the write side closes behind it (FIN), then what the peer still sends is read and
    /// dropped until it closes too, for at most `lingerBound`.
    /// Closed at once, a socket with unread bytes is reset, and the reset discards the GOAWAY
    /// before the peer reads why. The frame decoder goes first, giving back its share of the
    /// partial-frame budget: what arrives from now on reaches this handler as bytes, which a
    /// closing connection drops.
    func lingeringClose(context: ChannelHandlerContext) {
        let channel = context.channel
        context.pipeline.syncOperations.removeHandler(name: Self.frameDecoderName, promise: nil)
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(ByteBuffer()), promise: flushed)
        flushed.futureResult.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        context.eventLoop.scheduleTask(in: Self.lingerBound) { channel.close(promise: nil) }
        // Reads may be held back for a peer that does not read (backpressure): not now.
        _ = channel.setOption(.autoRead, value: true)
        context.read()
    }

    /// The name of a server connection's frame decoder in its pipeline.
    static let frameDecoderName = "frames"

    /// How long a connection closed mid-frame keeps reading what its peer still sends.
    static let lingerBound = TimeAmount.seconds(2)
    /// How much of it, at most: by then the GOAWAY, sent first, has long reached the peer, and a
    /// hostile one gets no more of the loop's time for its bytes.
    static let lingerByteBound = 256 * 1024

    /// Bytes that came while closing (a frame's rest, behind a GOAWAY): dropped, and the
    /// connection closed at once past ``lingerByteBound``.
    func drop(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        self.droppedWhileClosing += bytes.readableBytes
        if self.droppedWhileClosing > Self.lingerByteBound { context.close(promise: nil) }
    }
}
