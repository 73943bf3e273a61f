import Foundation
import GRDB
import HearthCore
import HearthStore

// ReportLocationEvent's side of the store: the decision on an event and what it records.
extension ActivityStore {
    enum ReportOutcome: Sendable {
        case decided(OfferRules.Decision, OfferRecord?)
        case missing
    }

    /// The activity's last event at or before a time, and its first after, among those that came
    /// as far as the cooldown: the condition on `reason` is the partial index's, written the same
    /// (8 is EVENT_COOLDOWN), so that each is one step down that index.
    static let nearestEventSQL = [
        """
        SELECT occurred_at FROM location_event
        WHERE user_id = ? AND activity_id = ? AND occurred_at <= ? AND (reason = 0 OR reason >= 8)
        ORDER BY occurred_at DESC LIMIT 1
        """,
        """
        SELECT occurred_at FROM location_event
        WHERE user_id = ? AND activity_id = ? AND occurred_at > ? AND (reason = 0 OR reason >= 8)
        ORDER BY occurred_at LIMIT 1
        """,
    ]

    /// Decides on an event and records the decision (and the offer) in one transaction.
    func report(
        user: String,
        activityID: String,
        clientEventID: String,
        event: OfferRules.Event,
        now: Date
    ) async throws -> ReportOutcome {
        try await self.base.write { db in
            guard let found = try Self.activity(activityID, user: user, in: db) else { return .missing }
            let preferences = try Self.preferences(user: user, in: db)
            let eventSeen =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT 1 FROM location_event WHERE user_id = ? AND client_event_id = ?"),
                    arguments: [user, clientEventID]
                ) != nil
            let offers = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT activity_id, occurred_at, deliver_at, snoozed, cancelled_at FROM offer
                        WHERE user_id = ? AND deliver_at >= ? AND deliver_at <= ?
                        """
                ),
                arguments: [
                    user, event.occurredAt.addingTimeInterval(-2 * 86_400).stored,
                    event.occurredAt.addingTimeInterval(2 * 86_400 + 7200).stored,
                ]
            ).map { row -> OfferRules.PastOffer in
                let deliverAt: Date = row["deliver_at"]
                let cancelledAt: Date? = row["cancelled_at"]
                let snoozed: Bool = row["snoozed"]
                // Cancelled before it was delivered: never seen, does not count.
                let unseen = cancelledAt.map { $0 < deliverAt } ?? false
                return OfferRules.PastOffer(
                    activityID: row["activity_id"],
                    occurredAt: row["occurred_at"],
                    deliverAt: deliverAt,
                    seen: !unseen,
                    snoozed: snoozed
                )
            }
            // The activity's nearest events before and after this one that came as far as the
            // cooldown (an offer, reason 0, or a suppression by it or a check after it): two
            // steps down the (user, activity, time) index, however many events the user has.
            var recentEvents: [Date] = []
            for sql in Self.nearestEventSQL {
                if let nearest = try StoredDate.fetchOne(
                    db.cachedStatement(sql: sql),
                    arguments: [user, activityID, event.occurredAt.stored]
                ) {
                    recentEvents.append(nearest.date)
                }
            }
            let ledger = OfferRules.Ledger(
                eventSeen: eventSeen,
                repeatKind: Recurrence(rawValue: found.activity.repeatKind) ?? .once,
                lastCompletedAt: found.activity.lastCompletedAt,
                offers: offers,
                recentEvents: recentEvents
            )
            let decision = OfferRules.decide(
                activityID: activityID,
                event: event,
                rule: found.rule.map(\.rule),
                preferences: preferences,
                ledger: ledger,
                now: now
            )
            var offer: OfferRecord?
            var reason = 0
            switch decision {
            case .offer(let deliverAt, let channel):
                offer = OfferRecord(
                    id: UUID().uuidString.lowercased(),
                    userID: user,
                    activityID: activityID,
                    title: found.activity.title,
                    channel: channel.rawValue,
                    occurredAt: event.occurredAt,
                    deliverAt: deliverAt,
                    createdAt: now,
                    snoozed: false,
                    trigger: event.trigger.rawValue
                )
                try offer!.insertPrepared(db)
            case .suppressed(let why, _):
                reason = why.rawValue
            }
            if eventSeen {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO location_event_repeat (user_id, client_event_id, occurred_at, received_at, reason)
                        VALUES (?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [user, clientEventID, event.occurredAt.stored, now.stored, reason])
            } else {
                try LocationEventRecord(
                    userID: user,
                    clientEventID: clientEventID,
                    activityID: activityID,
                    trigger: event.trigger.rawValue,
                    occurredAt: event.occurredAt,
                    receivedAt: now,
                    reason: reason,
                    offerID: offer?.id
                ).insertPrepared(db)
            }
            return .decided(decision, offer)
        }
    }
}
