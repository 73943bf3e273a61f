import ArgumentParser
import Foundation
import HearthCore
import Logging

/// `--log-level`, shared by the commands that run servers.
public struct LoggingOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(
        name: .long,
        help: """
            trace, debug, info, notice, warning, error or critical. At info every call is \
            logged (method, code, duration, request id). Example: --log-level info
            """
    )
    public var logLevel: LogLevel = .notice

    /// Sends swift-log output to standard error at the chosen level, once per process.
    public func bootstrap() -> Logger {
        let level = self.logLevel.level
        LoggingBootstrap.once {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        var logger = Logger(label: "hearth")
        logger.logLevel = level
        return logger
    }
}

private enum LoggingBootstrap {
    private static let done = NSLock()
    nonisolated(unsafe) private static var bootstrapped = false

    static func once(_ body: () -> Void) {
        done.lock()
        defer { done.unlock() }
        guard !bootstrapped else { return }
        bootstrapped = true
        body()
    }
}

/// swift-log's levels, as a command-line argument.
public enum LogLevel: String, ExpressibleByArgument, CaseIterable, Sendable {
    case trace, debug, info, notice, warning, error, critical

    public var level: Logger.Level { Logger.Level(rawValue: self.rawValue)! }
}

/// `HOST:PORT`.
public struct Target: ExpressibleByArgument, CustomStringConvertible, Sendable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        let host = String(argument[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        self.init(host: host.isEmpty ? "127.0.0.1" : host, port: port)
    }

    public var description: String { "\(self.host):\(self.port)" }
}

/// A duration written as `250ms`, `5s`, `2m` or `1h`.
public struct DurationArgument: ExpressibleByArgument, Sendable, Equatable {
    public var duration: Duration

    public init(_ duration: Duration) {
        self.duration = duration
    }

    public init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, seconds) in units where argument.hasSuffix(suffix) {
            guard let value = Double(argument.dropLast(suffix.count)), value >= 0, value.isFinite else { return nil }
            self.duration = .nanoseconds(Int64(value * seconds * 1e9))
            return
        }
        return nil
    }

    public var seconds: Double { self.duration.seconds }

    /// As it is written: `5s`, `250ms`, `1h` (for `--help`'s defaults).
    public var defaultValueDescription: String {
        let milliseconds = Int64((self.seconds * 1000).rounded())
        for (unit, size) in [("h", Int64(3_600_000)), ("m", 60_000), ("s", 1000)]
        where milliseconds >= size && milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }
}

/// Repeated `--metadata key=value`.
public func parseMetadata(_ pairs: [String]) throws -> [String: String] {
    var metadata: [String: String] = [:]
    for pair in pairs {
        guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
            throw ValidationError("--metadata takes key=value, got '\(pair)'")
        }
        metadata[pair[..<equals].lowercased()] = String(pair[pair.index(after: equals)...])
    }
    return metadata
}
