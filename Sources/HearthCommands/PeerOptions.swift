import ArgumentParser
import HearthCommandLine
import RoutinesService

/// Where a service finds the services it calls (DESIGN.md: routines asks checkins for roles;
/// checkins, tasks and routines forward activity to safety; tasks asks the others to erase a
/// user's data).
struct PeerOptions: ParsableArguments, Sendable {
    @Option(help: "HOST:PORT of the checkins process (routines asks it who may see a nest).")
    var checkins = Target(host: "127.0.0.1", port: ProcessName.checkins.defaultPort)

    @Option(help: "HOST:PORT of the routines process (tasks asks it to erase a user's routines).")
    var routines = Target(host: "127.0.0.1", port: ProcessName.routines.defaultPort)

    @Option(help: "HOST:PORT of the safety process (checkins, tasks and routines forward activity to it).")
    var safety = Target(host: "127.0.0.1", port: ProcessName.safety.defaultPort)

    @Option(help: "How long routines remembers a role, at most 30s; 0s asks checkins on every call.")
    var roleCache = DurationArgument(CachedNestRoles.defaultLifetime)

    func validate() throws {
        guard self.roleCache.duration <= CachedNestRoles.defaultLifetime else {
            throw ValidationError("--role-cache is at most 30s (a revoked sitter must lose access by then)")
        }
    }
}
