import Foundation
import GRDB
import HearthCore
import HearthStore

// The senders' side of the switch's outbox: claiming due messages, recording what became of
// each attempt, and taking back attempts a killed process left under way.
extension SafetyStore {
    /// At a process start: attempts that a killed process left under way are due again at
    /// once, and each may have arrived (the process may have died after the server took it).
    /// Such an attempt, without an outcome, does not count toward giving up. One that a
    /// check-in cancelled meanwhile earns its contact the all-clear.
    func releaseClaims() throws {
        let now = self.now
        try self.db.write { db in
            let claimed = try AlertRecord.fetchAll(db, keys: self.keys, "WHERE claimed_at IS NOT NULL")
            for var alert in claimed {
                alert.releaseClaim()
                try alert.updateDelivery(in: db)
                if alert.state == .cancelled {
                    try self.allClearIfCheckedInSince(alert, at: now, in: db)
                }
            }
        }
    }

    /// The earliest time a message of `channel` is due to be (re)sent, leaving out `excluded`.
    func nextAttemptTime(_ channel: AlertRecord.Channel, excluding excluded: Set<String>) async throws -> Date? {
        try self.base.read { db in
            var next: Date?
            try db.cachedStatement(
                sql: """
                    SELECT id, next_attempt_at FROM alert WHERE state = 'pending' AND channel = ?
                    ORDER BY next_attempt_at LIMIT ?
                    """
            ).forEachRow(binding: channel.rawValue, excluded.count + 1) { columns in
                let id: String = try columns.value(0)
                if next == nil, !excluded.contains(id) { next = try columns.date(1) }
            }
            return next
        }
    }

    /// Claims up to `limit` messages of `channel` due by `now` (oldest first, leaving out
    /// `excluded`) for an attempt, in one write: the attempt is counted, and the message is not
    /// due again until `lease` has passed, so no other pass takes it meanwhile, and one whose
    /// outcome cannot be written (a full disk) does not go out pass after pass.
    func claimDue(
        _ channel: AlertRecord.Channel,
        now: Date,
        limit: Int,
        lease: TimeInterval,
        excluding excluded: Set<String>
    ) async throws -> [ClaimedAlert] {
        // Most passes find nothing: look with a read before taking the writer. A message under
        // way (excluded) is usually not due (its lease is ahead), but may be (a send longer
        // than its lease): only a due message not under way counts.
        let anyDue = try self.base.read { db in
            try db.cachedStatement(
                sql: "SELECT id FROM alert WHERE state = 'pending' AND channel = ? AND next_attempt_at <= ? LIMIT ?"
            )
            .fetchAll(binding: channel.rawValue, now.stored, excluded.count + 1) { try $0.value(0) as String }
            .contains { !excluded.contains($0) }
        }
        guard anyDue else { return [] }
        let claimedAt = self.now
        let retryAt = claimedAt.addingTimeInterval(lease)
        return try await self.base.write { db in
            let due = try AlertRecord.fetchAll(
                db,
                keys: self.keys,
                "WHERE state = 'pending' AND channel = ? AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
                binding: channel.rawValue,
                now.stored,
                limit + excluded.count
            )
            var claimed: [ClaimedAlert] = []
            for var alert in due where !excluded.contains(alert.id) && claimed.count < limit {
                if try alert.isStale(
                    at: now,
                    profile: { try self.profile(alert.userID, in: db) },
                    contact: { try self.contact(alert.contactID, in: db) }
                ) {
                    try db.cachedStatement(
                        sql: """
                            UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, claimed_at = NULL,
                                \(AlertRecord.forgetText)
                            WHERE id = ?
                            """
                    ).execute(binding: alert.id)
                    continue
                }
                alert.attempts += 1
                alert.claimedAt = claimedAt
                alert.nextAttemptAt = retryAt
                try db.cachedStatement(
                    sql: "UPDATE alert SET attempts = ?, claimed_at = ?, next_attempt_at = ? WHERE id = ?"
                ).execute(binding: alert.attempts, claimedAt.stored, retryAt.stored, alert.id)
                claimed.append(
                    ClaimedAlert(
                        alert: alert,
                        links: try self.mintLinks(for: alert, at: claimedAt, in: db),
                        language: alert.channel == .push
                            ? try db.cachedStatement(sql: "SELECT language FROM profile WHERE user_id = ?")
                                .fetchOne(binding: alert.userID) { try $0.value(0) as String } : nil
                    )
                )
            }
            return claimed
        }
    }

