import Foundation
import HearthPostgres
import PostgresNIO

// The senders' side of the outbox on PostgreSQL, which several processes share: a claim is a
// lease. Due messages are claimed with `FOR UPDATE SKIP LOCKED` (no two processes take one), and
// a message whose lease ran out without an outcome (its process died, or lost the database) is
// taken back by the next claim of any process: due at once, it may have arrived, and the attempt
// does not count toward giving up (what a SQLite process does for itself at its start).
extension PostgresSafetyStore {
    func nextAttemptTime(_ channel: AlertRecord.Channel, excluding excluded: Set<String>) async throws -> Date? {
        try await self.database.read { db in
            try await db.rows(
                """
                SELECT id, next_attempt_at FROM alert WHERE state = 'pending' AND channel = \(channel.rawValue)
                ORDER BY next_attempt_at LIMIT \(excluded.count + 1)
                """
            ) { (try $0.value(0, as: String.self), try $0.date(1)) }
            .first { !excluded.contains($0.0) }?.1
        }
    }

    func claimDue(
        _ channel: AlertRecord.Channel,
        now: Date,
        limit: Int,
        lease: TimeInterval,
        excluding excluded: Set<String>
    ) async throws -> [ClaimedAlert] {
        let claimedAt = self.now
        let retryAt = claimedAt.addingTimeInterval(lease)
        try await self.releaseLapsedCancelled(at: claimedAt, lease: lease, excluding: excluded)
        return try await self.database.transaction { db in
            let due = try await self.alerts(
                """
                WHERE state = 'pending' AND channel = \(channel.rawValue) AND next_attempt_at <= \(now.postgres)
                ORDER BY next_attempt_at LIMIT \(limit + excluded.count) FOR UPDATE SKIP LOCKED
                """,
                on: db
            )
            var claimed: [ClaimedAlert] = []
            for var alert in due where !excluded.contains(alert.id) && claimed.count < limit {
                // Not while a change to the user's switch is under way (it may cancel this
                // message, or remove its contact); tried, never waited for: taken at a later look.
                guard try await db.tryLock(alert.userID) else { continue }
                if try await self.isStale(alert, at: now, on: db) {
                    try await db.run(
                        """
                        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, claimed_at = NULL,
                            \(unescaped: AlertRecord.forgetPostgres)
                        WHERE id = \(alert.id)
                        """
                    )
                    continue
                }
                // Its lease ran out without an outcome: taken back before it is claimed again.
                if alert.claimedAt != nil { alert.releaseClaim() }
                alert.attempts += 1
                alert.claimedAt = claimedAt
                alert.nextAttemptAt = retryAt
                try await alert.updateDelivery(on: db, leaseUntil: retryAt)
                claimed.append(
                    ClaimedAlert(
                        alert: alert,
                        links: try await self.mintLinks(for: alert, at: claimedAt, on: db),
                        language: alert.channel == .push
                            ? try await db.first("SELECT language FROM profile WHERE user_id = \(alert.userID)") {
                                try $0.value(0, as: String.self)
                            } : nil
                    )
                )
            }
            return claimed
        }
    }

    func extendClaims(_ claims: [AlertClaim], lease: TimeInterval, now: Date) async throws {
        let until = now.addingTimeInterval(lease).postgres
        try await self.database.transaction { db in
            for claim in claims {
                // A cancelled message's lease is renewed too: its send may still end.
                try await db.run(
                    """
                    UPDATE alert SET lease_until = \(until),
                        next_attempt_at = CASE WHEN state = 'pending' THEN \(until) ELSE next_attempt_at END
                    WHERE id = \(claim.id) AND claimed_at = \(claim.at.postgres)
                    """
                )
            }
        }
    }

    /// Messages a check-in cancelled while under way whose lease ran out without an outcome:
    /// taken back (they may have arrived), and an alarm among them earns its contact the
    /// all-clear. Each in a transaction of its own, under its user's lock.
    private func releaseLapsedCancelled(at now: Date, lease: TimeInterval, excluding excluded: Set<String>) async throws
    {
        // A claim without its own lease (copied from a SQLite file, or made by a process before
        // migration v2) holds for one lease from its claim.
        let lapsedIDs = try await self.database.read { db in
            try await db.rows(
                """
                SELECT id, user_id FROM alert
                WHERE claimed_at IS NOT NULL AND state <> 'pending'
                    AND COALESCE(lease_until, claimed_at + make_interval(secs => \(lease))) < \(now.postgres) LIMIT 100
                """
            ) { (try $0.value(0, as: String.self), try $0.value(1, as: String.self)) }
        }
        // Never one this process has under way (its send may still end).
        for (id, user) in lapsedIDs where !excluded.contains(id) {
            try await self.database.transaction { db in
                // Not waited for: a busy user must not hold back this sender.
                guard try await db.tryLock(user) else { return }
                guard
                    var alert = try await self.alerts(
                        """
                        WHERE id = \(id) AND claimed_at IS NOT NULL AND state <> 'pending'
                            AND COALESCE(lease_until, claimed_at + make_interval(secs => \(lease))) < \(now.postgres)
                            FOR UPDATE
                        """,
                        on: db
                    ).first
                else { return }
                alert.releaseClaim()
                try await alert.updateDelivery(on: db)
                if alert.state == .cancelled { try await self.allClearIfCheckedInSince(alert, at: self.now, on: db) }
            }
        }
    }

