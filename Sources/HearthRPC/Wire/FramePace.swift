public import NIOCore

/// How fast a frame must arrive once its first bytes have: in full within `grace` plus its
/// length at `minBytesPerSecond`. A frame that falls behind is refused while the server's
/// partial-frame budget is more than half used (always, on a decoder without a budget), and
/// once twice behind in any case: at its next bytes, or by a timer if its peer sends nothing
/// more. A frame also must keep moving: one whose bytes stop for longer than `maxStall` is
/// refused whatever its allowance (a peer that sent all but the last byte of a large frame
/// would otherwise hold its room for minutes).
///
/// Without it, a peer could hold its share of the partial-frame budget for as long as it
/// kept sending a byte now and then; with it, holding the budget costs re-sending it. A slow
/// upload gets twice its allowance while the room it takes is not wanted.
public struct FramePace: Sendable, Equatable {
    /// Time every frame gets, whatever its size (for a slow start, or a link that stalls).
    public var grace: TimeAmount
    /// The slowest pace a frame may arrive at, on top of the grace, in bytes per second.
    public var minBytesPerSecond: Int
    /// The longest a frame begun may go without a byte; nil: no limit but its allowance.
    public var maxStall: TimeAmount?

    /// 30 s plus a second per 32 KiB (256 kbit/s): a 4 MiB frame has 2 min 38 s, an 11 MiB
    /// photo upload through the gateway 6 min 22 s; and never 10 s without a byte (TCP's
    /// retransmissions after three losses in a row wait 1 + 2 + 4 s).
    public static let `default` = FramePace(grace: .seconds(30), minBytesPerSecond: 32 * 1024, maxStall: .seconds(10))

    public init(grace: TimeAmount, minBytesPerSecond: Int, maxStall: TimeAmount? = nil) {
        precondition(minBytesPerSecond > 0)
        precondition(maxStall.map { $0 > .zero } ?? true)
        self.grace = grace
        self.minBytesPerSecond = minBytesPerSecond
        self.maxStall = maxStall
    }

    /// How long a frame with a body of `length` bytes may take to arrive.
    public func allowance(forFrameOf length: Int) -> TimeAmount {
        // Lengths are at most 4 GiB: the product stays far within Int64.
        self.grace + .nanoseconds(Int64(length) * 1_000_000_000 / Int64(self.minBytesPerSecond))
    }

    /// Whether a frame of `length` bytes that has taken `taken` so far is on time.
    enum Verdict: Equatable {
        /// Within its allowance: it could first be late `lateAfter` from now.
        case onTime(lateAfter: TimeAmount)
        /// Past its allowance, let go on while the budget has room: late as soon as the budget
        /// is under pressure, and `lateAfter` from now in any case.
        case behind(lateAfter: TimeAmount)
        /// Late: it broke the allowance it had, `allowed`.
        case late(allowed: TimeAmount)
        /// No byte of it came for longer than ``FramePace/maxStall``.
        case stalled
    }

    /// Behind its pace, a frame is late while the budget it holds part of is more than half used
    /// (`underPressure`); while there is room, slow uploads get twice their allowance.
    func verdict(taken: TimeAmount, length: Int, underPressure: Bool) -> Verdict {
        let allowed = self.allowance(forFrameOf: length)
        if taken <= allowed { return .onTime(lateAfter: allowed - taken + .nanoseconds(1)) }
        if underPressure { return .late(allowed: allowed) }
        if taken <= allowed * 2 { return .behind(lateAfter: allowed * 2 - taken + .nanoseconds(1)) }
        return .late(allowed: allowed * 2)
    }
}

