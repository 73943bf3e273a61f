/// Decides when a connection flushes, so that many frames share one syscall: once at the end
/// of a read batch, or once per event-loop tick for frames written outside one (responses of
/// calls that finished asynchronously). A flush per frame would cap throughput.
///
/// A pure state machine: it only answers what to do; its owner writes and flushes. (Calling
/// into the channel from inside a mutating method could re-enter the owner, for instance
/// when a flush fails and closes the channel.)
struct FlushBatcher {
    private var inReadBatch = false
    private var unflushed = false
    private var flushScheduled = false

    /// A frame was written. Returns true when the owner must schedule ``tickEnded()`` on its
    /// event loop (no read batch will flush it, and no flush is scheduled yet).
    mutating func wrote() -> Bool {
        self.unflushed = true
        guard !self.inReadBatch && !self.flushScheduled else { return false }
        self.flushScheduled = true
        return true
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
        defer { self.unflushed = false }
        return self.unflushed
    }
}
