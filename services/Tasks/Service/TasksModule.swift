public import HearthPush
public import HearthRPC
import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging

extension TasksService {
    /// The tasks process's module: Tasks and Activities on one store, the prompts' and the
    /// housekeeping's schedulers, the push outbox's deliverer (through `pushSender`) and the
    /// relay's (activity forwarded to `safety` with `credential`).
    public static func module(
        location: StoreLocation,
        pushSender: any PushSender,
        safety: RPCClient,
        credential: String,
        logger: Logger
    ) throws -> ServiceModule {
        let tasks = try TasksService(location: location, logger: logger)
        return ServiceModule(
            services: [tasks, ActivitiesService(sharingStoreOf: tasks)],
            // The push deliverer first: a group stops its services in reverse order, so it stops
            // after the prompt scheduler whose pushes it sends.
            work: [tasks.outbox.deliverer(sender: pushSender, logger: logger)] + tasks.schedulers + [
                tasks.relay.deliverer(client: safety, credential: credential, logger: logger)
            ]
        )
    }
}
