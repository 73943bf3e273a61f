public import Foundation
import HearthCore
public import Logging

/// Keeps a store from growing without end: once an `interval` of the service's clock it runs
/// `prune`, which deletes the history no rule reads any more and answers how many rows went,
/// by kind. The first pass comes an interval after `start` (a process starting has due work to
/// catch up on first); a pass that fails waits for the next interval rather than starting over
/// every second. Run by a scheduler of its own, so that a long pass never holds back due work.
public struct Housekeeping: DueWork {
    private let gate: IntervalGate
    private let logger: Logger
    private let prune: @Sendable (Date) async throws -> [String: Int]

    public init(
        interval: TimeInterval = 3600,
        start: Date,
        logger: Logger,
        prune: @escaping @Sendable (Date) async throws -> [String: Int]
    ) {
        self.gate = IntervalGate(interval: interval, lastRun: start)
        self.logger = logger
        self.prune = prune
    }

    public func nextDueTime() async throws -> Date? {
        self.gate.nextRun
    }

    /// Runs whenever its scheduler is woken; prunes only when an interval has passed.
    public func runDue(now: Date) async throws {
        guard self.gate.admits(now: now) else { return }
        let deleted = try await self.prune(now)
        if deleted.values.contains(where: { $0 > 0 }) {
            self.logger.info("old history deleted", metadata: deleted.mapValues { "\($0)" })
        }
    }
}
