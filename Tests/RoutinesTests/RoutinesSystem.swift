import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthRelay
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService
@testable import RoutinesService

/// Routines over an in-memory store, asking a real checkins server (over RPC, with the
/// internal credential) for roles; both on one clock the test moves.
struct System {
    static let secret = "routines-test-internal-credential-0123456789"
    /// 2026-03-10 12:00 UTC: 20:00 in Taipei, 05:00 in Los Angeles.
    static let start = Date(timeIntervalSince1970: 1_773_144_000)

    let clock: ManualClock
    let checkins: CheckinsService
    let routines: RoutinesService
    let roles: CachedNestRoles

    /// Runs `body` while the checkins server is up.
    static func with<T>(start: Date = Self.start, _ body: (System) async throws -> T) async throws -> T {
        let clock = ManualClock(start)
        let checkins = try CheckinsService(location: .inMemory, clock: clock)
        return try await withServer(
            configuration: ServerConfiguration(callers: .anyMethod(Self.secret)),
            services: [checkins]
        ) { _, port in
            let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
            let roles = CachedNestRoles(
                // Not 2 s: on two cores shared by every suite a call can wait that long for a thread.
                source: CheckinsNestRoles(client: client, internalCredential: Self.secret, timeout: .seconds(15)),
                clock: clock
            )
            let system = System(
                clock: clock,
                checkins: checkins,
                routines: try RoutinesService(location: .inMemory, roles: roles, clock: clock),
                roles: roles
            )
            do {
                let result = try await body(system)
                await client.close()
                return result
            } catch {
                await client.close()
                throw error
            }
        }
    }

    /// A nest owned by olivia with sam sitting for `hours` from now.
    func nest(hours: Double = 24 * 30) async throws -> (nest: String, session: String) {
        var nestRequest = Hearth_Checkins_V1_CreateNestRequest()
        nestRequest.name = "Home"
        let nest = try await self.checkins.createNest(nestRequest, callContext("olivia"))
        var request = Hearth_Checkins_V1_CreateSessionRequest()
        request.nestID = nest.id
        request.sitterUserID = "sam"
        request.startsAt = Google_Protobuf_Timestamp(date: self.clock.now())
        request.endsAt = Google_Protobuf_Timestamp(date: self.clock.now().addingTimeInterval(hours * 3600))
        request.timeZone = "Asia/Taipei"
        let session = try await self.checkins.createSession(request, callContext("olivia"))
        return (nest.id, session.id)
    }

    func routine(in nest: String, actions: [String] = ["Teeth", "Story", "Lights off"], as user: String = "olivia")
        async throws -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_CreateRoutineRequest()
        request.nestID = nest
        request.title = "Bedtime"
        request.category = "Evening"
        request.actions = actions
        return try await self.routines.createRoutine(request, callContext(user))
    }

    @discardableResult
    func tick(
        _ routine: Hearth_Routines_V1_Routine,
        _ action: Int,
        done: Bool = true,
        zone: String = "Asia/Taipei",
        as user: String = "sam"
    ) async throws -> Hearth_Routines_V1_Progress {
        var request = Hearth_Routines_V1_SetActionDoneRequest()
        request.routineID = routine.id
        request.actionID = routine.actions[action].id
        request.done = done
        request.timeZone = zone
        return try await self.routines.setActionDone(request, callContext(user))
    }

    func progress(
        _ routine: Hearth_Routines_V1_Routine,
        zone: String = "Asia/Taipei",
        date: String = "",
        of user: String = "",
        as caller: String = "sam"
    ) async throws -> Hearth_Routines_V1_Progress {
        var request = Hearth_Routines_V1_GetProgressRequest()
        request.routineID = routine.id
        request.timeZone = zone
        request.date = date
        request.userID = user
        return try await self.routines.getProgress(request, callContext(caller))
    }

    func history(
        _ routine: Hearth_Routines_V1_Routine,
        from: String,
        to: String,
        zone: String = "Asia/Taipei",
        of user: String = "",
        as caller: String = "sam"
    ) async throws -> Hearth_Routines_V1_GetHistoryResponse {
        var request = Hearth_Routines_V1_GetHistoryRequest()
        request.routineID = routine.id
        request.userID = user
        request.fromDate = from
        request.toDate = to
        request.timeZone = zone
        return try await self.routines.getHistory(request, callContext(caller))
    }

    func addAction(_ routine: Hearth_Routines_V1_Routine, _ text: String, as user: String = "olivia") async throws
        -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_AddActionRequest()
        request.routineID = routine.id
        request.text = text
        return try await self.routines.addAction(request, callContext(user))
    }

    func removeAction(_ routine: Hearth_Routines_V1_Routine, _ actionID: String, as user: String = "olivia")
        async throws -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_RemoveActionRequest()
        request.routineID = routine.id
        request.actionID = actionID
        return try await self.routines.removeAction(request, callContext(user))
    }

    func editAction(
        _ routine: Hearth_Routines_V1_Routine,
        _ actionID: String,
        _ text: String,
        as user: String = "olivia"
    ) async throws -> Hearth_Routines_V1_Routine {
        var request = Hearth_Routines_V1_EditActionRequest()
        request.routineID = routine.id
        request.actionID = actionID
        request.text = text
        return try await self.routines.editAction(request, callContext(user))
    }

    /// Sets the clock to a local wall time in `zone`.
    func set(_ local: String, in zone: String) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        self.clock.set(formatter.date(from: local)!)
    }
}
