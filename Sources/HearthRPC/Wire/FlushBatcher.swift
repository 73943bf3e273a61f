import NIOCore

/// Decides when a connection flushes, so that many frames share one syscall: once at the end
/// of a read batch, or once per event-loop tick for frames written outside one (responses of
/// calls that finished asynchronously), and after every `flushEvery` frames in between. A flush
/// per frame would cap throughput; holding a whole large batch back until its end makes the
/// peer wait for all of it, and when each hop of a chain (client, gateway, service) does
/// that, the calls move through it as one convoy and each process idles while the others work.
///
/// A pure state machine: it only answers what to do; its owner writes and flushes. (Calling
/// into the channel from inside a mutating method could re-enter the owner, for instance
/// when a flush fails and closes the channel.)
struct FlushBatcher {
    /// What the owner does after writing a frame.
    enum Step: Equatable {
        /// Nothing: a flush to come covers the frame.
        case none
        /// Schedule ``tickEnded()`` on the event loop: no read batch will flush the frame.
        case scheduleTickEnd
        /// Flush now: `flushEvery` frames are waiting.
        case flush
    }

    /// Frames after which the owner flushes even in the middle of a batch.
    let flushEvery: Int
    private var inReadBatch = false
    private var unflushed = 0
    private var flushScheduled = false

    init(flushEvery: Int = 16) {
        precondition(flushEvery > 0)
        self.flushEvery = flushEvery
    }

    /// A frame was written: what the owner does now.
    mutating func wrote() -> Step {
        self.unflushed += 1
        if self.unflushed >= self.flushEvery {
            self.unflushed = 0
            return .flush
        }
        guard !self.inReadBatch && !self.flushScheduled else { return .none }
        self.flushScheduled = true
        return .scheduleTickEnd
    }

    mutating func readStarted() {
        self.inReadBatch = true
    }

    /// The read batch ended. Returns whether to flush now.
    mutating func readEnded() -> Bool {
        self.inReadBatch = false
        return self.takeUnflushed()
    }

    /// The scheduled end-of-tick moment came. Returns whether to flush now.
    mutating func tickEnded() -> Bool {
        self.flushScheduled = false
        return self.takeUnflushed()
    }

    /// Returns whether anything written is still unflushed, and counts it as flushed.
    mutating func takeUnflushed() -> Bool {
        defer { self.unflushed = 0 }
        return self.unflushed > 0
    }
}

extension ChannelHandlerContext {
    /// Carries out what ``FlushBatcher/wrote()`` answered: flushes now, or queues `endOfTick`
    /// (made only then) to run on the event loop after the work in hand. Returns whether it
    /// flushed.
    @discardableResult
    func carryOut(_ step: FlushBatcher.Step, endOfTick: @autoclosure () -> @Sendable () -> Void) -> Bool {
        switch step {
        case .none:
            return false
        case .scheduleTickEnd:
            self.eventLoop.execute(endOfTick())
            return false
        case .flush:
            self.flush()
            return true
        }
    }
}
