import Foundation
import GRDB
import HearthCore
import HearthStore

// ReportLocationEvent's side of the store: the decision on an event and what it records.
extension ActivityStore {
    enum ReportOutcome: Sendable {
        /// The decision, the offer it made, and the arrivals' offers a leave within their minimum
        /// dwell dropped.
        case decided(OfferRules.Decision, OfferRecord?, dropped: [OfferRecord])
        case missing
    }

    /// The activity's last event at or before a time, and its first after, among those that came
    /// as far as the cooldown (an offer's event is one): the condition on `reason` is the partial
    /// index's, written the same (8 EVENT_COOLDOWN to 12 MIN_SPACING), so that each is one step
    /// down that index.
    static let nearestEventSQL = [
        """
        SELECT occurred_at FROM location_event
        WHERE user_id = ? AND activity_id = ? AND occurred_at <= ? AND (reason = 0 OR reason BETWEEN 8 AND 12)
        ORDER BY occurred_at DESC LIMIT 1
        """,
        """
        SELECT occurred_at FROM location_event
        WHERE user_id = ? AND activity_id = ? AND occurred_at > ? AND (reason = 0 OR reason BETWEEN 8 AND 12)
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
                        SELECT deliver_at, snoozed, cancelled_at FROM offer
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
            let rule = found.rule.map(\.rule)
            var leftWithinDwell = false
            if let rule, rule.minDwellMinutes > 0, event.trigger == .arrive {
                leftWithinDwell = try Self.leaveReported(
                    user: user,
                    activityID: activityID,
                    from: event.occurredAt,
                    minutes: rule.minDwellMinutes,
                    in: db
                )
            }
            let ledger = OfferRules.Ledger(
                eventSeen: eventSeen,
                repeatKind: Recurrence(rawValue: found.activity.repeatKind) ?? .once,
                lastCompletedAt: found.activity.lastCompletedAt,
                offers: offers,
                recentEvents: recentEvents,
                permissions: try Self.permissions(user: user, in: db)?.permissions ?? Permissions(),
                leftWithinDwell: leftWithinDwell
            )
            let decision = OfferRules.decide(
                event: event,
                rule: rule,
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
            var dropped: [OfferRecord] = []
            if let rule, !eventSeen, OfferRules.leaveCounts(event, rule: rule, now: now) {
                dropped = try Self.dropHeldArrivals(
                    user: user,
                    activityID: activityID,
                    leftAt: event.occurredAt,
                    rule: rule,
                    now: now,
                    in: db
                )
            }
            return .decided(decision, offer, dropped: dropped)
        }
    }

    /// Whether a leave of the activity was reported in the `minutes` after an arrival at `from`
    /// (the phone may report them out of order).
    private static func leaveReported(user: String, activityID: String, from: Date, minutes: Int, in db: Database)
        throws -> Bool
    {
        try Int.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT 1 FROM location_event WHERE user_id = ? AND occurred_at >= ? AND occurred_at < ?
                    AND activity_id = ? AND trigger = ? LIMIT 1
                    """
            ),
            arguments: [
                user, from.stored, from.addingTimeInterval(TimeInterval(minutes * 60)).stored, activityID,
                Trigger.leave.rawValue,
            ]
        ) != nil
    }

    /// A leave within arrivals' minimum dwell: each arrival's offer still held (not yet
    /// delivered: once delivered it was made) is cancelled and its event counted as DWELL_NOT_MET
    /// (out of the cooldown: the person did not stay). Answers the offers dropped, oldest first.
    private static func dropHeldArrivals(
        user: String,
        activityID: String,
        leftAt: Date,
        rule: OfferRules.Rule,
        now: Date,
        in db: Database
    ) throws -> [OfferRecord] {
        // Held at least the dwell: an arrival within it is delivered after the leave, and after
        // now while it is still held.
        let held = try OfferRecord.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT * FROM offer WHERE activity_id = ? AND deliver_at > ? AND user_id = ? AND trigger = ?
                    AND snoozed = 0 AND answered_at IS NULL AND cancelled_at IS NULL ORDER BY occurred_at
                    """
            ),
            arguments: [activityID, max(leftAt, now).stored, user, Trigger.arrive.rawValue]
        )
        .filter { OfferRules.endsStayWithinDwell(leftAt: leftAt, arrivedAt: $0.occurredAt, rule: rule) }
        var dropped: [OfferRecord] = []
        for var offer in held {
            offer.cancelledAt = now
            try db.cachedStatement(sql: "UPDATE offer SET cancelled_at = ? WHERE id = ?")
                .execute(arguments: [now.stored, offer.id])
            try db.cachedStatement(
                sql: """
                    UPDATE location_event SET reason = ? WHERE user_id = ? AND activity_id = ? AND occurred_at = ?
                    AND (reason = 0 OR reason BETWEEN 8 AND 12) AND offer_id = ?
                    """
            ).execute(
                arguments: [
                    SuppressionReason.dwellNotMet.rawValue, user, activityID, offer.occurredAt.stored, offer.id,
                ]
            )
            dropped.append(offer)
        }
        return dropped
    }
}
