public import HearthRPC
public import ServiceLifecycle

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
    /// What the services and the work need running before them (a database's pool of
    /// connections); started first, stopped last.
    public var foundations: [any Service]

    public init(services: [any RPCService], work: [DueTimeScheduler] = [], foundations: [any Service] = []) {
        self.services = services
        self.work = work
        self.foundations = foundations
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
