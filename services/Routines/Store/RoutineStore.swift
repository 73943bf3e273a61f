import Foundation
import GRDB
import HearthCore
import HearthRelay
import HearthStore

/// The routines service's SQLite store. Each invariant is kept inside one write transaction.
struct RoutineStore: Sendable {
    let base: Store
    /// Activity forwarded to safety, recorded with each tick.
    let relay: Relay

    init(location: StoreLocation, clock: any WallClock = SystemClock()) throws {
        self.base = try Store(location: location, migrator: RoutineMigrations.migrator, clock: clock)
        self.relay = Relay(store: self.base)
    }

    /// The time now, as the store keeps dates (to the millisecond).
    var now: Date { self.base.now }

    // MARK: Routines

    enum CreateOutcome: Sendable {
        case created(RoutineWithActions)
        case nestFull
    }

    /// Creates a routine with its actions, unless the nest already has the most it may.
    func createRoutine(nestID: String, title: String, category: String, actions: [String]) async throws
        -> CreateOutcome
    {
        let now = self.now
        let routine = RoutineRecord(
            id: UUID().uuidString.lowercased(),
            nestID: nestID,
            title: title,
            category: category,
            createdAt: now,
            updatedAt: now
        )
        let records = actions.enumerated().map { position, text in
            ActionRecord(
                id: UUID().uuidString.lowercased(),
                routineID: routine.id,
                text: text,
                position: position,
                createdAt: now,
                removedAt: nil
            )
        }
        return try await self.base.write { db in
            let count = try RoutineRecord.filter(RoutineRecord.Columns.nestID == nestID).fetchCount(db)
            guard count < RoutineRules.maxRoutinesPerNest else { return .nestFull }
            try routine.insert(db)
            for action in records { try action.insert(db) }
            return .created(RoutineWithActions(routine: routine, actions: records))
        }
    }

    func routine(_ id: String) async throws -> RoutineWithActions? {
        try self.base.read { db in try Self.routine(id, in: db) }
    }

    /// A nest's routines (in one folder when `category` is given), oldest first.
    /// A page of a nest's routines (of `category`, when given) by creation, with their current
    /// actions: after `cursor`, at most `limit`.
    func routines(nestID: String, category: String?, after cursor: PageCursor?, limit: Int) async throws
        -> [RoutineWithActions]
    {
        try self.base.read { db in
            let routines = try db.fetchPage(
                "SELECT id, nest_id, title, category, created_at, updated_at FROM routine",
                where: category == nil ? "nest_id = ?" : "nest_id = ? AND category = ?",
                arguments: StatementArguments(category.map { [nestID, $0] } ?? [nestID]),
                orderedBy: "created_at",
                descending: false,
                after: cursor,
                limit: limit
            ) { columns in
                RoutineRecord(
                    id: try columns.value(0),
                    nestID: try columns.value(1),
                    title: try columns.value(2),
                    category: try columns.value(3),
                    createdAt: try columns.date(4),
                    updatedAt: try columns.date(5)
                )
            }
            let actions = try ActionRecord.all().current(of: routines.map(\.id)).fetchAll(db)
            let byRoutine = Dictionary(grouping: actions, by: \.routineID)
            return routines.map { RoutineWithActions(routine: $0, actions: byRoutine[$0.id] ?? []) }
        }
    }

    func updateRoutine(_ id: String, title: String, category: String) async throws -> RoutineWithActions? {
        let now = self.now
        return try await self.base.write { db in
            guard var routine = try RoutineRecord.fetchOne(db, cachedKey: id) else { return nil }
            routine.title = title
            routine.category = category
            routine.updatedAt = now
            try routine.update(db)
            return try Self.routine(id, in: db)
        }
    }

    /// Deletes a routine with its actions and every completion of them.
    func deleteRoutine(_ id: String) async throws {
        _ = try await self.base.write { db in try RoutineRecord.deleteOne(db, key: id) }
    }

    // MARK: Actions

    enum ActionOutcome: Sendable {
        case changed(RoutineWithActions)
        case routineMissing
        case actionMissing
        case full
    }

