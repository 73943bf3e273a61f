public import Foundation
import HearthCore
public import HearthPostgres
import HearthRPC
public import HearthScheduler
public import HearthStore
public import Logging

extension SafetyService {
    /// The safety process's module: the service and its schedulers (the decider, a sender per
    /// channel, the pruner).
    public static func module(location: StoreLocation, keys: DataKeys, channels: AlertChannels, logger: Logger)
        throws -> ServiceModule
    {
        let safety = try SafetyService(location: location, keys: keys, channels: channels, logger: logger)
        return ServiceModule(services: [safety], work: safety.schedulers)
    }

    /// The safety process's module on PostgreSQL, which several safety processes may share: the
    /// clock is checked against the database's, the database migrated and its keys checked
    /// first; its pool runs before the service.
    /// A claimed message is this process's for ``replicaLease`` (renewed while its send lasts),
    /// then any process's; the schedulers look every ``replicaLookEvery`` at most, for what
    /// another process made due.
    public static func module(
        postgres location: PostgresLocation,
        keys: DataKeys,
        channels: AlertChannels,
        logger: Logger
    ) async throws -> ServiceModule {
        let store = try await PostgresSafetyStore.open(
            location,
            keys: keys,
            product: channels.productName,
            clockTolerance: Self.replicaClockTolerance,
            logger: logger
        )
        let safety = SafetyService(
            store: store,
            channels: channels,
            clock: SystemClock(),
            logger: logger,
            messageDomain: "hearth.local",
            lease: Self.replicaLease,
            lookAtLeastEvery: Self.replicaLookEvery
        )
        return ServiceModule(services: [safety], work: safety.schedulers, foundations: [store.database])
    }

    /// How long a claim on PostgreSQL holds a message from the other processes: a process that
    /// dies while sending delays that message by at most this (plus a look, ``replicaLookEvery``).
    public static let replicaLease: TimeInterval = 30
    /// How far a process's clock may be from the database's for it to start: leases are
    /// compared across machines, and one renewed every third of its 30 s lapses early on a
    /// clock more than 20 s ahead.
    public static let replicaClockTolerance: TimeInterval = 5
    /// How often a process on PostgreSQL looks for work another process made due.
    public static let replicaLookEvery: TimeInterval = 1
}
