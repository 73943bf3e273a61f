import NIOCore

/// Writes frames on one channel and flushes them in batches: once at the end of a read
/// batch, or once per event-loop tick for frames written outside one (responses of calls
/// that finished asynchronously). A syscall per frame would cap throughput.
///
/// Lives on the channel's event loop; its owner forwards `channelReadComplete`.
struct FrameWriter {
    private var inReadBatch = false
    private var unflushed = false
    private var flushScheduled = false

    /// Serializes and writes `frame`; the flush follows at the end of the read batch, or, when
    /// this returns true, the caller schedules ``scheduledFlush(context:)`` for the end of the tick.
    mutating func write(_ frame: WireFrame, context: ChannelHandlerContext) -> Bool {
        let buffer: ByteBuffer
        do {
            buffer = try context.channel.allocator.buffer(framing: frame)
        } catch {
            // Encoding a message we built ourselves cannot fail for well-formed UTF-8 strings.
            context.fireErrorCaught(error)
            return false
        }
        context.write(NIOAny(buffer), promise: nil)
        self.unflushed = true
        guard !self.inReadBatch && !self.flushScheduled else { return false }
        self.flushScheduled = true
        return true
    }

    mutating func readStarted() {
        self.inReadBatch = true
    }

    /// Flushes what the read batch wrote.
    mutating func readComplete(context: ChannelHandlerContext) {
        self.inReadBatch = false
        self.flushIfNeeded(context: context)
    }

    /// The scheduled per-tick flush.
    mutating func scheduledFlush(context: ChannelHandlerContext) {
        self.flushScheduled = false
        self.flushIfNeeded(context: context)
    }

    mutating func flushIfNeeded(context: ChannelHandlerContext) {
        guard self.unflushed else { return }
        self.unflushed = false
        context.flush()
    }
}
