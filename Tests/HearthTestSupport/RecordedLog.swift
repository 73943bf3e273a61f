public import Logging
import Synchronization

/// What a logger was told, for tests that check a warning is logged.
public final class RecordedLog: Sendable {
    public struct Entry: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// A logger that records everything at `level` and above here.
    public func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "recorded") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    public var all: [Entry] { self.entries.withLock { $0 } }

    fileprivate func append(_ entry: Entry) {
        self.entries.withLock { $0.append(entry) }
    }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = self.metadata.merging(event.metadata ?? [:]) { $1 }
            self.log.append(
                Entry(
                    level: event.level,
                    message: "\(event.message)",
                    metadata: merged.mapValues { "\($0)" }
                )
            )
        }
    }
}
