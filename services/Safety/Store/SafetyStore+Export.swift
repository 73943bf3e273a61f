import Foundation
import GRDB
import HearthStore

// A user's export (hearth.account.v1): what safety holds about them. The profile, contacts and
// status are read as their own calls read them (names and addresses opened); this reads what
// only an export shows: the check-ins kept, and every message of the switch's outbox (`alert`),
// of this period and earlier ones. Left out, as working state that tells the user nothing they
// wrote: a check-in's request id (it only tells a retry); a message's period number, the keyed
// hash of its address and its claim on an attempt under way; the hashes of the links sent to
// contacts (`contact_token`); the day's count of invitations (`invitation_sent`); and what each
// contact address answered (`contact_address`: a keyed hash of the address, kept past the
// contact and the account so that one who said no is not mailed again; the contacts themselves,
// with where each stands, are exported).
extension SafetyStore {

    /// The check-ins kept for `user` (``heartbeatRetention``: those of the last 30 days, until
    /// the hourly prune), oldest first. Nothing in them is sealed. On a reader thread: a user
    /// may have many thousands.
    func checkIns(of user: String) async throws -> [CheckInRow] {
        try await self.base.longRead { db in
            try db.cachedStatement(
                sql: """
                    SELECT at, source, time_zone, device_info, counted FROM heartbeat
                    WHERE user_id = ? ORDER BY at, request_id
                    """
            )
            .fetchAll(binding: user) { columns in
                CheckInRow(
                    at: try columns.date(0),
                    source: try columns.value(1),
                    timeZone: try columns.value(2),
                    deviceInfo: try columns.value(3),
                    counted: try columns.value(4)
                )
            }
        }
    }

    /// Every message of `user`'s in the outbox, whatever its period, kind or state (those of
    /// periods before the last check-in are kept ``alertRetention``), by when it was decided
    /// (then id). A pending message's address and words are opened with the store's keys
    /// (``AlertRecord/init(columns:keys:)``), as the senders read them; the others' were emptied
    /// when they became final. On a reader thread, as the check-ins are.
    /// - Throws: SQLite's errors; `SealedValueUnreadable` for a value that does not open.
    func messages(of user: String) async throws -> [AlertRecord] {
        try await self.base.longRead { db in
            // Along `alert_user` (user_id, epoch).
            try AlertRecord.fetchAll(db, keys: self.keys, "WHERE user_id = ? ORDER BY created_at, id", binding: user)
        }
    }
}
