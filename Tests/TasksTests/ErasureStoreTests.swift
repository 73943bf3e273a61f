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

@Suite("Tasks: erasing a user from the store", .timeLimit(.minutes(1)))
struct ErasureStoreTests {
    /// Every table of the tasks process's store that holds users' rows, with how to count one
    /// user's rows in it (the one argument: the user).
    static let ownership: [(table: String, count: String)] = [
        ("task", "SELECT COUNT(*) FROM task WHERE user_id = ?"),
        ("prompt", "SELECT COUNT(*) FROM prompt WHERE user_id = ?"),
        ("check_in", "SELECT COUNT(*) FROM check_in WHERE user_id = ?"),
        ("activity", "SELECT COUNT(*) FROM activity WHERE user_id = ?"),
        (
            "activity_rule",
            "SELECT COUNT(*) FROM activity_rule WHERE activity_id IN (SELECT id FROM activity WHERE user_id = ?)"
        ),
        ("offer_preferences", "SELECT COUNT(*) FROM offer_preferences WHERE user_id = ?"),
        ("device_permissions", "SELECT COUNT(*) FROM device_permissions WHERE user_id = ?"),
        ("offer", "SELECT COUNT(*) FROM offer WHERE user_id = ?"),
        ("location_event", "SELECT COUNT(*) FROM location_event WHERE user_id = ?"),
        ("location_event_repeat", "SELECT COUNT(*) FROM location_event_repeat WHERE user_id = ?"),
        ("push_outbox", "SELECT COUNT(*) FROM push_outbox WHERE json_extract(message, '$.userID') = ?"),
        ("relay_outbox", "SELECT COUNT(*) FROM relay_outbox WHERE user_id = ?"),
    ]

    /// The tables that stay whatever is erased: GRDB's record of migrations, and the ledger of
    /// erasures (the erasure's own record, which the user reads while it runs).
    static let notUsers: Set<String> = ["grdb_migrations", "erasure"]

    /// `user`'s rows in each table of ``ownership``.
    static func rows(of user: String, in db: Database) throws -> [String: Int] {
        var rows: [String: Int] = [:]
        for (table, count) in Self.ownership {
            rows[table] = try Int.fetchOne(db, sql: count, arguments: [user]) ?? 0
        }
        return rows
    }

