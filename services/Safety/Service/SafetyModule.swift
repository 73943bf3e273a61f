public import Foundation
public import HearthCore
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
    /// database is migrated and its keys checked first; its pool runs before the service.
    /// - Parameter lease: how long a claimed message is this process's before another may send it.
    public static func module(
        postgres location: PostgresLocation,
        keys: DataKeys,
        channels: AlertChannels,
        lease: TimeInterval = 10 * 60,
        logger: Logger
    ) async throws -> ServiceModule {
        let store = try await PostgresSafetyStore.open(
            location,
            keys: keys,
            product: channels.productName,
            logger: logger
        )
        let safety = SafetyService(
            store: store,
            channels: channels,
            clock: SystemClock(),
            logger: logger,
            messageDomain: "hearth.local",
            lease: lease
        )
        return ServiceModule(services: [safety], work: safety.schedulers, foundations: [store.database])
    }
}
