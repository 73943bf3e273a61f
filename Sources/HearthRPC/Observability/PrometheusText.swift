import Histogram

/// What one process reports to Prometheus.
public struct ProcessMetrics: Sendable {
    public var process: String
    public var methods: [String: MethodMetrics.Snapshot]
    public var callsInFlight: Int
    public var openConnections: Int

    public init(process: String, methods: [String: MethodMetrics.Snapshot], callsInFlight: Int, openConnections: Int) {
        self.process = process
        self.methods = methods
        self.callsInFlight = callsInFlight
        self.openConnections = openConnections
    }
}

/// Renders metrics in Prometheus' text exposition format (version 0.0.4): calls by method and
/// code, latency quantiles by method, calls in flight and open connections, each labelled with
/// its process.
public func prometheusText(_ processes: [ProcessMetrics]) -> String {
    var out = ""
    func family(_ name: String, _ type: String, _ help: String, _ lines: [String]) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for line in lines { out += line + "\n" }
    }
    let sorted = processes.sorted { $0.process < $1.process }
    family(
        "hearth_calls_total",
        "counter",
        "Calls finished, by process, method and status code.",
        sorted.flatMap { process in
            process.methods.sorted { $0.key < $1.key }.flatMap { method, snapshot in
                snapshot.countsByCode.sorted { $0.key.rawValue < $1.key.rawValue }.map { code, count in
                    "hearth_calls_total{\(labels(process.process, method)),code=\"\(code.name)\"} \(count)"
                }
            }
        }
    )
    family(
        "hearth_call_duration_seconds",
        "summary",
        "Call latency, by process and method.",
        sorted.flatMap { process in
            process.methods.sorted { $0.key < $1.key }.flatMap { method, snapshot in
                let histogram = snapshot.latencyMicros
                let base = labels(process.process, method)
                let quantiles = [0.5, 0.9, 0.99, 0.999].map { q in
                    "hearth_call_duration_seconds{\(base),quantile=\"\(q)\"} \(seconds(histogram.valueAtPercentile(q * 100)))"
                }
                let count = histogram.totalCount
                let sum = histogram.mean * Double(count) / 1_000_000
                return quantiles + [
                    "hearth_call_duration_seconds_sum{\(base)} \(sum)",
                    "hearth_call_duration_seconds_count{\(base)} \(count)",
                ]
            }
        }
    )
    family(
        "hearth_calls_in_flight",
        "gauge",
        "Calls being served right now.",
        sorted.map { "hearth_calls_in_flight{process=\"\(escape($0.process))\"} \($0.callsInFlight)" }
    )
    family(
        "hearth_connections_open",
        "gauge",
        "Open client connections.",
        sorted.map { "hearth_connections_open{process=\"\(escape($0.process))\"} \($0.openConnections)" }
    )
    return out
}

private func labels(_ process: String, _ method: String) -> String {
    "process=\"\(escape(process))\",method=\"\(escape(method))\""
}

private func seconds(_ micros: UInt64) -> Double {
    Double(micros) / 1_000_000
}

/// Label values escape backslash, double quote and line feed (the format's three). Scalar by
/// scalar: as Characters, CR LF is one, which matched none and went out raw, ending the line.
private func escape(_ value: String) -> String {
    var escaped = ""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\\": escaped += "\\\\"
        case "\"": escaped += "\\\""
        case "\n": escaped += "\\n"
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped
}
