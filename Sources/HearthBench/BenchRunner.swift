import ArgumentParser
import Foundation
import HearthCommandLine
import HearthCore
import HearthRPC
import Histogram
import NIOCore
import NIOPosix
import Synchronization

/// What `hearth bench` measured.
public struct BenchReport: Codable, Sendable {
    struct Latency: Codable, Sendable {
        var p50Micros: UInt64
        var p90Micros: UInt64
        var p99Micros: UInt64
        var p999Micros: UInt64
        var maxMicros: UInt64
    }

    var method: String
    var target: String
    var concurrency: Int
    var connections: Int
    var calls: UInt64
    var seconds: Double
    var qps: Double
    var latency: Latency
    /// Calls by status code name, e.g. `OK`, `DEADLINE_EXCEEDED`.
    var codes: [String: UInt64]
    /// The CPU time the process under load (`--server-pid`) spent per measured call, in
    /// microseconds; absent when no process was named.
    var serverCPUMicrosPerCall: Double?

    public init(method: String, target: String, concurrency: Int, connections: Int, measured: BenchMeasurement) {
        let (histogram, codes, seconds) = (measured.histogram, measured.codes, measured.seconds)
        self.method = method
        self.target = target
        self.concurrency = concurrency
        self.connections = connections
        self.calls = codes.values.reduce(0, +)
        self.seconds = seconds
        self.qps = seconds > 0 ? Double(self.calls) / seconds : 0
        if let cpu = measured.serverCPU, self.calls > 0 {
            self.serverCPUMicrosPerCall = Double(cpu.microseconds) / Double(self.calls)
        }
        self.latency = Latency(
            p50Micros: histogram.valueAtPercentile(50),
            p90Micros: histogram.valueAtPercentile(90),
            p99Micros: histogram.valueAtPercentile(99),
            p999Micros: histogram.valueAtPercentile(99.9),
            maxMicros: histogram.totalCount > 0 ? histogram.max : 0
        )
        self.codes = Dictionary(uniqueKeysWithValues: codes.map { ($0.key.name, $0.value) })
    }

    /// Prints the report, and writes it as JSON to the file at `path` when one is given.
    public func emit(json path: String?) throws {
        print(self.text)
        guard let path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    /// The report for people.
    var text: String {
        func ms(_ micros: UInt64) -> String { String(format: "%.3f ms", Double(micros) / 1000) }
        let codes = self.codes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return """
            \(self.method) on \(self.target): \(self.concurrency) in flight over \(self.connections) connection(s)
              calls     \(self.calls) in \(String(format: "%.2f", self.seconds)) s (\(codes))
              QPS       \(String(format: "%.1f", self.qps))
              p50       \(ms(self.latency.p50Micros))
              p90       \(ms(self.latency.p90Micros))
              p99       \(ms(self.latency.p99Micros))
              p99.9     \(ms(self.latency.p999Micros))
              max       \(ms(self.latency.maxMicros))
            """
                + (self.serverCPUMicrosPerCall.map { String(format: "\n  server CPU %.1f us a call", $0) } ?? "")
    }
}

/// What one measured phase of a benchmark gave.
public struct BenchMeasurement: Sendable {
    public var histogram: Histogram<UInt64>
    /// Calls by how they ended.
    public var codes: [StatusCode: UInt64]
    /// How long the measured phase took.
    public var seconds: Double
    /// The CPU time the process under load spent over the measured phase, when one was named.
    public var serverCPU: Duration?
}

/// Drives `concurrency` callers over one client pool, like ghz: for a duration or a total
/// number of calls, optionally paced to a rate, after a warm-up that is not recorded.
public struct BenchRunner: Sendable {
    public enum Limit: Sendable {
        case duration(Duration)
        case total(Int)

        var isEmpty: Bool {
            switch self {
            case .duration(let duration): duration <= .zero
            case .total(let count): count <= 0
            }
        }
    }

    let client: RPCClient
    /// Where the callers run (see ``makeClient(_:)``); nil: the global pool.
    let executor: EventLoopTaskExecutor?
    let method: String
    /// The serialized request of the call with this sequence number (0, 1, 2, ... over the
    /// warm-up and the measured phase together, so no number is used twice).
    let request: @Sendable (Int) -> Data
    let options: CallOptions
    /// The user a call acts for, when calls act for different users (direct calls only).
    let user: (@Sendable (Int) -> String)?
    let concurrency: Int
    let limit: Limit
    let ratePerSecond: Double?
    let warmup: Limit
    /// The process under load, whose CPU time over the measured phase the report gives per call.
    public var server: ProcessCPUTime?
    private let sequence = BenchCounters()

    public init(
        client: RPCClient,
        executor: EventLoopTaskExecutor?,
        method: String,
        request: @escaping @Sendable (Int) -> Data,
        options: CallOptions,
        user: (@Sendable (Int) -> String)? = nil,
        concurrency: Int,
        limit: Limit,
        ratePerSecond: Double? = nil,
        warmup: Limit
    ) {
        self.client = client
        self.executor = executor
        self.method = method
        self.request = request
        self.user = user
        self.options = options
        self.concurrency = concurrency
        self.limit = limit
        self.ratePerSecond = ratePerSecond
        self.warmup = warmup
    }

