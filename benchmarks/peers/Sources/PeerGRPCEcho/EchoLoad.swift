import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import Histogram
import SwiftProtobuf

/// What the callers saw: latencies in nanoseconds of the calls that finished inside the measured
/// window, and every failed call, warm-up included.
struct EchoStats: Sendable {
    var latencyNanos = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    var calls: UInt64 = 0
    var errors: UInt64 = 0
    var firstError: String?

    mutating func merge(_ other: EchoStats) {
        self.latencyNanos.add(other.latencyNanos)
        self.calls += other.calls
        self.errors += other.errors
        self.firstError = self.firstError ?? other.firstError
    }
}

/// Closed-loop load: `concurrency` callers, each sending its next call when the last one answers.
struct EchoLoad: Sendable {
    /// A call that has not answered by then fails, so that a stuck server cannot hang the run.
    static let callTimeout = Duration.seconds(10)

    let payload: Data
    let concurrency: Int

    func run(
        on client: GRPCClient<HTTP2ClientTransport.Posix>,
        warmup: Duration,
        measured: Duration
    ) async -> EchoStats {
        let start = ContinuousClock.now + warmup
        let window = start..<(start + measured)
        return await withTaskGroup(of: EchoStats.self) { group in
            for _ in 0..<self.concurrency {
                group.addTask { await self.caller(on: client, window: window) }
            }
            var total = EchoStats()
            for await stats in group { total.merge(stats) }
            return total
        }
    }

    private func caller(
        on client: GRPCClient<HTTP2ClientTransport.Posix>,
        window: Range<ContinuousClock.Instant>
    ) async -> EchoStats {
        let request = ClientRequest(message: Hearth_Echo_V1_EchoRequest.with { $0.payload = self.payload })
        var options = CallOptions.defaults
        options.timeout = Self.callTimeout
        var stats = EchoStats()
        while ContinuousClock.now < window.upperBound {
            let began = ContinuousClock.now
            do {
                let response = try await client.unary(
                    request: request,
                    descriptor: EchoMethod.descriptor,
                    serializer: EchoMethod.requestSerializer,
                    deserializer: EchoMethod.responseDeserializer,
                    options: options
                ) { try $0.message }
                guard response.payload == self.payload else { throw EchoMismatch() }
            } catch {
                stats.errors += 1
                stats.firstError = stats.firstError ?? "\(error)"
                continue
            }
            let finished = ContinuousClock.now
            guard window.contains(finished) else { continue }
            stats.calls += 1
            stats.latencyNanos.record(UInt64((finished - began).nanoseconds))
        }
        return stats
    }
}

struct EchoMismatch: Error, CustomStringConvertible {
    var description: String { "the response payload differs from the request's" }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
