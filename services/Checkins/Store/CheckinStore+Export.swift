import Foundation
import GRDB
import HearthStore

// An account export's part in checkins (hearth.account.v1): the rows an erasure deletes as the
// user's (``eraseUser(_:in:)``) that a user reads as theirs: their nests and their sitting
// elsewhere, with the sessions, check-ins and quick captions they hold. Not the photos' bytes
// (GetCheckInPhoto serves them), nor what the store keeps only to do its work: the requests
// (`check_in_request`), the daily counts, the pushes and calls in the outboxes.
extension CheckinStore {
    /// What checkins holds about a user, as the store keeps it (the service maps the records to
    /// messages).
    struct UserRows: Sendable, Equatable {
        /// The nests they own, then the nests they sit in (a session of theirs, whenever),
        /// each by creation (`created_at`, then id, as ListMyNests orders them).
        var nests: [NestRecord]
        /// Every session of the nests they own (whoever sits it) and every session they sit, by
        /// start (then id, as ListSessions orders them).
        var sessions: [SessionRecord]
        /// Every check-in of those sessions, by `captured_at` (then id, as ListCheckIns orders
        /// them).
        var checkIns: [CheckInRecord]
        /// The quick captions of the nests they own: nest by nest in the order of ``nests``, each
        /// nest's as ListTemplates orders them.
        var templates: [TemplateRecord]
    }

    /// The nests a user owns by creation, the user bound as `:user`: along nest_owner.
    private static let ownedNests = "SELECT * FROM nest WHERE owner_user_id = :user ORDER BY created_at, id"

    /// The nests a user sits in (a session of theirs, called off or long over too) and does not
    /// own, by creation, the user bound as `:user`: their sessions along session_sitter, each
    /// nest once.
    private static let sittingNests = """
        SELECT * FROM nest
        WHERE id IN (SELECT nest_id FROM session WHERE sitter_user_id = :user) AND owner_user_id <> :user
        ORDER BY created_at, id
        """

    /// The ids of the sessions an export holds, the user bound as `:user`: the sitter's along
    /// session_sitter, and those of the owner's nests (nest_owner, then session_nest), as the
    /// erasure finds them.
    private static let userSessionIDs = """
        SELECT id FROM session
        WHERE sitter_user_id = :user OR nest_id IN (SELECT id FROM nest WHERE owner_user_id = :user)
        """

    /// A user's sessions by start, the user bound as `:user`.
    private static let userSessions =
        "SELECT * FROM session WHERE id IN (\(Self.userSessionIDs)) ORDER BY starts_at, id"

    /// The check-ins of a user's sessions by capture, the user bound as `:user`: along
    /// check_in_timeline, then sorted across the sessions.
    private static let userCheckIns =
        "SELECT * FROM check_in WHERE session_id IN (\(Self.userSessionIDs)) ORDER BY captured_at, id"

    /// The quick captions of the nests a user owns, the user bound as `:user`: nest by nest by
    /// creation, each nest's by creation (then rowid, as ``templates(inNest:)`` orders them).
    private static let ownedTemplates = """
        SELECT template.* FROM template JOIN nest ON nest.id = template.nest_id
        WHERE nest.owner_user_id = :user
        ORDER BY nest.created_at, nest.id, template.created_at, template.rowid
        """

    /// Every row of `user`'s in ``UserRows``, in one read transaction, so that a check-in is
    /// there with its session and a session with its nest. Empty when there is nothing.
    ///
    /// On a reader thread (``Store/longRead(_:)``), not the caller's event loop: a user's
    /// nests of long standing hold thousands of sessions and check-ins.
    /// - Throws: SQLite's errors; `CancellationError` when the call's task is cancelled.
    func userRows(of user: String) async throws -> UserRows {
        try await self.base.longRead { db in
            let arguments: StatementArguments = ["user": user]
            let owned = try NestRecord.fetchAll(db.cachedStatement(sql: Self.ownedNests), arguments: arguments)
            let sitting = try NestRecord.fetchAll(db.cachedStatement(sql: Self.sittingNests), arguments: arguments)
            return UserRows(
                nests: owned + sitting,
                sessions: try SessionRecord.fetchAll(db.cachedStatement(sql: Self.userSessions), arguments: arguments),
                checkIns: try CheckInRecord.fetchAll(db.cachedStatement(sql: Self.userCheckIns), arguments: arguments),
                templates: try TemplateRecord.fetchAll(
                    db.cachedStatement(sql: Self.ownedTemplates),
                    arguments: arguments
                )
            )
        }
    }
}