    /// Appends an action, unless the routine has its 10.
    func addAction(routineID: String, text: String) async throws -> ActionOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard var routine = try RoutineRecord.fetchOne(db, cachedKey: routineID) else { return .routineMissing }
            let active = try Self.activeActions(routineID, in: db)
            guard active.count < RoutineRules.maxActions else { return .full }
            let last =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT MAX(position) FROM action WHERE routine_id = ?"),
                    arguments: [routineID]
                )
                ?? -1
            let action = ActionRecord(
                id: UUID().uuidString.lowercased(),
                routineID: routineID,
                text: text,
                position: last + 1,
                createdAt: now,
                removedAt: nil
            )
            try action.insert(db)
            routine.updatedAt = now
            try routine.update(db)
            return .changed(RoutineWithActions(routine: routine, actions: active + [action]))
        }
    }

    /// Removes an action from now on: past days keep it in their counts.
    func removeAction(routineID: String, actionID: String) async throws -> ActionOutcome {
        let now = self.now
        return try await self.changeAction(routineID: routineID, actionID: actionID) { $0.removedAt = now }
    }

    /// Changes a current action's text; its id, position and ticks stay.
    func editAction(routineID: String, actionID: String, text: String) async throws -> ActionOutcome {
        try await self.changeAction(routineID: routineID, actionID: actionID) { $0.text = text }
    }

    /// Applies `change` to a current action of the routine, which is then updated now.
    private func changeAction(
        routineID: String,
        actionID: String,
        _ change: @escaping @Sendable (inout ActionRecord) -> Void
    ) async throws -> ActionOutcome {
        let now = self.now
        return try await self.base.write { db in
            guard var routine = try RoutineRecord.fetchOne(db, cachedKey: routineID) else { return .routineMissing }
            guard var action = try ActionRecord.fetchOne(db, cachedKey: actionID), action.routineID == routineID,
                action.removedAt == nil
            else { return .actionMissing }
            change(&action)
            try action.update(db)
            routine.updatedAt = now
            try routine.update(db)
            return .changed(RoutineWithActions(routine: routine, actions: try Self.activeActions(routineID, in: db)))
        }
    }

    // MARK: Completions

    /// Records (or clears) `user`'s tick of an action on `date`; repeating it changes nothing.
    /// Answers false when the action is not a current action of the routine.
    func setDone(
        routineID: String,
        actionID: String,
        user: String,
        date: LocalDate,
        done: Bool,
        zone: String
    ) async throws -> Bool {
        let now = self.now
        return try await self.base.write { db in
            guard let action = try ActionRecord.fetchOne(db, cachedKey: actionID), action.routineID == routineID,
                action.removedAt == nil
            else { return false }
            if done {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO completion (routine_id, action_id, user_id, local_date, done_at, time_zone)
                        VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT DO NOTHING
                        """
                ).execute(arguments: [routineID, actionID, user, date.description, now, zone])
                if db.changesCount > 0 {
                    // A tick is a sign of life: safety counts it when the user opted in.
                    try Relay.forwardActivity(
                        source: "routines",
                        eventID: "\(routineID):\(actionID):\(date)",
                        user: user,
                        at: now,
                        in: db
                    )
                }
            } else {
                try db.cachedStatement(
                    sql:
                        "DELETE FROM completion WHERE routine_id = ? AND user_id = ? AND local_date = ? AND action_id = ?"
                ).execute(arguments: [routineID, user, date.description, actionID])
            }
            return true
        }
    }

    /// The actions the routine had on any day from `from` to `to` in `zone` (removed ones too,
    /// unless removed before `from` began: an owner who adds and removes actions for years does
    /// not make every read longer) and `user`'s ticks on those days: what a day's progress is
    /// computed from, read together.
    func days(routineID: String, user: String, from: LocalDate, to: LocalDate, in zone: TimeZone) async throws -> (
        actions: [ActionRecord], completions: [CompletionRecord]
    ) {
        let fromStart = from.start(in: zone)
        return try self.base.read { db in
            let actions = try ActionRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM "action" WHERE routine_id = ? AND (removed_at IS NULL OR removed_at >= ?)
                        ORDER BY position
                        """
                ),
                arguments: [routineID, fromStart]
            )
            let completions = try CompletionRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM completion
                        WHERE routine_id = ? AND user_id = ? AND local_date BETWEEN ? AND ?
                        ORDER BY done_at
                        """
                ),
                arguments: [routineID, user, from.description, to.description]
            )
            return (actions, completions)
        }
    }

    /// The zone of `user`'s tick on the latest local date they ticked on (the latest by that
    /// date, then by time: read along the table's key), if any.
    func latestZone(routineID: String, user: String) async throws -> String? {
        try self.base.read { db in
            try String.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT time_zone FROM completion WHERE routine_id = ? AND user_id = ?
                        ORDER BY local_date DESC, done_at DESC LIMIT 1
                        """
                ),
                arguments: [routineID, user]
            )
        }
    }

    // MARK: Queries in a transaction

    private static func routine(_ id: String, in db: Database) throws -> RoutineWithActions? {
        guard let routine = try RoutineRecord.fetchOne(db, cachedKey: id) else { return nil }
        return RoutineWithActions(routine: routine, actions: try Self.activeActions(id, in: db))
    }

    private static func activeActions(_ routineID: String, in db: Database) throws -> [ActionRecord] {
        try ActionRecord.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM \"action\" WHERE routine_id = ? AND removed_at IS NULL ORDER BY position"
            ),
            arguments: [routineID]
        )
    }
}