/// Keeps a connection's frame still arriving to its ``FramePace``: checks it as its bytes
/// arrive, and by a timer while none do, so that a peer gone silent halfway through a frame
/// gives back its share of the budget at its allowance, not at the idle timeout. One timer at
/// most per connection, set when a frame is first seen unfinished, left to run out when it
/// completes (frames that complete within one read never set it), and moved sooner for a
/// later frame that could be late before it fires. Confined to its connection's event loop.
final class FramePaceWatch {
    private let pace: FramePace
    private let budget: PartialFrameBudget?
    private let readingTime: ReadingTime
    /// The frame still arriving: when it was first seen, its body length (nil until its
    /// prefix is in), the bytes of it in so far, and when the last of them came. Nil between
    /// frames.
    private var frame: (began: NIODeadline, length: Int?, received: Int, lastBytes: NIODeadline)?
    private var check: Scheduled<Void>?
    /// When the timer set fires, in reading time (as the frame's times are).
    private var checkDue: NIODeadline?

    /// While a silent peer's frame is on time, the timer looks again at least this far apart:
    /// reading time stands still during backpressure, and a frame whose allowance ran out
    /// meanwhile would otherwise be looked at again at once, and again.
    static let minimumRecheck = TimeAmount.milliseconds(100)

    init(pace: FramePace, budget: PartialFrameBudget?, readingTime: ReadingTime) {
        self.pace = pace
        self.budget = budget
        self.readingTime = readingTime
    }

    /// Bytes of an unfinished frame arrived (`received` of it in all, length prefix included):
    /// throws ``FrameTooSlowError`` if it is late.
    func arrived(length: Int?, received: Int, context: ChannelHandlerContext) throws {
        let now = self.readingTime.now()
        let began = self.frame?.began ?? now
        let moved = received > (self.frame?.received ?? 0)
        self.frame = (began, length, received, moved ? now : self.frame?.lastBytes ?? now)
        let verdict = self.verdict(at: now)
        if let refusal = self.refusal(verdict, at: now) { throw refusal }
        self.scheduleCheck(after: verdict, now: now, context: context)
    }

    /// The frame completed. The timer, if set, is left to run out: it finds no frame, or a
    /// later one to look at.
    func frameEnded() {
        self.frame = nil
    }

    /// The connection is closing: nothing more to watch, and the timer lets go of it now.
    func stop() {
        self.frame = nil
        self.check?.cancel()
        self.check = nil
    }

    private func verdict(at now: NIODeadline) -> FramePace.Verdict? {
        guard let frame = self.frame else { return nil }
        if let maxStall = self.pace.maxStall, now - frame.lastBytes > maxStall { return .stalled }
        return self.pace.verdict(
            taken: now - frame.began,
            length: frame.length ?? 0,
            underPressure: self.budget?.isUnderPressure ?? true
        )
    }

    /// The error a frame `verdict` refuses gets; nil when it is not refused.
    private func refusal(_ verdict: FramePace.Verdict?, at now: NIODeadline) -> FrameTooSlowError? {
        let allowed: TimeAmount
        var stalled: TimeAmount?
        switch verdict {
        case .late(let late)?: allowed = late
        case .stalled?:
            allowed = self.pace.maxStall ?? .zero
            stalled = self.frame.map { now - $0.lastBytes }
        case nil, .onTime?, .behind?: return nil
        }
        return FrameTooSlowError(
            declaredSize: self.frame?.length,
            received: self.frame?.received ?? 0,
            allowed: allowed,
            pace: self.pace,
            stalledFor: stalled
        )
    }

    /// Sets the timer for when a frame that is not late `now` (reading time) could be, unless
    /// the one set comes first: one set for a large frame that has since completed would be
    /// minutes late for a small one that began after it.
    private func scheduleCheck(after verdict: FramePace.Verdict?, now: NIODeadline, context: ChannelHandlerContext) {
        var delay: TimeAmount
        switch verdict {
        case nil, .late, .stalled: return
        case .onTime(let lateAfter): delay = lateAfter
        case .behind(let lateAfter): delay = min(lateAfter, Self.pressureRecheck)
        }
        // Or when it would have stalled, if that comes first.
        if let maxStall = self.pace.maxStall, let frame = self.frame {
            delay = min(delay, frame.lastBytes + maxStall - now + .nanoseconds(1))
        }
        delay = max(delay, Self.minimumRecheck)
        if self.check != nil, let checkDue = self.checkDue, checkDue <= now + delay { return }
        self.check?.cancel()
        self.checkDue = now + delay
        let watch = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        self.check = context.eventLoop.scheduleTask(in: delay) {
            let (this, context) = watch.value
            this.check = nil
            this.checkSilentFrame(context: context)
        }
    }

