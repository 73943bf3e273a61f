public import NIOCore

/// How fast a frame must arrive once its first bytes have: in full within `grace` plus its
/// length at `minBytesPerSecond`. A frame that falls behind is refused at its next bytes while
/// the server's partial-frame budget is more than half used (always, on a decoder without a
/// budget), and once twice behind in any case; one whose peer sends nothing more ends with
/// the idle connection.
///
/// Without it, a peer could hold its share of the partial-frame budget for as long as it
/// kept sending a byte now and then; with it, holding the budget costs re-sending it. A slow
/// upload gets twice its allowance while the room it takes is not wanted.
public struct FramePace: Sendable, Equatable {
    /// Time every frame gets, whatever its size (for a slow start, or a link that stalls).
    public var grace: TimeAmount
    /// The slowest pace a frame may arrive at, on top of the grace, in bytes per second.
    public var minBytesPerSecond: Int

    /// 30 s plus a second per 32 KiB (256 kbit/s): a 4 MiB frame has 2 min 38 s, an 11 MiB
    /// photo upload through the gateway 6 min 22 s.
    public static let `default` = FramePace(grace: .seconds(30), minBytesPerSecond: 32 * 1024)

    public init(grace: TimeAmount, minBytesPerSecond: Int) {
        precondition(minBytesPerSecond > 0)
        self.grace = grace
        self.minBytesPerSecond = minBytesPerSecond
    }

    /// How long a frame with a body of `length` bytes may take to arrive.
    public func allowance(forFrameOf length: Int) -> TimeAmount {
        // Lengths are at most 4 GiB: the product stays far within Int64.
        self.grace + .nanoseconds(Int64(length) * 1_000_000_000 / Int64(self.minBytesPerSecond))
    }
}

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

    public var description: String {
        let size = self.declaredSize.map { "frame of \($0) bytes" } ?? "frame's length prefix"
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
