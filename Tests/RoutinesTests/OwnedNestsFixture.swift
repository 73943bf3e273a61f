import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import Testing

@testable import RoutinesService

/// Roles as the test sets them, with no checkins server: Olivia owns her nest, where Sam sits;
/// Noah owns his, where Olivia sits. EraseUser and ExportUser ask for none.
struct FixedRoles: NestRoleSource {
    let roles: [String: [String: Hearth_Checkins_V1_NestRole]] = [
        OwnedNestsFixture.oliviasNest: ["olivia": .owner, "sam": .sitter],
        OwnedNestsFixture.noahsNest: ["noah": .owner, "olivia": .sitter],
    ]

    func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
        self.roles[nestID]?[userID] ?? Hearth_Checkins_V1_NestRole.none
    }
}

/// Routines over a store at `location`, on a clock that moves only when the test moves it, for
/// the tests of what a user's erasure and export do with the nests they own.
struct OwnedNestsFixture {
    /// Olivia's nest, where Sam sits.
    static let oliviasNest = "nest-olivia"
    /// Noah's nest, where Olivia sits.
    static let noahsNest = "nest-noah"
    /// 2026-03-10 12:00 UTC: 20:00 in Taipei.
    static let start = Date(timeIntervalSince1970: 1_773_144_000)
    static let zone = "Asia/Taipei"

    let clock: ManualClock
    let service: RoutinesService

    init(location: StoreLocation = .inMemory) throws {
        self.clock = ManualClock(Self.start)
        self.service = try RoutinesService(location: location, roles: FixedRoles(), clock: self.clock)
    }

    func routine(_ title: String, in nest: String, actions: [String], as owner: String) async throws
        -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_CreateRoutineRequest()
        request.nestID = nest
        request.title = title
        request.actions = actions
        return try await self.service.createRoutine(request, callContext(owner))
    }

    func get(_ routine: Hearth_Routines_V1_Routine, as user: String) async throws -> Hearth_Routines_V1_Routine {
        var request = Hearth_Routines_V1_GetRoutineRequest()
        request.routineID = routine.id
        return try await self.service.getRoutine(request, callContext(user))
    }

    func removeAction(_ routine: Hearth_Routines_V1_Routine, _ actionID: String, as user: String) async throws
        -> Hearth_Routines_V1_Routine
    {
        var request = Hearth_Routines_V1_RemoveActionRequest()
        request.routineID = routine.id
        request.actionID = actionID
        return try await self.service.removeAction(request, callContext(user))
    }

    func tick(_ routine: Hearth_Routines_V1_Routine, _ action: Int, as user: String, zone: String = Self.zone)
        async throws
    {
        var request = Hearth_Routines_V1_SetActionDoneRequest()
        request.routineID = routine.id
        request.actionID = routine.actions[action].id
        request.done = true
        request.timeZone = zone
        _ = try await self.service.setActionDone(request, callContext(user))
    }

    /// The caller's own progress today.
    func progress(_ routine: Hearth_Routines_V1_Routine, as user: String) async throws -> Hearth_Routines_V1_Progress {
        var request = Hearth_Routines_V1_GetProgressRequest()
        request.routineID = routine.id
        request.timeZone = Self.zone
        return try await self.service.getProgress(request, callContext(user))
    }

    /// Erases `user`, naming `nests` as theirs; answers how many rows went.
    func erase(_ user: String, owning nests: [String]) async throws -> UInt64 {
        var request = Hearth_Routines_V1_EraseUserRequest()
        request.ownedNestIds = nests
        return try await self.service.eraseUser(request, callContext(user)).deleted
    }

    /// How many actions (removed ones too) the store keeps of a routine, and how many ticks of
    /// `user`'s today: read from the store, which still answers for a routine that is gone.
    func stored(_ routine: Hearth_Routines_V1_Routine, ticksOf user: String) async throws -> (
        actions: Int, ticks: Int
    ) {
        let zone = try #require(TimeZone(identifier: Self.zone))
        let today = LocalDate(self.clock.now(), in: zone)
        let (actions, ticks) = try await self.service.store.days(
            routineID: routine.id,
            user: user,
            from: today,
            to: today,
            in: zone
        )
        return (actions.count, ticks.count)
    }

    /// Exports `user`, naming `nests` as theirs.
    func export(_ user: String, owning nests: [String]) async throws -> Hearth_Routines_V1_UserExport {
        var request = Hearth_Routines_V1_ExportUserRequest()
        request.ownedNestIds = nests
        return try await self.service.exportUser(request, callContext(user))
    }
}