    /// A warning left pending past its deadline, or an invitation its contact can no longer
    /// answer (``SafetyStore`` says why each must not go out).
    private func isStale(_ alert: AlertRecord, at now: Date, on db: PostgresConnection) async throws -> Bool {
        if alert.kind != MessageKind.alert, SafetyStore.cancellableKinds.contains(alert.kind) {
            guard let profile = try await self.profile(alert.userID, on: db) else { return true }
            return SwitchMachine.isStale(warningOf: alert.epoch, on: profile.switchState, at: now)
        }
        if alert.kind == MessageKind.invitation {
            guard let contact = try await self.contact(alert.contactID, on: db) else { return true }
            return !contact.consent.isAwaitingAnswer(at: now)
        }
        return false
    }

    @discardableResult
    func record(_ claim: AlertClaim, attempt: Result<String, DeliveryFailure>, now: Date) async throws -> Bool {
        guard
            let user = try await self.database.read({ db in
                try await db.first("SELECT user_id FROM alert WHERE id = \(claim.id)") {
                    try $0.value(0, as: String.self)
                }
            })
        else { return false }
        return try await self.database.transaction { db in
            // The user's lock first, as every change to their switch takes it.
            try await db.lock(user)
            guard
                var alert = try await self.alerts(
                    "WHERE id = \(claim.id) AND claimed_at = \(claim.at.postgres) FOR UPDATE",
                    on: db
                ).first
            else { return false }
            let consequences = alert.record(attempt, at: now)
            if consequences.bounce { try await self.bounce(alert, at: now, on: db) }
            try await alert.updateDelivery(on: db)
            if consequences.allClear { try await self.allClearIfCheckedInSince(alert, at: now, on: db) }
            return true
        }
    }

    /// An alert that reached its contact, or may have, after a check-in cancelled it while it
    /// was under way (``SwitchMachine/lateAlarmArrived(epoch:contactID:addressKey:allClearedSince:at:)``).
    private func allClearIfCheckedInSince(_ alert: AlertRecord, at now: Date, on db: PostgresConnection) async throws {
        guard alert.kind == MessageKind.alert, let profile = try await self.profile(alert.userID, on: db),
            profile.checkInEpoch > alert.epoch
        else { return }
        let allClearedSince = Set(
            try await db.rows(
                """
                SELECT contact_id FROM alert
                WHERE user_id = \(alert.userID) AND kind = \(MessageKind.allClear) AND epoch > \(alert.epoch)
                """
            ) { try $0.value(0, as: String.self) }
        )
        var machine = try await self.machine(profile, at: now, reading: [], on: db)
        machine.lateAlarmArrived(
            epoch: alert.epoch,
            contactID: alert.contactID,
            addressKey: alert.addressKey,
            allClearedSince: allClearedSince,
            at: now
        )
        try await self.apply(machine.effects, of: profile, on: db)
    }

    /// The links of an email claimed for sending to a contact (``SafetyStore/mintLinks(for:at:in:)``).
    private func mintLinks(for alert: AlertRecord, at now: Date, on db: PostgresConnection) async throws
        -> ContactLinks?
    {
        guard alert.channel == .email, !alert.contactID.isEmpty,
            let contact = try await self.contact(alert.contactID, on: db),
            let profile = try await self.profile(alert.userID, on: db)
        else { return nil }
        let insert = { (token: LinkToken, purpose: LinkPurpose, expiresAt: Date?) in
            try await db.run(
                """
                INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                VALUES (\(token.hash), \(contact.id), \(contact.userID), \(contact.emailKey), \(purpose.rawValue),
                    \(expiresAt.postgres), \(now.postgres))
                """
            )
        }
        let optOut = LinkToken.make()
        try await insert(optOut, .optOut, nil)
        var answer: LinkToken?
        if alert.kind == MessageKind.invitation, contact.consent.isAwaitingAnswer(at: now) {
            let token = LinkToken.make()
            try await insert(token, .answer, contact.invitationExpiresAt)
            answer = token
        }
        return ContactLinks(answer: answer, optOut: optOut, language: profile.language, personName: profile.name)
    }
}
