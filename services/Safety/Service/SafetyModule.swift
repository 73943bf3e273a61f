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
}
