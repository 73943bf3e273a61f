import ArgumentParser
import Foundation

/// The CPU time (user and system) a process on this machine has used so far, read from
/// `/proc/PID/stat` (Linux): a benchmark reports its server's CPU per call beside the QPS, the
/// figure a capacity model is built from (a QPS on two shared cores is not one).
public struct ProcessCPUTime: Sendable {
    public let pid: Int32

    public init(pid: Int32) {
        self.pid = pid
    }

    /// The process's CPU time so far; nil when it cannot be read (gone, or not Linux).
    public func read() -> Duration? {
        guard let text = try? String(contentsOfFile: "/proc/\(self.pid)/stat", encoding: .utf8) else { return nil }
        return Self.parse(stat: text)
    }

    /// utime + stime of a `/proc/PID/stat` line. The command name (field 2) is in parentheses and
    /// may hold spaces and parentheses itself, so the fields are counted after the last `)`: the
    /// state is field 3, utime field 14, stime field 15, in clock ticks.
    static func parse(stat: String, ticksPerSecond: Int = sysconf(Int32(_SC_CLK_TCK))) -> Duration? {
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        return .milliseconds((user + system) * 1000) / ticksPerSecond
    }
}

/// `--server-pid`: the process whose CPU time a benchmark divides by its measured calls.
public struct ServerProcessOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(
        name: .customLong("server-pid"),
        help: """
            The PID of the process under load, on this machine: the report adds its CPU time per \
            measured call (from /proc, over the measured phase only).
            """
    )
    public var pid: Int32?

    /// The clock of the process, when one was named.
    public var process: ProcessCPUTime? { self.pid.map(ProcessCPUTime.init(pid:)) }
}
