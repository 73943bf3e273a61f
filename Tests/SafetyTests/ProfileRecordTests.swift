import Foundation
import GRDB
import HearthStore
import Testing

@testable import SafetyService

@Suite("Profile records")
struct ProfileRecordTests {
    @Test("a profile with a different value in every field reads back as written")
    func roundTrip() throws {
        let queue = try DatabaseQueue()
        let keys = DataKeys.random()
        try SafetyMigrations.migrator(keys: keys).migrate(queue)
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let profile = ProfileRecord(
            userID: "mei",
            name: "Mei",
            email: "mei@example.com",
            thresholdHours: 48,
            language: "zh-Hant",
            timeZone: "Asia/Taipei",
            reminderEnabled: true,
            reminderHour: 7,
            reminderMinute: 45,
            pushToken: "token",
            countActivity: false,
            isActive: false,
            periodStart: start,
            lastCheckInAt: start + 1,
            snoozes: 2,
            snoozesInARow: 3,
            pausedUntil: start + 2,
            epoch: 11,
            checkInEpoch: 9,
            nextDueAt: start + 3,
            createdAt: start + 4,
            updatedAt: start + 5
        )
        var empty = profile
        empty.userID = "lin"
        empty.lastCheckInAt = nil
        empty.pausedUntil = nil
        empty.nextDueAt = nil
        try queue.write { db in
            try profile.save(in: db, sealingWith: keys)
            try empty.save(in: db, sealingWith: keys)
        }
        let read = try queue.read { db in
            try db.cachedStatement(sql: "\(ProfileRecord.selection) FROM profile ORDER BY user_id")
                .fetchAll { try ProfileRecord(columns: $0, keys: keys) }
        }
        #expect(read == [empty, profile])
        // One value for each column name (encoding zips the two lists).
        #expect(try profile.columnValues(sealingWith: keys).count == ProfileRecord.columnNames.count)
    }
}