    func returnClaims(_ claims: [AlertClaim]) async throws {
        guard !claims.isEmpty else { return }
        let now = self.now
        try await self.outcomes.write { db in
            // One cancelled meanwhile keeps its state: it was never sent, so no all-clear follows.
            for claim in claims {
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET attempts = attempts - 1, claimed_at = NULL,
                            next_attempt_at = CASE WHEN state = 'pending' THEN ? ELSE next_attempt_at END
                        WHERE id = ? AND claimed_at = ?
                        """
                ).execute(binding: now.stored, claim.id, claim.at.stored)
            }
        }
    }

    func extendClaims(_ claims: [AlertClaim], lease: TimeInterval, now: Date) async throws {
        let until = now.addingTimeInterval(lease)
        try await self.outcomes.write { db in
            for claim in claims {
                try db.cachedStatement(
                    sql: "UPDATE alert SET next_attempt_at = ? WHERE id = ? AND claimed_at = ? AND state = 'pending'"
                ).execute(binding: until.stored, claim.id, claim.at.stored)
            }
        }
    }

    /// What became of a claimed attempt. A message cancelled meanwhile (a check-in, a pause) is
    /// not tried again; but one that went out all the same is recorded as sent, and an alert
    /// that went out or may have (no answer came to its content) earns its contact the
    /// all-clear when a check-in cancelled it.
    @discardableResult
    func record(_ claim: AlertClaim, attempt: Result<String, DeliveryFailure>, now: Date) async throws -> Bool {
        try await self.outcomes.write { db in
            if case .success(let note) = attempt {
                // The common case, in one prepared statement.
                try db.cachedStatement(
                    sql: """
                        UPDATE alert SET state = 'sent', sent_at = ?, next_attempt_at = NULL, claimed_at = NULL,
                          last_error = ?, \(AlertRecord.forgetText)
                        WHERE id = ? AND claimed_at = ? AND state = 'pending'
                        """
                ).execute(binding: now.stored, note, claim.id, claim.at.stored)
                if db.changesCount > 0 { return true }
            }
            guard
                var alert = try AlertRecord.fetchAll(
                    db,
                    keys: self.keys,
                    "WHERE id = ? AND claimed_at = ?",
                    binding: claim.id,
                    claim.at.stored
                ).first
            else { return false }
            let consequences = alert.record(attempt, at: now)
            if consequences.bounce { try self.bounce(alert, at: now, in: db) }
            try alert.updateDelivery(in: db)
            if consequences.allClear { try self.allClearIfCheckedInSince(alert, at: now, in: db) }
            return true
        }
    }

    /// An alert that reached its contact, or may have, after a check-in cancelled it while it
    /// was under way (``SwitchMachine/lateAlarmArrived(epoch:contactID:addressKey:allClearedSince:at:)``).
    private func allClearIfCheckedInSince(
        _ alert: AlertRecord,
        at now: Date,
        in db: Database
    ) throws {
        guard alert.kind == MessageKind.alert, let profile = try self.profile(alert.userID, in: db),
            profile.checkInEpoch > alert.epoch
        else { return }
        // A check-in since may have sent the contact one already (the attempt was known then).
        let allClearedSince = Set(
            try db.cachedStatement(sql: "SELECT contact_id FROM alert WHERE user_id = ? AND kind = ? AND epoch > ?")
                .fetchAll(binding: alert.userID, MessageKind.allClear, alert.epoch) { try $0.value(0) as String }
        )
        var machine = try self.machine(profile, at: now, reading: [], in: db)
        machine.lateAlarmArrived(
            epoch: alert.epoch,
            contactID: alert.contactID,
            addressKey: alert.addressKey,
            allClearedSince: allClearedSince,
            at: now
        )
        try self.apply(machine.effects, of: profile, in: db)
    }
}
