public import HearthRPC

/// What one service module runs in a process: its RPC services and, beside them, its background
/// work (its own schedulers, its push outbox's deliverer, its relay's), each a `Service` for the
/// process's `ServiceGroup`. Each module builds its own (`CheckinsService.module(...)`, ...),
/// so the process runs exactly what the module says: no piece of work found, or missed, by a
/// downcast.
public struct ServiceModule: Sendable {
    public var services: [any RPCService]
    /// Started in this order and stopped in the reverse: a piece that sends what another
    /// produces comes first.
    public var work: [DueTimeScheduler]

    public init(services: [any RPCService], work: [DueTimeScheduler] = []) {
        self.services = services
        self.work = work
    }
}

extension Array where Element == DueTimeScheduler {
    /// Runs every scheduler until the task is cancelled (tests and probes; a process runs each
    /// as a service of its own).
    public func runAll() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for scheduler in self {
                group.addTask { try await scheduler.run() }
            }
        }
    }
}
