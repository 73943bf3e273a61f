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

@Suite("Activities: history")
struct ActivityHistoryTests {
    @Test("location events, repeats and offers older than 400 days are deleted, user by user, in bounded transactions")
    func prunesOldHistory() async throws {
        let store = ActivityStore(base: try TaskStore(location: .inMemory).base)
        let now = at("2027-06-01T12:00:00Z")
        let old = now.addingTimeInterval(-ActivityStore.historyRetention - 1)
        let kept = now.addingTimeInterval(-ActivityStore.historyRetention + 60)
        try await store.base.writer.write { db in
            for user in ["ana", "bo", "cy"] {
                for (index, time) in [old, old, old, old, kept].enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO location_event (user_id, client_event_id, activity_id, trigger, occurred_at,
                                received_at, reason)
                            VALUES (?, ?, 'a', 1, ?, ?, 0)
                            """,
                        arguments: [user, "e\(index)", time, time]
                    )
                    try db.execute(
                        sql: """
                            INSERT INTO location_event_repeat (user_id, client_event_id, occurred_at, received_at)
                            VALUES (?, ?, ?, ?)
                            """,
                        arguments: [user, "e\(index)", time, time]
                    )
                    try db.execute(
                        sql: """
                            INSERT INTO offer (id, user_id, activity_id, title, channel, occurred_at, deliver_at,
                                created_at, snoozed)
                            VALUES (?, ?, 'a', 'Gym', 1, ?, ?, ?, 0)
                            """,
                        arguments: ["\(user)-\(index)", user, time, time, time]
                    )
                }
            }
        }
        // Three rows a transaction: every user is cut short once and taken up again.
        let deleted = try await store.pruneHistory(now: now, usersPerBatch: 2, rowsPerTransaction: 3)
        #expect(deleted == ["location_event": 12, "location_event_repeat": 12, "offer": 12])
        let left = try await store.base.writer.read { db in
            try ["location_event", "location_event_repeat", "offer"].map { table in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE user_id IN ('ana', 'bo', 'cy')") ?? 0
            }
        }
        #expect(left == [3, 3, 3], "each user's recent row of each table stays")
        #expect(try await store.pruneHistory(now: now).values.allSatisfy { $0 == 0 }, "nothing more to delete")
    }
}