    /// How often a frame past its allowance is looked at while the budget has room: it is late
    /// as soon as there is none.
    static let pressureRecheck = TimeAmount.seconds(1)

    /// The timer ran out: the frame still arriving then (if any, maybe a later one) is refused if
    /// late, looked at again if not. The refusal goes down the pipeline as a decoding error would.
    private func checkSilentFrame(context: ChannelHandlerContext) {
        let now = self.readingTime.now()
        let verdict = self.verdict(at: now)
        guard let refusal = self.refusal(verdict, at: now) else {
            self.scheduleCheck(after: verdict, now: now, context: context)
            return
        }
        self.frame = nil
        context.fireErrorCaught(refusal)
    }
}

@available(*, unavailable)
extension FramePaceWatch: Sendable {}

/// A connection's time spent reading, the clock a frame's ``FramePace`` is measured by: a
/// server stops reading from a peer that does not read its answers (backpressure), and the
/// bytes that wait meanwhile in the kernel are not late by the peer's fault. Its connection
/// handler pauses it while reads are held back. Confined to its connection's event loop.
public final class ReadingTime {
    private let clock: () -> NIODeadline
    private var pausedAt: NIODeadline?
    private var paused = TimeAmount.zero

    /// - Parameter clock: the time it runs from (tests pass their own).
    public init(clock: @escaping () -> NIODeadline = { .now() }) {
        self.clock = clock
    }

    /// The clock's time less every pause so far (standing still during one).
    func now() -> NIODeadline {
        (self.pausedAt ?? self.clock()) - self.paused
    }

    func pause() {
        guard self.pausedAt == nil else { return }
        self.pausedAt = self.clock()
    }

    func resume() {
        guard let pausedAt = self.pausedAt else { return }
        self.paused = self.paused + (self.clock() - pausedAt)
        self.pausedAt = nil
    }
}

@available(*, unavailable)
extension ReadingTime: Sendable {}

/// A frame arrived more slowly than its server's ``FramePace`` allows.
public struct FrameTooSlowError: Error, CustomStringConvertible, Equatable {
    /// The frame's declared body length; nil when not even its prefix had arrived.
    public let declaredSize: Int?
    /// What had arrived of it, length prefix included.
    public let received: Int
    public let allowed: TimeAmount
    public let pace: FramePace
    /// How long no byte of it had come, when that is why it was refused (``FramePace/maxStall``).
    public var stalledFor: TimeAmount? = nil

    public var description: String {
        let size = self.declaredSize.map { "frame of \($0) bytes" } ?? "frame's length prefix"
        if let stalledFor = self.stalledFor {
            return "\(size) stalled, \(self.received) bytes in: no byte for \(stalledFor.wholeSeconds) s "
                + "(a frame begun must keep arriving, at most \(self.allowed.wholeSeconds) s without a byte)"
        }
        return "\(size) arriving too slowly, \(self.received) bytes after \(self.allowed.wholeSeconds) s: "
            + "a frame must arrive within \(self.pace.grace.wholeSeconds) s plus 1 s per \(self.pace.rateUnit)"
    }
}

extension FramePace {
    /// The bytes a frame gets a second for: "32 KiB", or "1000 bytes".
    fileprivate var rateUnit: String {
        let rate = self.minBytesPerSecond
        return rate % 1024 == 0 ? "\(rate / 1024) KiB" : "\(rate) bytes"
    }
}

extension TimeAmount {
    fileprivate var wholeSeconds: Int64 { self.nanoseconds / 1_000_000_000 }
}
