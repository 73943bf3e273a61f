import Foundation
import GRDB
import HearthStore

// An account export's part in routines (hearth.account.v1): the user's nests' routines, with
// their current actions and those removed from them (kept for past days' counts and the ticks
// of them), and their own ticks anywhere: the rows an erasure deletes but for the calls queued
// for them (forwards to safety in `relay_outbox`, which are the service's working state, not the
// user's to read).
extension RoutineStore {
    /// What routines holds about a user, as the store keeps it.
    struct UserRows: Sendable, Equatable {
        /// The routines of the nests they own, with their current actions, by creation (as
        /// ListRoutines orders them: `created_at`, then id).
        var routines: [RoutineWithActions]
        /// Their own ticks, in any nest, by `done_at`.
        var ticks: [CompletionRecord]
        /// The actions removed from those routines (each with its `removedAt`), by when each was
        /// removed, then by routine, then in the routine's order.
        var removedActions: [ActionRecord]
    }

    /// A nest's routines by creation, the nest's id bound: along routine_nest.
    private static let nestRoutines = "SELECT * FROM routine WHERE nest_id = ? ORDER BY created_at, id"

    /// Every action of a nest's routines, removed ones too, each routine's in their order, the
    /// nest's id bound: its routines along routine_nest, their actions along action_order.
    private static let nestActions = """
        SELECT a.* FROM "action" AS a JOIN routine AS r ON r.id = a.routine_id
        WHERE r.nest_id = ?
        ORDER BY a.routine_id, a.position
        """

    /// A user's ticks anywhere by when they were made (then along the table's key, for a stable
    /// order), their id bound. The table is not indexed by user: the statement reads all of it,
    /// once an export.
    private static let userTicks = """
        SELECT * FROM completion WHERE user_id = ?
        ORDER BY done_at, routine_id, local_date, action_id
        """

    /// The routines of `ownedNests` (each nest once, however often named) with their current
    /// actions, by creation across the nests, the actions removed from them, by when removed,
    /// and `user`'s ticks in any nest, by `done_at`; in one read transaction, so that they
    /// agree. Empty when there is nothing.
    ///
    /// On a reader thread (``Store/longRead(_:)``), not the caller's event loop: the ticks'
    /// statement reads the whole completion table, and 1,000 nests make 2,000 statements more.
    /// Nest by nest, one bound value a statement: 1,000 nests do not run into SQLite's limit on
    /// variables.
    /// - Throws: SQLite's errors; `CancellationError` when the call's task is cancelled.
    func export(user: String, ownedNests: [String]) async throws -> UserRows {
        try await self.base.longRead { db in
            var routines: [RoutineWithActions] = []
            var removed: [ActionRecord] = []
            for nest in Set(ownedNests) {
                let records = try RoutineRecord.fetchAll(
                    db.cachedStatement(sql: Self.nestRoutines),
                    arguments: [nest]
                )
                guard !records.isEmpty else { continue }
                let actions = try ActionRecord.fetchAll(db.cachedStatement(sql: Self.nestActions), arguments: [nest])
                let byRoutine = Dictionary(grouping: actions.filter { $0.removedAt == nil }, by: \.routineID)
                routines += records.map { RoutineWithActions(routine: $0, actions: byRoutine[$0.id] ?? []) }
                removed += actions.filter { $0.removedAt != nil }
            }
            routines.sort { ($0.routine.createdAt, $0.routine.id) < ($1.routine.createdAt, $1.routine.id) }
            removed.sort {
                ($0.removedAt ?? .distantPast, $0.routineID, $0.position)
                    < ($1.removedAt ?? .distantPast, $1.routineID, $1.position)
            }
            let ticks = try CompletionRecord.fetchAll(db.cachedStatement(sql: Self.userTicks), arguments: [user])
            return UserRows(routines: routines, ticks: ticks, removedActions: removed)
        }
    }
}
