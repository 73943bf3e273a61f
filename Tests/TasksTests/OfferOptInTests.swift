import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

@Suite("Activities: opt-in, the phone's permissions, a minimum dwell", .timeLimit(.minutes(1)))
struct OfferOptInTests {
    @Test("offers are off until turned on, which needs a time zone; turning them off does not, and keeps the zone")
    func optIn() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            let gymID = try await a.create()
            try await a.rule(gymID)
            let defaults = try await a.service.getOfferPreferences(.init(), a.context)
            #expect(!defaults.enabled && defaults.timeZone == "UTC" && !defaults.hasPermissions)
            #expect(try await a.reason(gymID) == .disabled)
            #expect(try await a.service.listGeofences(.init(), a.context).geofences.isEmpty)

            // "Enable" without a zone: refused, naming why; nothing stored.
            var enable = Hearth_Tasks_V1_SetOfferPreferencesRequest()
            #expect(
                await violatedFields { _ = try await a.service.setOfferPreferences(enable, a.context) } == ["time_zone"]
            )
            enable.enabled = true
            do {
                _ = try await a.service.setOfferPreferences(enable, a.context)
                Issue.record("offers turned on without a zone")
            } catch {
                #expect("\(RPCError(answering: error))".contains("required to turn offers on"))
            }
            #expect(try await a.service.getOfferPreferences(.init(), a.context) == defaults)
            // "Not now": no zone needed.
            var notNow = Hearth_Tasks_V1_SetOfferPreferencesRequest()
            notNow.enabled = false
            #expect(try await a.service.setOfferPreferences(notNow, a.context).timeZone == "UTC")
            #expect(try await a.reason(gymID) == .disabled)

            try await a.preferences(zone: "Asia/Taipei")
            #expect(try await a.service.listGeofences(.init(), a.context).geofences.count == 1)
            #expect(try await a.reason(gymID) == nil, "on: an offer")
            // Off again without a zone keeps Taipei (the zone DAILY activities are counted in).
            let off = try await a.service.setOfferPreferences(notNow, a.context)
            #expect(!off.enabled && off.timeZone == "Asia/Taipei")
            notNow.timeZone = "Not/AZone"
            #expect(
                await violatedFields { _ = try await a.service.setOfferPreferences(notNow, a.context) } == ["time_zone"]
            )
        }
    }

    @Test("background offers need location always and notifications; foreground ones only location")
    func permissions() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(spacing: 0, cooldown: 1)
            var activities: [String] = []
            for index in 0..<8 {
                let id = try await a.create("Errand \(index)")
                try await a.rule(id)
                activities.append(id)
            }
            // Never reported: taken as allowed.
            #expect(try await a.reason(activities[0]) == nil)

            #expect(
                await violatedFields { _ = try await a.service.reportPermissions(.init(), a.context) }
                    == ["location", "notifications"]
            )
            #expect(
                await violatedFields { try await a.permissions(.locationAlways, .unspecified) }
                    == ["notifications"]
            )
            #expect(try await a.service.getOfferPreferences(.init(), a.context).hasPermissions == false)

            let reported = try await a.permissions(.locationWhenInUse, .notificationsAllowed)
            #expect(reported.location == .locationWhenInUse && reported.reportedAt.date == noon)
            #expect(try await a.reason(activities[1]) == .permissionMissing, "background needs always")
            guard case .offer(let inApp)? = try await a.report(activities[2], foreground: true).decision else {
                Issue.record("a foreground event while the app may use location made no offer")
                return
            }
            #expect(inApp.channel == .inApp)

            try await a.permissions(.locationAlways, .notificationsDenied)
            #expect(try await a.reason(activities[3]) == .permissionMissing, "background needs notifications")
            guard case .offer(let shown)? = try await a.report(activities[4], foreground: true).decision else {
                Issue.record("a foreground offer needs no notification permission")
                return
            }
            #expect(shown.channel == .inApp)

            try await a.permissions(.locationDenied, .notificationsAllowed)
            guard case .suppressed(let denied)? = try await a.report(activities[5], foreground: true).decision else {
                Issue.record("an offer with location denied")
                return
            }
            #expect(denied.reason == .permissionMissing && denied.detail.contains("location"))

            // Kept apart from the preferences, which SetOfferPreferences replaces whole.
            try await a.preferences(spacing: 0, cooldown: 1)
            let preferences = try await a.service.getOfferPreferences(.init(), a.context)
            #expect(preferences.permissions.location == .locationDenied)
            #expect(preferences.permissions.notifications == .notificationsAllowed)

            // A suppression for permissions came before the cooldown: the activity's next event,
            // once allowed, makes an offer at once.
            try await a.permissions(.locationAlways, .notificationsAllowed)
            #expect(try await a.reason(activities[1]) == nil)
            // Another user's permissions are theirs.
            let ben = Activities(system: system, user: "ben")
            #expect(try await ben.service.getOfferPreferences(.init(), ben.context).hasPermissions == false)
        }
    }

    @Test("a minimum dwell: 0-120 minutes, ARRIVE only; the offer is held that long, shown in the geofence")
    func dwellLimits() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let id = try await a.create()
            #expect(
                await violatedFields { try await a.rule(id, trigger: .arrive, dwell: 121) } == ["min_dwell_minutes"]
            )
            #expect(await violatedFields { try await a.rule(id, trigger: .leave, dwell: 5) } == ["min_dwell_minutes"])
            #expect(try await a.rule(id, trigger: .arrive, dwell: 120).rule.minDwellMinutes == 120)
            #expect(try await a.rule(id, trigger: .arrive, delay: 20, dwell: 10).rule.minDwellMinutes == 10)
            let geofence = try #require(try await a.service.listGeofences(.init(), a.context).geofences.first)
            #expect(geofence.minDwellMinutes == 10 && geofence.trigger == .arrive)
            // The longer of the delay and the dwell.
            guard case .offer(let delayed)? = try await a.report(id, .arrive).decision else {
                Issue.record("no offer")
                return
            }
            #expect(delayed.deliverAt.date == noon.addingTimeInterval(20 * 60))
            // A leave after the dwell, before the delivery: the stay counted; nothing dropped.
            try await system.advance(by: 10 * 60)
            let leave = try await a.report(id, .leave)
            #expect(leave.droppedOffers.isEmpty && a.outcome(leave) == .triggerMismatch)
            #expect(try await a.pending().isEmpty)
            try await system.advance(by: 10 * 60)
            #expect(try await a.pending().map(\.offerID) == [delayed.offerID])
        }
    }

    @Test("a leave within the dwell drops the held offer (DWELL_NOT_MET, out of the cooldown); at the dwell, kept")
    func dwell() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(cooldown: 60)
            let id = try await a.create()
            try await a.rule(id, trigger: .arrive, dwell: 10)
            guard case .offer(let held)? = try await a.report(id, .arrive, event: "in-1").decision else {
                Issue.record("no offer")
                return
            }
            #expect(held.deliverAt.date == noon.addingTimeInterval(600) && held.state == .scheduled)
            try await system.advance(by: 599)
            let leave = try await a.report(id, .leave, event: "out-1")
            #expect(leave.droppedOffers.map(\.offerID) == [held.offerID])
            #expect(leave.droppedOffers.map(\.state) == [.cancelled])
            #expect(a.outcome(leave) == .triggerMismatch, "the leave itself is no offer")
            // Reported again: nothing more is dropped.
            #expect(try await a.report(id, .leave, event: "out-1").droppedOffers.isEmpty)
            try await system.advance(by: 60)
            #expect(try await a.pending().isEmpty, "never delivered")

            // The short stay does not start the cooldown: the next arrival is offered.
            let arrivedAt = system.clock.now()
            guard case .offer(let stayed)? = try await a.report(id, .arrive, event: "in-2").decision else {
                Issue.record("the arrival after a short stay was cooled down")
                return
            }
            // Exactly the dwell later: the stay counted.
            try await system.advance(by: 600)
            #expect(try await a.report(id, .leave, event: "out-2").droppedOffers.isEmpty)
            #expect(try await a.pending().map(\.offerID) == [stayed.offerID])
            #expect(stayed.deliverAt.date == arrivedAt.addingTimeInterval(600))

            let stats = try await a.service.getOfferStats(
                .with {
                    $0.from = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(-60))
                    $0.to = Google_Protobuf_Timestamp(date: noon.addingTimeInterval(3600))
                },
                a.context
            )
            let suppressed = Dictionary(uniqueKeysWithValues: stats.suppressed.map { ($0.reason, $0.count) })
            #expect(stats.eligible == 1, "only the arrival that stayed")
            // The leaves, the repeated one too (answered as the first).
            #expect(suppressed[.dwellNotMet] == 1 && suppressed[.triggerMismatch] == 3, "\(suppressed)")
        }
    }

    @Test("a leave drops every arrival still held within its dwell, but not as a stale, future or unconfirmed event")
    func dwellLeaveCounts() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(spacing: 1, cooldown: 1)
            let id = try await a.create()
            try await a.rule(id, trigger: .arrive, dwell: 60)
            // Two arrivals two minutes apart (past the cooldown), both held for an hour.
            #expect(try await a.reason(id, .arrive, event: "in-1") == nil)
            try await system.advance(by: 120)
            #expect(try await a.reason(id, .arrive, event: "in-2") == nil)
            try await system.advance(by: 1800)
            // Not a leave to trust: from the future, stale (a second over 30 minutes old), or with
            // a position not surely outside the place.
            let now = system.clock.now()
            let inside = north(of: gym, 100)
            let doubtful: [(Date, (Double, Double, Double)?)] = [
                (now.addingTimeInterval(1), nil), (now.addingTimeInterval(-1801), nil),
                (now, (inside.0, inside.1, 10)),
            ]
            for (at, position) in doubtful {
                #expect(try await a.report(id, .leave, at: at, position: position).droppedOffers.isEmpty)
            }
            let outside = north(of: gym, 300)
            let leave = try await a.report(
                id,
                .leave,
                at: now.addingTimeInterval(-1800),
                position: (outside.0, outside.1, 10)
            )
            #expect(leave.droppedOffers.count == 2, "both arrivals of the short stay, 30 minutes old at the limit")
            try await system.advance(by: 3600)
            #expect(try await a.pending().isEmpty)

            // An arrival whose offer was delivered was made: a late leave no longer drops it.
            let arrivedAt = system.clock.now()
            #expect(try await a.reason(id, .arrive, event: "in-3") == nil)
            try await system.advance(by: 3600)
            #expect(try await a.pending().count == 1)
            let late = try await a.report(id, .leave, at: arrivedAt.addingTimeInterval(1800 + 60))
            #expect(late.droppedOffers.isEmpty)
            #expect(try await a.pending().count == 1)
        }
    }

    @Test("an arrival reported after a leave within its dwell is DWELL_NOT_MET; one after the dwell is offered")
    func dwellOutOfOrder() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences(cooldown: 1)
            let id = try await a.create()
            try await a.rule(id, trigger: .arrive, dwell: 15)
            #expect(try await a.reason(id, .leave, at: noon.addingTimeInterval(-60)) == .triggerMismatch)
            let late = try await a.report(id, .arrive, at: noon.addingTimeInterval(-15 * 60 + 1))
            #expect(a.outcome(late) == .dwellNotMet)
            #expect(try await a.reason(id, .arrive, at: noon.addingTimeInterval(-15 * 60 - 60)) == nil)
        }
    }
}

