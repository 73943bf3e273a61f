import Foundation
import Histogram

/// What `bench` prints, and writes with `--json`: the keys of benchmarks/c-load's load_client
/// (`qps`, `calls`, `errors`, `p50_us` ... `max_us`), latencies in microseconds.
struct BenchReport: Encodable {
    var target: String
    var qps: Double
    var calls: UInt64
    var errors: UInt64
    var seconds: Double
    var warmup: Double
    var connections = 1
    var inflight: Int
    var payloadBytes: Int
    var p50Us: Double
    var p90Us: Double
    var p99Us: Double
    var p999Us: Double
    var maxUs: Double
    var minUs: Double
    var meanUs: Double
    var firstError: String?

    init(stats: EchoStats, bench: Bench) {
        let latency = stats.latencyNanos
        func micros(_ nanos: UInt64) -> Double { (Double(nanos) / 100).rounded() / 10 }
        self.target = bench.target
        self.qps = (Double(stats.calls) / bench.seconds * 10).rounded() / 10
        self.calls = stats.calls
        self.errors = stats.errors
        self.seconds = bench.seconds
        self.warmup = bench.warmup
        self.inflight = bench.concurrency
        self.payloadBytes = bench.payload
        self.p50Us = micros(latency.valueAtPercentile(50))
        self.p90Us = micros(latency.valueAtPercentile(90))
        self.p99Us = micros(latency.valueAtPercentile(99))
        self.p999Us = micros(latency.valueAtPercentile(99.9))
        self.maxUs = micros(latency.maxRecorded)
        self.minUs = micros(latency.totalCount > 0 ? latency.min : 0)
        self.meanUs = micros(UInt64(latency.mean))
        self.firstError = stats.firstError
    }

    var text: String {
        var lines = [
            "peer-grpc-echo bench: \(self.target) connections=1 concurrency=\(self.inflight) "
                + "payload=\(self.payloadBytes)B warmup=\(self.warmup)s seconds=\(self.seconds)",
            "calls        \(self.calls)",
            "qps          \(self.qps)",
            "latency us   p50 \(self.p50Us)  p90 \(self.p90Us)  p99 \(self.p99Us)  p99.9 \(self.p999Us)  "
                + "max \(self.maxUs)  (min \(self.minUs) mean \(self.meanUs))",
            "errors       \(self.errors)",
        ]
        if let firstError = self.firstError { lines.append("first error  \(firstError)") }
        return lines.joined(separator: "\n")
    }

    func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }
}
