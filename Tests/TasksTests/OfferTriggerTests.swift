import Foundation
import GRDB
import HearthContracts
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// An offer says which trigger made it, as the plan's notification payload does.
@Suite("Activities: the trigger an offer was made on", .timeLimit(.minutes(1)))
struct OfferTriggerTests {
    @Test("an offer made on arriving says ARRIVE, one made on leaving LEAVE; a snooze keeps its offer's")
    func offersSayTheirTrigger() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let gymID = try await a.create("Gym workout")
            try await a.rule(gymID, trigger: .arrive)
            let shopID = try await a.create("Groceries")
            try await a.rule(shopID, trigger: .leave, label: "Shop")

            let arrived = try await a.report(gymID, .arrive).offer
            // Past the minimum spacing between offers (1 minute here).
            try await system.advance(by: 120)
            let left = try await a.report(shopID, .leave).offer
            #expect(arrived.trigger == .arrive)
            #expect(left.trigger == .leave)
            let pending = try await a.pending()
            #expect(Set(pending.map(\.trigger)) == [.arrive, .leave])

            let snoozed = try await a.respond(arrived.offerID, .snooze15).snoozedOffer
            #expect(snoozed.snoozed && snoozed.trigger == .arrive)
        }
    }

    @Test("offers stored before the trigger was kept take their event's, and a snooze chain its first offer's")
    func earlierOffersMigrated() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-offer-trigger-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pool = try DatabasePool(path: folder.appendingPathComponent("tasks.sqlite").path)
        try TaskMigrations.migrator.migrate(pool, upTo: "v6: erasures erase checkins' nests before routines'")
        try await pool.write { db in
            // o1 made on LEAVE (2), snoozed into o2, snoozed into o3; o4 made on ARRIVE (1).
            for (id, snoozedInto) in [("o1", "o2"), ("o2", "o3"), ("o3", nil), ("o4", nil)] as [(String, String?)] {
                try db.execute(
                    sql: """
                        INSERT INTO offer (id, user_id, activity_id, title, channel, occurred_at, deliver_at,
                            created_at, snoozed, snoozed_offer_id)
                        VALUES (?, 'ana', 'a1', 'Gym', 1, 0, 0, 0, ?, ?)
                        """,
                    arguments: [id, id == "o2" || id == "o3", snoozedInto]
                )
            }
            for (event, trigger, offer) in [("e1", 2, "o1"), ("e4", 1, "o4")] {
                try db.execute(
                    sql: """
                        INSERT INTO location_event (user_id, client_event_id, activity_id, trigger, occurred_at,
                            received_at, reason, offer_id)
                        VALUES ('ana', ?, 'a1', ?, 0, 0, 0, ?)
                        """,
                    arguments: [event, trigger, offer]
                )
            }
        }
        try TaskMigrations.migrator.migrate(pool)
        let triggers = try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, trigger FROM offer ORDER BY id").map {
                "\($0["id"] as String)=\($0["trigger"] as Int)"
            }
        }
        #expect(triggers == ["o1=2", "o2=2", "o3=2", "o4=1"])
        try pool.close()
    }
}