@Suite("Activities: the cooldown's index")
struct CooldownIndexTests {
    @Test("the look for an activity's nearest events goes down the partial index its condition matches")
    func plan() async throws {
        try await withTasksSystem(now: noon) { system in
            let plans = try await system.service.store.base.writer.read { db in
                try ActivityStore.nearestEventSQL.map { sql in
                    try Row.fetchAll(
                        db,
                        sql: "EXPLAIN QUERY PLAN \(sql)",
                        arguments: ["ana", "a-1", noon.stored]
                    ).map { row -> String in row["detail"] }.joined(separator: "; ")
                }
            }
            for plan in plans { #expect(plan.contains("location_event_by_activity"), "\(plan)") }
        }
    }
}

@Suite("Activities: offers opt-in on a store from before")
struct OptInMigrationTests {
    @Test("v10: the open offers of users who never turned offers on are cancelled; answered, expired and others' stay")
    func cancelsOpenOffers() throws {
        let queue = try DatabaseQueue()
        try TaskMigrations.migrator.migrate(queue, upTo: "v9: a task's language")
        // The migration reads SQLite's clock: the offers are placed around the real now.
        let recent = StoredDate(Date().addingTimeInterval(-3600))
        let expired = StoredDate(Date().addingTimeInterval(-25 * 3600))
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO offer_preferences (user_id, enabled, daily_cap, min_spacing_minutes,
                      default_cooldown_minutes, time_zone, updated_at)
                    VALUES ('chose', 1, 2, 360, 120, 'UTC', '2026-06-01 12:00:00.000')
                    """
            )
            for (id, user, answered, deliverAt) in [
                ("o-1", "never", false, recent), ("o-2", "never", true, recent), ("o-3", "chose", false, recent),
                ("o-4", "never", false, expired),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO offer (id, user_id, activity_id, title, channel, occurred_at, deliver_at, created_at,
                          snoozed, action, answered_at, trigger)
                        VALUES (?, ?, 'a-1', 'Gym', 2, ?, ?, ?, 0, ?, ?, 2)
                        """,
                    arguments: [id, user, deliverAt, deliverAt, deliverAt, answered ? 1 : nil, answered ? recent : nil]
                )
            }
        }
        try TaskMigrations.migrator.migrate(queue)
        let cancelled = try queue.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM offer WHERE cancelled_at IS NOT NULL ORDER BY id")
        }
        #expect(cancelled == ["o-1"])
        let stamp = try queue.read { db in
            try String.fetchOne(db, sql: "SELECT cancelled_at FROM offer WHERE id = 'o-1'")
        }
        #expect(
            stamp.flatMap { StoredDate.fromDatabaseValue($0.databaseValue) } != nil,
            "a date as the store keeps them"
        )
    }
}