    /// Runs the warm-up, then the measured phase; `progress` is told the count of finished
    /// calls about once a second.
    public func run(progress: (@Sendable (UInt64, Double) -> Void)? = nil) async -> BenchMeasurement {
        await withTaskExecutorPreference(self.executor) {
            if !self.warmup.isEmpty {
                _ = await self.phase(limit: self.warmup, progress: nil)
            }
            let cpuBefore = self.server?.read()
            let (histogram, codes, seconds) = await self.phase(limit: self.limit, progress: progress)
            let cpuAfter = self.server?.read()
            let serverCPU: Duration? = if let cpuBefore, let cpuAfter { cpuAfter - cpuBefore } else { nil }
            return BenchMeasurement(histogram: histogram, codes: codes, seconds: seconds, serverCPU: serverCPU)
        }
    }

    /// The client a benchmark drives, and where its callers should run. Over one connection
    /// they run on that connection's event loop: each call is written, and its answer resumes
    /// its caller, without a thread hop (at one call in flight this doubled `hearth bench`'s
    /// QPS). Over several connections the calls spread over the loops and the callers stay on
    /// the global pool.
    public static func makeClient(_ configuration: RPCClient.Configuration) -> (RPCClient, EventLoopTaskExecutor?) {
        guard configuration.connections == 1 else { return (RPCClient(configuration: configuration), nil) }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        return (RPCClient(configuration: configuration, group: loop), EventLoopTaskExecutor(loop: loop))
    }

    private func phase(limit: Limit, progress: (@Sendable (UInt64, Double) -> Void)?) async -> (
        Histogram<UInt64>, [StatusCode: UInt64], Double
    ) {
        let clock = ContinuousClock()
        let start = clock.now
        let shared = BenchCounters()
        let stopAt: ContinuousClock.Instant? = if case .duration(let d) = limit { start + d } else { nil }
        let total: Int? = if case .total(let n) = limit { n } else { nil }

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var codes: [StatusCode: UInt64] = [:]
        await withTaskGroup(of: WorkerResult?.self) { group in
            for _ in 0..<self.concurrency {
                group.addTask {
                    await self.worker(start: start, stopAt: stopAt, total: total, shared: shared)
                }
            }
            if let progress {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        progress(shared.finished.load(ordering: .relaxed), (clock.now - start).seconds)
                    }
                    return nil
                }
            }
            var workersLeft = self.concurrency
            while workersLeft > 0, let result = await group.next() {
                guard let result else { continue }
                workersLeft -= 1
                histogram.add(result.histogram)
                codes.merge(result.codes, uniquingKeysWith: +)
            }
            group.cancelAll()
        }
        return (histogram, codes, (clock.now - start).seconds)
    }

    private struct WorkerResult: Sendable {
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var codes: [StatusCode: UInt64] = [:]
    }

    private func worker(
        start: ContinuousClock.Instant,
        stopAt: ContinuousClock.Instant?,
        total: Int?,
        shared: BenchCounters
    ) async -> WorkerResult {
        let clock = ContinuousClock()
        var result = WorkerResult()
        while !Task.isCancelled {
            let index = shared.issued.wrappingAdd(1, ordering: .relaxed).oldValue
            if let total, index >= total { break }
            if let rate = self.ratePerSecond {
                let due = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
                if let stopAt, due >= stopAt { break }
                try? await Task.sleep(until: due, clock: clock)
            }
            if let stopAt, clock.now >= stopAt { break }
            let number = self.sequence.issued.wrappingAdd(1, ordering: .relaxed).oldValue
            let payload = self.request(number)
            var options = self.options
            if let user = self.user { options.metadata[TrustedMetadata.user] = user(number) }
            let began = clock.now
            let code: StatusCode
            do {
                _ = try await self.client.callRaw(self.method, payload: payload, options: options)
                code = .ok
            } catch {
                code = RPCError(answering: error).code
            }
            let micros = UInt64(max((clock.now - began).microseconds, 0))
            _ = result.histogram.record(min(micros, 60_000_000))
            result.codes[code, default: 0] += 1
            shared.finished.wrappingAdd(1, ordering: .relaxed)
        }
        return result
    }
}

/// Counters the workers share.
final class BenchCounters: Sendable {
    let issued = Atomic<Int>(0)
    let finished = Atomic<UInt64>(0)
}

extension BenchRunner {
    /// Runs the calls on one connection, closes `client`, prints (and with `json` writes) the
    /// report named `method`; fails when any call failed, so scripts notice.
    public func runAndReport(method: String, target: Target, concurrency: Int, json: String?, client: RPCClient)
        async throws
    {
        let measured = await self.run()
        await client.close()
        let report = BenchReport(
            method: method,
            target: target.description,
            concurrency: concurrency,
            connections: 1,
            measured: measured
        )
        try report.emit(json: json)
        guard report.codes.keys.allSatisfy({ $0 == "OK" }) else {
            throw CommandFailure("some calls failed: \(report.codes)")
        }
    }
}
