import Foundation
import HearthCore
import HearthPostgres
import PostgresNIO

/// A delivery's outcome, as a sender reports it.
struct DeliveryOutcome: Sendable {
    let claim: AlertClaim
    let attempt: Result<String, DeliveryFailure>
    let at: Date
}

// What became of the attempts. The outcomes senders report while a batch is being written are
// written together by the next (``BatchedCalls``): one transaction of five statements (the
// claims carry their users: their locks are taken first) for up to ``outcomesPerBatch`` of them,
// where one outcome alone takes five.
extension PostgresSafetyStore {
    /// The most outcomes one transaction writes.
    static let outcomesPerBatch = 64

    @discardableResult
    func record(_ claim: AlertClaim, attempt: Result<String, DeliveryFailure>, now: Date) async throws -> Bool {
        try await self.outcomes.call(DeliveryOutcome(claim: claim, attempt: attempt, at: now)) { outcomes in
            await self.record(outcomes)
        }
    }

    /// Writes `outcomes` in one transaction, but for those it leaves to a transaction of their
    /// own (a user whose switch is changing, a bounce, an all-clear); all of them so when that
    /// transaction fails (the database gone, a lock cycle), so that no outcome fails for
    /// another's sake.
    func record(_ outcomes: [DeliveryOutcome]) async -> [Result<Bool, any Error>] {
        var written: [Bool?] = Array(repeating: nil, count: outcomes.count)
        if outcomes.count > 1 {
            do {
                written = try await self.recordTogether(outcomes)
            } catch {
                self.database.logger.warning(
                    "could not write delivery outcomes together; writing each alone",
                    metadata: ["outcomes": "\(outcomes.count)", "error": "\(error)"]
                )
            }
        }
        var results: [Result<Bool, any Error>] = []
        for (outcome, written) in zip(outcomes, written) {
            if let written {
                results.append(.success(written))
                continue
            }
            do {
                results.append(.success(try await self.recordAlone(outcome)))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// Whether each outcome was written (false when its claim is no longer its message's); nil
    /// for one left to be written alone: its user's lock is held elsewhere (tried, never waited
    /// for: one busy user must not hold back every outcome), or it changes other rows, which
    /// this batch read before (a bounce, an all-clear).
    func recordTogether(_ outcomes: [DeliveryOutcome]) async throws -> [Bool?] {
        try await self.database.transaction { db in
            // The users' locks first, as every change to their switches takes them.
            let free = try await db.tryLock(Set(outcomes.map(\.claim.userID)))
            // In the order of their ids, as a renewal of claims locks them. Without their
            // addresses and words (an outcome written here writes none of them back), with where
            // each user's period began: an alarm that went out after a check-in earns an all-clear.
            var alerts: [String: (alert: AlertRecord, checkInEpoch: Int?)] = [:]
            for (alert, checkInEpoch) in try await db.rows(
                OutcomeAlerts(ids: outcomes.map(\.claim.id), users: Array(free)),
                { (try AlertRecord(columns: $0, keys: self.keys), try $0.value(18, as: Int?.self)) }
            ) {
                alerts[alert.id] = (alert, checkInEpoch)
            }
            var written: [Bool?] = []
            var changed: [String: AlertRecord] = [:]
            for outcome in outcomes {
                guard free.contains(outcome.claim.userID) else {
                    written.append(nil)
                    continue
                }
                // Gone (its user erased), or claimed again since.
                guard let (read, checkInEpoch) = alerts[outcome.claim.id], read.claimedAt == outcome.claim.at else {
                    written.append(false)
                    continue
                }
                var alert = read
                let consequences = alert.record(outcome.attempt, at: outcome.at)
                let allClear =
                    consequences.allClear && alert.kind == MessageKind.alert
                    && checkInEpoch.map { $0 > alert.epoch } ?? false
                if consequences.bounce || allClear {
                    written.append(nil)
                    continue
                }
                alerts[alert.id] = (alert, checkInEpoch)
                changed[alert.id] = alert
                written.append(true)
            }
            try await AlertRecord.updateDeliveries(changed.values, on: db)
            return written
        }
    }

    private func recordAlone(_ outcome: DeliveryOutcome) async throws -> Bool {
        try await self.database.transaction { db in
            // The user's lock first, as every change to their switch takes it.
            try await db.lock(outcome.claim.userID)
            guard
                var alert = try await self.alerts(
                    "WHERE id = \(outcome.claim.id) AND claimed_at = \(outcome.claim.at.postgres) FOR UPDATE",
                    on: db
                ).first
            else { return false }
            let consequences = alert.record(outcome.attempt, at: outcome.at)
            if consequences.bounce { try await self.bounce(alert, at: outcome.at, on: db) }
            try await alert.updateDelivery(on: db)
            if consequences.allClear { try await self.allClearIfCheckedInSince(alert, at: outcome.at, on: db) }
            return true
        }
    }

    /// An alert that reached its contact, or may have, after a check-in cancelled it while it
    /// was under way (``SwitchMachine/lateAlarmArrived(epoch:contactID:addressKey:allClearedSince:at:)``).
    func allClearIfCheckedInSince(_ alert: AlertRecord, at now: Date, on db: PostgresConnection) async throws {
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
}

/// The messages `ids` of `users`, locked in the order of their ids, without their addresses and
/// words, each with where its user's period began (``PostgresSafetyStore/recordTogether(_:)``).
struct OutcomeAlerts: PreparedSQL {
    static let sql = Self(ids: [], users: []).query.sql
    let ids: [String]
    let users: [String]

    var query: PostgresQuery {
        """
        \(unescaped: AlertRecord.postgresSelectionWithoutWords),
            (SELECT check_in_epoch FROM profile WHERE profile.user_id = alert.user_id)
        FROM alert WHERE id = ANY(\(self.ids)) AND user_id = ANY(\(self.users))
        ORDER BY id FOR UPDATE
        """
    }
}
