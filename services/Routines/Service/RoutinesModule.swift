public import HearthRPC
import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging

extension RoutinesService {
    /// The routines process's module: the service (asking `roles` who may do what) and its
    /// relay's deliverer (activity forwarded to `safety` with `credential`).
    public static func module(
        location: StoreLocation,
        roles: any NestRoleSource,
        safety: RPCClient,
        credential: String,
        logger: Logger
    ) throws -> ServiceModule {
        let routines = try RoutinesService(location: location, roles: roles)
        return ServiceModule(
            services: [routines],
            work: [routines.relay.deliverer(client: safety, credential: credential, logger: logger)]
        )
    }
}
