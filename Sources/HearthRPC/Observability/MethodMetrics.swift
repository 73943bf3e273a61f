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

    private let methods = Mutex<[String: Snapshot]>([:])

    public init() {}

    /// Records one finished call.
    public func record(method: String, code: StatusCode, micros: UInt64) {
        self.methods.withLock { methods in
            methods[method, default: Snapshot()].countsByCode[code, default: 0] += 1
            _ = methods[method]!.latencyMicros.record(min(micros, 60_000_000))
        }
    }

    /// A copy of everything recorded so far, by method.
    public func snapshot() -> [String: Snapshot] {
        self.methods.withLock { $0 }
    }
}
