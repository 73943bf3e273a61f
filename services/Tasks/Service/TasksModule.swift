public import HearthPush
public import HearthRPC
import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging

extension TasksService {
    /// The tasks process's module: Tasks, Activities and Account on one store, the prompts' and
    /// the housekeeping's schedulers, the push outbox's deliverer (through `pushSender`), the
    /// relay's (activity forwarded to `safety` with `credential`) and the erasures' worker
    /// (asking `checkins`, `routines` and `safety`).
    public static func module(
        location: StoreLocation,
        pushSender: any PushSender,
        safety: RPCClient,
        checkins: RPCClient,
        routines: RPCClient,
        credential: String,
        logger: Logger
    ) throws -> ServiceModule {
        let tasks = try TasksService(location: location, logger: logger)
        let account = AccountService(
            sharingStoreOf: tasks,
            peers: AccountPeers(checkins: checkins, routines: routines, safety: safety, credential: credential)
        )
        let eraser = account.eraser(logger: logger)
        return ServiceModule(
            services: [tasks, ActivitiesService(sharingStoreOf: tasks), account],
            // The push deliverer first: a group stops its services in reverse order, so it stops
            // after the prompt scheduler whose pushes it sends.
            work: [tasks.outbox.deliverer(sender: pushSender, logger: logger)] + tasks.schedulers + [
                tasks.relay.deliverer(client: safety, credential: credential, logger: logger), eraser,
            ]
        )
    }
}
