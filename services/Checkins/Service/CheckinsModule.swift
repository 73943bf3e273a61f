public import HearthPush
public import HearthRPC
import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging

extension CheckinsService {
    /// The checkins process's module: the service, its push outbox's deliverer (pushes through
    /// `pushSender`), its relay's (activity forwarded to `safety` with `credential`) and its
    /// housekeeping (erased nests forgotten after 30 days).
    public static func module(
        location: StoreLocation,
        pushSender: any PushSender,
        safety: RPCClient,
        credential: String,
        logger: Logger
    ) throws -> ServiceModule {
        let service = try CheckinsService(location: location)
        return ServiceModule(
            services: [service],
            work: [
                service.outbox.deliverer(sender: pushSender, logger: logger),
                service.relay.deliverer(client: safety, credential: credential, logger: logger),
                service.housekeeping(logger: logger),
            ]
        )
    }
}
