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
// written together by the next (``BatchedCalls``): one transaction of seven statements for up to
// ``outcomesPerBatch`` of them, where one outcome alone takes six.
extension PostgresSafetyStore {
    /// The most outcomes one transaction writes.
    static let outcomesPerBatch = 64

    @discardableResult
    func record(_ claim: AlertClaim, attempt: Result<String, DeliveryFailure>, now: Date) async throws -> Bool {
        try await self.outcomes.call(DeliveryOutcome(claim: claim, attempt: attempt, at: now)) { outcomes in
            await self.record(outcomes)
        }
    }

    /// Writes `outcomes` in one transaction; when that fails (an outcome that changes more than
    /// its message, a lock cycle with another process, the database gone), each in a
    /// transaction of its own, so that no outcome fails for another's sake.
    func record(_ outcomes: [DeliveryOutcome]) async -> [Result<Bool, any Error>] {
        if outcomes.count > 1, let written = try? await self.recordTogether(outcomes) {
            return written.map { .success($0) }
        }
        var results: [Result<Bool, any Error>] = []
        for outcome in outcomes {
            do {
                results.append(.success(try await self.recordAlone(outcome)))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// Whether each outcome was written (not when its claim is no longer its message's).
    private func recordTogether(_ outcomes: [DeliveryOutcome]) async throws -> [Bool] {
        try await self.database.transaction { db in
            let ids = outcomes.map(\.claim.id)
            let users = try await db.rows("SELECT DISTINCT user_id FROM alert WHERE id = ANY(\(ids))") {
                try $0.value(0, as: String.self)
            }
            // The users' locks first, as every change to their switches takes them.
            try await db.lock(users)
            var alerts: [String: AlertRecord] = [:]
            for alert in try await self.alerts("WHERE id = ANY(\(ids)) FOR UPDATE", on: db) { alerts[alert.id] = alert }
            // Where each user's period began: an alarm that went out after a check-in earns an all-clear.
            let checkInEpochs = Dictionary(
                try await db.rows("SELECT user_id, check_in_epoch FROM profile WHERE user_id = ANY(\(users))") {
                    (try $0.value(0, as: String.self), try $0.value(1, as: Int.self))
                },
                uniquingKeysWith: { first, _ in first }
            )
            var written: [Bool] = []
            var changed: [String: AlertRecord] = [:]
            for outcome in outcomes {
                guard var alert = alerts[outcome.claim.id], alert.claimedAt == outcome.claim.at else {
                    written.append(false)
                    continue
                }
                // A bounce or an all-clear changes other rows, which a later outcome may read:
                // such a batch is written an outcome at a time.
                let consequences = alert.record(outcome.attempt, at: outcome.at)
                let allClear =
                    consequences.allClear && alert.kind == MessageKind.alert
                    && checkInEpochs[alert.userID].map { $0 > alert.epoch } ?? false
                if consequences.bounce || allClear { throw ChangesMoreThanItsMessage() }
                alerts[alert.id] = alert
                changed[alert.id] = alert
                written.append(true)
            }
            try await AlertRecord.updateDeliveries(changed.values, on: db)
            return written
        }
    }

    private func recordAlone(_ outcome: DeliveryOutcome) async throws -> Bool {
        guard
            let user = try await self.database.read({ db in
                try await db.first("SELECT user_id FROM alert WHERE id = \(outcome.claim.id)") {
                    try $0.value(0, as: String.self)
                }
            })
        else { return false }
        return try await self.database.transaction { db in
            // The user's lock first, as every change to their switch takes it.
            try await db.lock(user)
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

/// A batch of outcomes held one that changes other rows: written one at a time instead.
private struct ChangesMoreThanItsMessage: Error {}
