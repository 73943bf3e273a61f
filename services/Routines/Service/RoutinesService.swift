import Foundation
import HearthContracts
public import HearthCore
public import HearthRPC
public import HearthRelay
public import HearthStore
import SwiftProtobuf

/// `hearth.routines.v1.Routines`: a nest owner's repeatable checklists, ticked daily by sitters.
///
/// Access comes from the checkins service (`GetNestRole`, cached briefly): OWNER edits, SITTER
/// reads and ticks, anyone else gets NOT_FOUND. When checkins cannot answer, UNAVAILABLE.
public struct RoutinesService: Hearth_Routines_V1_Routines.Handler {
    /// The most bytes of routines a ListRoutines page holds: half a frame.
    static let listBudget = ServerConfiguration.defaultMaxFrameSize / 2
    let store: RoutineStore
    let roles: any NestRoleSource

    /// Opens (and migrates) the service's store. `roles` answers who may do what.
    public init(location: StoreLocation, roles: any NestRoleSource, clock: any WallClock = SystemClock()) throws {
        self.store = try RoutineStore(location: location, clock: clock)
        self.roles = roles
    }

    /// Calls this service owes other services (activity for safety).
    public var relay: Relay { self.store.relay }

    // MARK: Routines

    public func createRoutine(_ request: Hearth_Routines_V1_CreateRoutineRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_Routine
    {
        let user = try context.verifiedUser()
        let role = try await self.role(in: request.nestID, of: user, hidden: .notFound("nest", request.nestID))
        try Self.requireOwner(role)
        let new = try RoutineRules.newRoutine(
            title: request.title,
            category: request.category,
            actions: request.actions
        ).get()
        switch try await self.store.createRoutine(
            nestID: request.nestID,
            title: new.title,
            category: new.category,
            actions: new.actions
        ) {
        case .created(let routine): return routine.message
        case .nestFull:
            throw RPCError(
                .failedPrecondition,
                "a nest has at most \(RoutineRules.maxRoutinesPerNest) routines; delete one first"
            )
        }
    }

    public func getRoutine(_ request: Hearth_Routines_V1_GetRoutineRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_Routine
    {
        try await self.visibleRoutine(request.routineID, to: context.verifiedUser()).routine.message
    }

    public func listRoutines(_ request: Hearth_Routines_V1_ListRoutinesRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_ListRoutinesResponse
    {
        let user = try context.verifiedUser()
        _ = try await self.role(in: request.nestID, of: user, hidden: .notFound("nest", request.nestID))
        let category = request.hasCategory ? try RoutineRules.category(request.category).get() : nil
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, defaultSize: 100, maxSize: 100)
        let rows = try await self.store.routines(
            nestID: request.nestID,
            category: category,
            after: page.after,
            limit: page.limit
        )
        // Texts are counted in characters, not bytes: a page ends early rather than outgrow
        // the frame.
        let (routines, nextToken) = page.page(
            of: rows.map { (record: $0.routine, message: $0.message) },
            cursor: { PageCursor(time: $0.record.createdAt, id: $0.record.id) },
            bytes: { $0.message.encodedSize },
            budget: Self.listBudget
        )
        var response = Hearth_Routines_V1_ListRoutinesResponse()
        response.routines = routines.map(\.message)
        response.nextPageToken = nextToken
        return response
    }

    public func updateRoutine(_ request: Hearth_Routines_V1_UpdateRoutineRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_Routine
    {
        let (routine, role) = try await self.visibleRoutine(request.routineID, to: context.verifiedUser())
        try Self.requireOwner(role)
        let fields = try RoutineRules.newRoutine(title: request.title, category: request.category, actions: []).get()
        guard
            let updated = try await self.store.updateRoutine(
                routine.routine.id,
                title: fields.title,
                category: fields.category
            )
        else { throw RPCError.notFound("routine", request.routineID) }
        return updated.message
    }

    public func deleteRoutine(_ request: Hearth_Routines_V1_DeleteRoutineRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_DeleteRoutineResponse
    {
        let (routine, role) = try await self.visibleRoutine(request.routineID, to: context.verifiedUser())
        try Self.requireOwner(role)
        try await self.store.deleteRoutine(routine.routine.id)
        return Hearth_Routines_V1_DeleteRoutineResponse()
    }

    // MARK: Actions

    public func addAction(_ request: Hearth_Routines_V1_AddActionRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_Routine
    {
        let (routine, role) = try await self.visibleRoutine(request.routineID, to: context.verifiedUser())
        try Self.requireOwner(role)
        let text = try RoutineRules.actionText(request.text).get()
        return try Self.answer(
            await self.store.addAction(routineID: routine.routine.id, text: text),
            request.routineID,
            actionID: nil
        )
    }

    public func removeAction(_ request: Hearth_Routines_V1_RemoveActionRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_Routine
    {
        let (routine, role) = try await self.visibleRoutine(request.routineID, to: context.verifiedUser())
        try Self.requireOwner(role)
        return try Self.answer(
            await self.store.removeAction(routineID: routine.routine.id, actionID: request.actionID),
            request.routineID,
            actionID: request.actionID
        )
    }

    public func editAction(_ request: Hearth_Routines_V1_EditActionRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_Routine
    {
        let (routine, role) = try await self.visibleRoutine(request.routineID, to: context.verifiedUser())
        try Self.requireOwner(role)
        let text = try RoutineRules.actionText(request.text).get()
        return try Self.answer(
            await self.store.editAction(routineID: routine.routine.id, actionID: request.actionID, text: text),
            request.routineID,
            actionID: request.actionID
        )
    }

    private static func answer(_ outcome: RoutineStore.ActionOutcome, _ routineID: String, actionID: String?) throws
        -> Hearth_Routines_V1_Routine
    {
        switch outcome {
        case .changed(let routine): return routine.message
        case .routineMissing: throw RPCError.notFound("routine", routineID)
        case .actionMissing: throw RPCError.notFound("action", actionID ?? "")
        case .full:
            throw RPCError(.failedPrecondition, "a routine has at most \(RoutineRules.maxActions) actions")
        }
    }

    // MARK: Daily completion

    public func setActionDone(_ request: Hearth_Routines_V1_SetActionDoneRequest, _ context: RPCContext)
        async throws -> Hearth_Routines_V1_Progress
    {
        let user = try context.verifiedUser()
        let zone = try FieldChecks.zone(request.timeZone).get()
        let (routine, _) = try await self.visibleRoutine(request.routineID, to: user)
        let today = LocalDate(self.store.now, in: zone)
        guard
            try await self.store.setDone(
                routineID: routine.routine.id,
                actionID: request.actionID,
                user: user,
                date: today,
                done: request.done,
                zone: request.timeZone
            )
        else { throw RPCError.notFound("action", request.actionID) }
        if request.done { self.relay.wake() }
        return try await self.progress(routine.routine.id, user: user, date: today, zone: zone)
    }

    public func getProgress(_ request: Hearth_Routines_V1_GetProgressRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_Progress
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let asked = FieldChecks.zone(request.timeZone).value(collecting: &violations)
        let requested =
            request.date.isEmpty ? nil : FieldChecks.date(request.date, field: "date").value(collecting: &violations)
        guard violations.isEmpty, let asked else { throw RPCError.invalidArgument(violations) }
        let (routineID, subject, zone) = try await self.progressRead(request.routineID, request.userID, user, asked)
        let today = LocalDate(self.store.now, in: zone)
        let date = requested ?? today
        guard date <= today else {
            throw FieldViolation(field: "date", description: "\(date) has not begun yet in \(zone.identifier)")
        }
        return try await self.progress(routineID, user: subject, date: date, zone: zone)
    }

    public func getHistory(_ request: Hearth_Routines_V1_GetHistoryRequest, _ context: RPCContext) async throws
        -> Hearth_Routines_V1_GetHistoryResponse
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let asked = FieldChecks.zone(request.timeZone).value(collecting: &violations)
        let from = FieldChecks.date(request.fromDate, field: "from_date").value(collecting: &violations)
        let to = FieldChecks.date(request.toDate, field: "to_date").value(collecting: &violations)
        guard violations.isEmpty, let asked, let from, let to else { throw RPCError.invalidArgument(violations) }
        guard from <= to else { throw FieldViolation(field: "to_date", description: "is before from_date") }
        guard from.days(to: to) < RoutineRules.maxHistoryDays else {
            throw FieldViolation(field: "to_date", description: "at most \(RoutineRules.maxHistoryDays) days at once")
        }
        let (routineID, subject, zone) = try await self.progressRead(request.routineID, request.userID, user, asked)

        let today = LocalDate(self.store.now, in: zone)
        let streakStart = today.adding(days: -RoutineRules.maxHistoryDays)
        let (actions, completions) = try await self.store.days(
            routineID: routineID,
            user: subject,
            from: min(from, streakStart),
            to: today,
            in: zone
        )
        let lives = actions.map(\.life)
        let doneByDate = Dictionary(grouping: completions, by: \.localDate).mapValues { Set($0.map(\.actionID)) }
        func day(_ date: LocalDate) -> (done: [String], total: Int) {
            RoutineRules.day(date, actions: lives, doneActionIDs: doneByDate[date.description] ?? [], in: zone)
        }

        var response = Hearth_Routines_V1_GetHistoryResponse()
        var date = from
        while date <= min(to, today) {
            let progress = day(date)
            response.days.append(
                .with {
                    $0.date = date.description
                    $0.doneCount = UInt32(progress.done.count)
                    $0.total = UInt32(progress.total)
                }
            )
            date = date.adding(days: 1)
        }
        response.timeZone = zone.identifier
        response.currentStreak = UInt32(
            RoutineRules.streak(today: today) { date in
                let progress = day(date)
                return progress.total > 0 && progress.done.count == progress.total
            }
        )
        return response
    }

    /// A user's progress on one date: the ticks that count that day, and the day's total.
    private func progress(_ routineID: String, user: String, date: LocalDate, zone: TimeZone) async throws
        -> Hearth_Routines_V1_Progress
    {
        let (actions, completions) = try await self.store.days(
            routineID: routineID,
            user: user,
            from: date,
            to: date,
            in: zone
        )
        let day = RoutineRules.day(
            date,
            actions: actions.map(\.life),
            doneActionIDs: Set(completions.map(\.actionID)),
            in: zone
        )
        let counted = Set(day.done)
        var progress = Hearth_Routines_V1_Progress()
        progress.routineID = routineID
        progress.userID = user
        progress.date = date.description
        progress.timeZone = zone.identifier
        progress.done = completions.filter { counted.contains($0.actionID) }.map(\.message)
        progress.doneCount = UInt32(day.done.count)
        progress.total = UInt32(day.total)
        return progress
    }

    // MARK: Access

    /// The caller's role in a nest; when they have none, `hidden` (NOT_FOUND for what they
    /// asked for, as if it did not exist).
    private func role(in nestID: String, of user: String, hidden: @autoclosure () -> RPCError) async throws
        -> Hearth_Checkins_V1_NestRole
    {
        guard !nestID.isEmpty else { throw FieldViolation(field: "nest_id", description: "is required") }
        let role = try await self.roles.role(nestID: nestID, userID: user)
        guard role == .owner || role == .sitter else { throw hidden() }
        return role
    }

    /// A routine the caller may see, with their role in its nest.
    private func visibleRoutine(_ id: String, to user: String) async throws -> (
        routine: RoutineWithActions, role: Hearth_Checkins_V1_NestRole
    ) {
        guard let routine = try await self.store.routine(id) else { throw RPCError.notFound("routine", id) }
        let role = try await self.role(in: routine.routine.nestID, of: user, hidden: .notFound("routine", id))
        return (routine, role)
    }

    private static func requireOwner(_ role: Hearth_Checkins_V1_NestRole) throws {
        guard role == .owner else {
            throw RPCError(.permissionDenied, "only the nest's owner changes its routines; sitters read and tick them")
        }
    }

    /// What a progress read is of: the routine (NOT_FOUND unless the caller may see it), whose
    /// progress (``subject(_:caller:role:)``), and the zone whose days it is read in. That is the
    /// caller's own ask for their own; for another user's, that user's zone (of their tick on
    /// the latest local date they ticked on, read by the store's key), so that the owner sees
    /// the sitter's today wherever each is; the asked zone until they have ticked.
    private func progressRead(_ routineID: String, _ requestedUser: String, _ caller: String, _ asked: TimeZone)
        async throws -> (routineID: String, subject: String, zone: TimeZone)
    {
        let (routine, role) = try await self.visibleRoutine(routineID, to: caller)
        let subject = try Self.subject(requestedUser, caller: caller, role: role)
        guard subject != caller,
            let latest = try await self.store.latestZone(routineID: routine.routine.id, user: subject),
            let zone = TimeZone(iana: latest)
        else { return (routine.routine.id, subject, asked) }
        return (routine.routine.id, subject, zone)
    }

    /// Whose progress a call reads: the owner may name anyone; a sitter only themselves.
    private static func subject(_ requested: String, caller: String, role: Hearth_Checkins_V1_NestRole) throws
        -> String
    {
        if requested.isEmpty || requested == caller { return caller }
        guard role == .owner else {
            throw RPCError(.permissionDenied, "a sitter reads only their own progress")
        }
        return requested
    }
}