    @Test(
        "eraseUser deletes and counts every row of the user, nothing of others but the erasure's own calls; then 0"
    )
    func erasesOneUser() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let store = system.service.store.base
            let mei = try await system.create("mei", title: "Should I move to Lisbon?", days: 2)
            let kai = try await system.create("kai", title: "Should I sell the boat?", days: 2)
            // 09:30 in New York: both morning prompts are due, and their pushes were sent
            // (a sent push stays in the outbox, as it was).
            try await system.advance(to: at("2026-06-01T13:30:00Z"))
            var gyms: [String: String] = [:]
            for (user, created) in [("mei", mei), ("kai", kai)] {
                let (activities, gym) = try await system.useEveryPart(user, created)
                #expect(try await activities.reason(gym, event: "e-1") == nil, "the event made an offer")
                #expect(try await activities.reason(gym, event: "e-1") == .duplicateEvent, "a repeat, recorded")
                gyms[user] = gym
            }
            let tables = try await store.writer.read { db in
                try Set(
                    String.fetchAll(
                        db,
                        sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
                    )
                )
            }
            #expect(
                tables.subtracting(Self.notUsers) == Set(Self.ownership.map { $0.table }),
                "every table of the store is looked at"
            )
            let meiBefore = try await store.writer.read { db in try Self.rows(of: "mei", in: db) }
            let kaiBefore = try await store.writer.read { db in try Self.rows(of: "kai", in: db) }
            #expect(meiBefore.filter { $0.value == 0 }.isEmpty, "mei has rows in every table: \(meiBefore)")
            #expect(kaiBefore.filter { $0.value == 0 }.isEmpty, "kai has rows in every table: \(kaiBefore)")
            #expect(meiBefore["relay_outbox"] == 2 && meiBefore["check_in"] == 2 && meiBefore["prompt"] == 4)

            let erased = try await store.write { db in try TaskStore.eraseUser("mei", in: db) }

            let meiAfter = try await store.writer.read { db in try Self.rows(of: "mei", in: db) }
            let nothing = Dictionary(uniqueKeysWithValues: Self.ownership.map { ($0.table, 0) })
            #expect(meiAfter == nothing, "nothing is left of mei")
            #expect(erased == meiBefore.values.reduce(0, +), "every row that went is counted, and no other")
            // What hangs off mei's task and activity, looked up by their ids.
            let meiGym = try #require(gyms["mei"])
            let meiTask = mei.task.id
            let meiPush = TaskStore.pushID(mei.nextPrompt.id)
            let leftOfMei = try await store.writer.read { db in
                try [
                    ("SELECT COUNT(*) FROM activity_rule WHERE activity_id = ?", meiGym),
                    ("SELECT COUNT(*) FROM offer WHERE activity_id = ?", meiGym),
                    ("SELECT COUNT(*) FROM prompt WHERE task_id = ?", meiTask),
                    ("SELECT COUNT(*) FROM check_in WHERE task_id = ?", meiTask),
                    ("SELECT COUNT(*) FROM push_outbox WHERE id = ?", meiPush),
                ].map { query in try Int.fetchOne(db, sql: query.0, arguments: [query.1]) ?? -1 }
            }
            #expect(leftOfMei == [0, 0, 0, 0, 0], "rules, offers, prompts, check-ins, pushes")
            #expect(
                try await store.writer.read { db in try Self.rows(of: "kai", in: db) } == kaiBefore,
                "kai keeps every row"
            )

            // Nothing is left to erase.
            #expect(try await store.write { db in try TaskStore.eraseUser("mei", in: db) } == 0)

            // Through the services: mei finds nothing, kai everything.
            await expectCode(.notFound) { _ = try await system.task(mei.task.id, user: "mei") }
            #expect(try await Activities(system: system, user: "mei").pending().isEmpty)
            #expect(try await system.task(kai.task.id, user: "kai").checkIns.count == 2)
            let kaiGym = try #require(gyms["kai"])
            #expect(
                try await Activities(system: system, user: "kai").reason(kaiGym, event: "e-1") == .duplicateEvent,
                "kai's location events are still known"
            )
        }
    }

    /// Whether `text`'s UTF-8 bytes are anywhere in the tasks store's files (the database,
    /// its WAL and its shared memory) in `folder`.
    static func holds(_ text: String, in folder: URL) throws -> Bool {
        let needle = Data(text.utf8)
        return try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix("tasks.sqlite") }
            .contains { name in try Data(contentsOf: folder.appendingPathComponent(name)).range(of: needle) != nil }
    }

    @Test("an erased task's title is zeroed: after the erasure and a checkpoint, in neither the file nor its WAL")
    func erasedBytesGone() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let title = "Quillon Marchbanks axolotl diary"
            let kaiTitle = "Should I sell the boat?"
            let mei = try await system.create("mei", title: title, times: [TasksSystem.time(.morning)], days: 2)
            let kai = try await system.create("kai", title: kaiTitle, times: [TasksSystem.time(.morning)], days: 2)
            // The title is in the task, in each prompt's question, in the answered prompt's
            // check-in and in its push (sent: it stays in the outbox).
            try await system.advance(to: at("2026-06-01T13:30:00Z"))
            _ = try await system.respond(mei.nextPrompt.id, user: "mei")
            #expect(system.webhook.received.count == 2, "both morning pushes were sent")
            #expect(try Self.holds(title, in: system.folder), "the title was written to the files")
            #expect(try Self.holds(kaiTitle, in: system.folder))

            let store = system.service.store.base
            let erased = try await store.write { db in try TaskStore.eraseUser("mei", in: db) }
            #expect(erased > 0)
            // What the deleted rows held is zeroed in the pages now written; the WAL's older
            // frames still hold it until a checkpoint empties the WAL.
            try await store.writer.writeWithoutTransaction { db in
                _ = try db.checkpoint(.truncate)
            }
            #expect(try Self.holds(title, in: system.folder) == false, "the title is in neither the file nor its WAL")
            #expect(try Self.holds(kaiTitle, in: system.folder), "kai's task is still there")
            #expect(try await system.task(kai.task.id, user: "kai").task.title == kaiTitle)
        }
    }
}
