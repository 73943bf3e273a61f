public import Histogram
import Synchronization

/// Per-method call counts by status code and latency histograms (microseconds), shared by
/// the server and client interceptors and read by `hearth` tools and the metrics endpoint.
public final class MethodMetrics: Sendable {
    /// What was recorded for one method.
    public struct Snapshot: Sendable {
        public var countsByCode: [StatusCode: UInt64] = [:]
        public var latencyMicros = Histogram<UInt64>(
            highestTrackableValue: 60_000_000,
            numberOfSignificantValueDigits: .three
        )
    }

    /// The snapshots in the order their methods were first seen, and where each method's is:
    /// a call finds its method with one hash and changes its snapshot in place.
    private struct Methods {
        var slots: [String: Int] = [:]
        var snapshots: [Snapshot] = []

        mutating func slot(_ method: String) -> Int {
            if let slot = self.slots[method] { return slot }
            self.snapshots.append(Snapshot())
            self.slots[method] = self.snapshots.count - 1
            return self.snapshots.count - 1
        }
    }

    private let methods = Mutex(Methods())

    /// Method names counted apart, at most; calls to names past them are counted together as
    /// ``otherMethods``. The names come from callers (a gateway counts what it refuses too),
    /// and each keeps a histogram of about 140 KB: made-up names must not grow memory for good.
    public static let maxMethods = 200
    /// Longer names are counted as ``otherMethods`` too (no Hearth method comes near).
    public static let maxMethodBytes = 200
    public static let otherMethods = "(other)"

    public init() {}

    /// Records one finished call. A method not counted yet gets its own entry only when
    /// `countsApart` (a gateway asks it of an answer that shows the method exists: a name no
    /// service knows, or a caller with no token, must not take one of the 200).
    public func record(method: String, code: StatusCode, micros: UInt64, countsApart: Bool = true) {
        self.methods.withLock { methods in
            let slot =
                methods.slots[method]
                ?? (countsApart && methods.slots.count < Self.maxMethods && method.utf8.count <= Self.maxMethodBytes
                    ? methods.slot(method) : methods.slot(Self.otherMethods))
            // Through the array's own subscript, which changes a snapshot in place (a copy of
            // one, its 140 KB histogram included, on every call cost 19% more CPU per echo).
            methods.snapshots[slot].countsByCode[code, default: 0] += 1
            _ = methods.snapshots[slot].latencyMicros.record(min(micros, 60_000_000))
        }
    }

    /// A copy of everything recorded so far, by method.
    public func snapshot() -> [String: Snapshot] {
        self.methods.withLock { methods in methods.slots.mapValues { methods.snapshots[$0] } }
    }
}
