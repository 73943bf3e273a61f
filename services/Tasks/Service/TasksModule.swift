public import HearthPush
public import HearthRPC
import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging

extension TasksService {
    /// The credentials of the tasks process's links to the services it calls.
    public struct PeerCredentials: Sendable {
        public var checkins: String
        public var routines: String
        public var safety: String

        public init(checkins: String, routines: String, safety: String) {
            self.checkins = checkins
            self.routines = routines
            self.safety = safety
        }
    }

    /// The tasks process's module: Tasks, Activities and Account on one store, the prompts' and
    /// the housekeeping's schedulers, the push outbox's deliverer (through `pushSender`), the
    /// relay's (activity forwarded to `safety`) and the erasures' worker (asking `checkins`,
    /// `routines` and `safety`), each called with its link's credential.
    public static func module(
        location: StoreLocation,
        pushSender: any PushSender,
        safety: RPCClient,
        checkins: RPCClient,
        routines: RPCClient,
        credentials: PeerCredentials,
        logger: Logger
    ) throws -> ServiceModule {
        let tasks = try TasksService(location: location, logger: logger)
        let account = AccountService(
            sharingStoreOf: tasks,
            peers: AccountPeers(checkins: checkins, routines: routines, safety: safety, credentials: credentials)
        )
        let eraser = account.eraser(logger: logger)
        return ServiceModule(
            services: [tasks, ActivitiesService(sharingStoreOf: tasks), account],
            // The push deliverer first: a group stops its services in reverse order, so it stops
            // after the prompt scheduler whose pushes it sends.
            work: [tasks.outbox.deliverer(sender: pushSender, logger: logger)] + tasks.schedulers + [
                tasks.relay.deliverer(client: safety, credential: credentials.safety, logger: logger), eraser,
            ]
        )
    }
}
