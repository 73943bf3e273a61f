import Foundation
import HearthRPC
import Histogram

/// How one call of the simulated day went.
struct CallOutcome: Sendable {
    var call: SimulatedCall
    /// The simulated hour it was due in.
    var hour: Int
    /// How long after its due moment it started (the replay falling behind), in microseconds.
    var lateMicros: UInt64
    var latencyMicros: UInt64
    var code: StatusCode
}

/// What the replay measured, gathered as calls end; written as JSON for `scripts/simulate-day`.
struct SimulationRecord {
    struct Figures: Codable {
        var calls: UInt64 = 0
        var codes: [String: UInt64] = [:]
        var p50Micros: UInt64 = 0
        var p99Micros: UInt64 = 0
        var maxMicros: UInt64 = 0
        /// From the moment the call was due to its answer: what a user waited, a backlog included
        /// (the figures above time each call from when it started).
        var p99FromDueMicros: UInt64 = 0
    }

    struct Hour: Codable {
        var hour: Int
        /// When the hour began on this machine's clock (seconds since 1970): the script lines up
        /// the processes' CPU samples with it.
        var startedAt: Double
        var calls: Int = 0
        var failed: Int = 0
        var maxLateMillis: Double = 0
    }

    struct Report: Codable {
        var users: Int
        var speedup: Double
        var fromHour: Int
        var hours: Int
        var setupSeconds: Double
        /// Waiting, after setup, for the processes to be quiet.
        var quietSeconds: Double
        var replayStartedAt: Double
        var replaySeconds: Double
        var calls: [String: Figures]
        var perHour: [Hour]
        var lateP99Millis: Double
        var lateMaxMillis: Double
        var failed: Int
    }

    private var latency: [SimulatedCall: Histogram<UInt64>] = [:]
    private var fromDue: [SimulatedCall: Histogram<UInt64>] = [:]
    private var codes: [SimulatedCall: [StatusCode: UInt64]] = [:]
    private var late = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    private var hours: [Int: Hour]

    init(fromHour: Int, hours: Int, startedAt: Date, speedup: Double) {
        self.hours = Dictionary(
            uniqueKeysWithValues: (fromHour..<(fromHour + hours)).map { hour in
                let offset = Double((hour - fromHour) * 3600) / speedup
                return (hour, Hour(hour: hour, startedAt: startedAt.timeIntervalSince1970 + offset))
            }
        )
    }

    mutating func add(_ outcome: CallOutcome) {
        _ = self.latency[outcome.call, default: Self.histogram()].record(min(outcome.latencyMicros, 60_000_000))
        let waited = outcome.lateMicros + outcome.latencyMicros
        _ = self.fromDue[outcome.call, default: Self.histogram()].record(min(waited, 60_000_000))
        self.codes[outcome.call, default: [:]][outcome.code, default: 0] += 1
        _ = self.late.record(min(outcome.lateMicros, 3_600_000_000))
        self.hours[outcome.hour]?.calls += 1
        if outcome.code != .ok { self.hours[outcome.hour]?.failed += 1 }
        let lateMillis = Double(outcome.lateMicros) / 1000
        if lateMillis > self.hours[outcome.hour]?.maxLateMillis ?? .infinity {
            self.hours[outcome.hour]?.maxLateMillis = lateMillis
        }
    }

    private static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    }

    var failed: Int { self.hours.values.reduce(0) { $0 + $1.failed } }

    func report(
        users: Int,
        speedup: Double,
        fromHour: Int,
        hours: Int,
        setupSeconds: Double,
        quietSeconds: Double,
        replayStartedAt: Date,
        replaySeconds: Double
    ) -> Report {
        var calls: [String: Figures] = [:]
        for (call, histogram) in self.latency {
            calls[call.rawValue] = Figures(
                calls: histogram.totalCount,
                codes: Dictionary(uniqueKeysWithValues: (self.codes[call] ?? [:]).map { ($0.key.name, $0.value) }),
                p50Micros: histogram.valueAtPercentile(50),
                p99Micros: histogram.valueAtPercentile(99),
                maxMicros: histogram.max,
                p99FromDueMicros: self.fromDue[call]?.valueAtPercentile(99) ?? 0
            )
        }
        return Report(
            users: users,
            speedup: speedup,
            fromHour: fromHour,
            hours: hours,
            setupSeconds: setupSeconds,
            quietSeconds: quietSeconds,
            replayStartedAt: replayStartedAt.timeIntervalSince1970,
            replaySeconds: replaySeconds,
            calls: calls,
            perHour: self.hours.values.sorted { $0.hour < $1.hour },
            lateP99Millis: Double(self.late.valueAtPercentile(99)) / 1000,
            lateMaxMillis: Double(self.late.totalCount > 0 ? self.late.max : 0) / 1000,
            failed: self.failed
        )
    }
}

extension SimulationRecord.Report {
    /// The report for people: a line a call kind, then one an hour.
    var text: String {
        func ms(_ micros: UInt64) -> String { String(format: "%.1f ms", Double(micros) / 1000) }
        var lines = [
            "\(self.users) users, hours \(self.fromHour)-\(self.fromHour + self.hours) at \(self.speedup)x: "
                + String(
                    format: "setup %.1f s (then %.1f s waiting for quiet), replay %.1f s, ",
                    self.setupSeconds,
                    self.quietSeconds,
                    self.replaySeconds
                )
                + String(format: "started late p99 %.1f ms, max %.1f ms; ", self.lateP99Millis, self.lateMaxMillis)
                + "\(self.failed) failed"
        ]
        for (name, figures) in self.calls.sorted(by: { $0.key < $1.key }) {
            let codes = figures.codes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append(
                "  \(name): \(figures.calls) (\(codes)), p50 \(ms(figures.p50Micros)), p99 \(ms(figures.p99Micros)), "
                    + "max \(ms(figures.maxMicros)); p99 from its due moment \(ms(figures.p99FromDueMicros))"
            )
        }
        for hour in self.perHour {
            let late = String(format: "%.1f", hour.maxLateMillis)
            lines.append(
                "  hour \(String(format: "%02d", hour.hour)): \(hour.calls) calls, \(hour.failed) failed, "
                    + "started late at most \(late) ms"
            )
        }
        return lines.joined(separator: "\n")
    }
}
