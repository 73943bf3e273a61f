import Foundation
import GRDB
import HearthPush
import HearthRelay
import HearthStore

// Account erasure: everything the tasks process's store holds about one user.
extension TaskStore {
    /// Deletes, inside the caller's write transaction, every row the tasks process's store (the
    /// tasks and the activities services share it) holds about `user`, and answers how many
    /// rows went. Nothing is left to find, so a second call deletes nothing and answers 0.
    /// `PRAGMA secure_delete` zeroes what is deleted; the bytes leave the WAL at the next
    /// checkpoint that resets it (a TRUNCATE checkpoint after the commit makes it now).
    ///
    /// What goes, children before their parents, so that no `ON DELETE CASCADE` deletes a row
    /// the count would miss (SQLite counts a statement's own rows only):
    /// - `push_outbox`: the "check-in due" pushes of the user's prompts (by id,
    ///   ``pushID(_:)``), and every message to the user, sent or not (`Outbox.erase(messagesTo:in:)`).
    /// - `relay_outbox`: the calls made for the user, sent or not (`Relay.erase(callsFor:in:)`;
    ///   the erasure's own calls are not relayed: ``ErasureWork`` makes them).
    /// - `check_in`: the check-ins of the user's tasks, and any answering one of their
    ///   prompts.
    /// - `prompt`: the prompts of the user's tasks.
    /// - `task`: the user's tasks (`user_id`).
    /// - `offer`: the user's offers (`user_id`), and any offer of one of their activities.
    /// - `location_event`, `location_event_repeat`: the user's (`user_id`).
    /// - `activity_rule`: the rules of the user's activities.
    /// - `activity`: the user's activities (`user_id`).
    /// - `offer_preferences`, `device_permissions`: the user's (`user_id`).
    ///
    /// What stays: the `erasure` ledger (the erasure's own record of its steps, which the user
    /// reads with GetErasure; pruned ``erasureRetention`` after it is done). Nothing else about
    /// the user. A prompt or a check-in is found through
    /// its task (the indexed path): every one carries its task's owner in `user_id`, as the
    /// store writes them, so none of the user's sits under another user's task.
    static func eraseUser(_ user: String, in db: Database) throws -> Int {
        assert(db.isInsideTransaction, "an erasure runs inside the caller's write transaction")
        let tasks = "SELECT id FROM task WHERE user_id = ?"
        let activities = "SELECT id FROM activity WHERE user_id = ?"
        let statements: [(sql: String, arguments: StatementArguments)] = [
            // Before the prompts they are found through.
            (
                """
                DELETE FROM push_outbox WHERE id IN (
                    SELECT ? || id FROM prompt WHERE task_id IN (\(tasks)))
                """,
                [Self.pushID(""), user]
            ),
            // Two statements, each through its index (an OR of both might scan the table).
            ("DELETE FROM check_in WHERE task_id IN (\(tasks))", [user]),
            (
                "DELETE FROM check_in WHERE prompt_id IN (SELECT id FROM prompt WHERE task_id IN (\(tasks)))",
                [user]
            ),
            ("DELETE FROM prompt WHERE task_id IN (\(tasks))", [user]),
            ("DELETE FROM task WHERE user_id = ?", [user]),
            // No foreign key to the activity: its offers go by owner and by activity.
            ("DELETE FROM offer WHERE user_id = ?", [user]),
            ("DELETE FROM offer WHERE activity_id IN (\(activities))", [user]),
            ("DELETE FROM location_event WHERE user_id = ?", [user]),
            ("DELETE FROM location_event_repeat WHERE user_id = ?", [user]),
            ("DELETE FROM activity_rule WHERE activity_id IN (\(activities))", [user]),
            ("DELETE FROM activity WHERE user_id = ?", [user]),
            ("DELETE FROM offer_preferences WHERE user_id = ?", [user]),
            ("DELETE FROM device_permissions WHERE user_id = ?", [user]),
        ]
        var deleted = try Outbox.erase(messagesTo: user, in: db) + Relay.erase(callsFor: user, in: db)
        for statement in statements {
            try db.execute(sql: statement.sql, arguments: statement.arguments)
            deleted += db.changesCount
        }
        return deleted
    }

}
