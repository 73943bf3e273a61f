import Foundation
import GRDB
import HearthStore
import HearthTestSupport
import Testing

@testable import TasksService

@Suite("Tasks records written column by column")
struct TasksRecordColumnsTests {
    private let first = Store.asStored(Date(timeIntervalSince1970: 1_800_000_000.123))
    private let second = Store.asStored(Date(timeIntervalSince1970: 1_800_000_060.5))

    @Test("an answer's prepared insert writes every column Codable names, and reads back equal")
    func checkIn() throws {
        let record = CheckInRecord(
            id: "c1",
            taskID: "t1",
            userID: "ana",
            promptID: "p1",
            clientRequestID: "r1",
            recordedAt: self.first,
            localDate: "2027-01-15",
            timeOfDay: 2,
            question: "How was it?",
            questionType: "scale",
            responseText: "Fine",
            energy: 4,
            mood: 3,
            focus: 5,
            insights: #"["slept well"]"#
        )
        let check = try ColumnWritesCheck.roundTrip(record, migrator: TaskMigrations.migrator)
        #expect(check.columns == check.codableKeys)
        #expect(check.readBack == record)
    }

    @Test("an offer's and a location event's prepared inserts write every column, and read back equal")
    func offerAndEvent() throws {
        let offer = OfferRecord(
            id: "o1",
            userID: "ana",
            activityID: "a1",
            title: "Gym",
            channel: 1,
            occurredAt: self.first,
            deliverAt: self.second,
            createdAt: self.first,
            snoozed: true,
            action: 2,
            answeredAt: self.second,
            cancelledAt: self.second,
            snoozedOfferID: "o0",
            trigger: 2
        )
        let offerCheck = try ColumnWritesCheck.roundTrip(offer, migrator: TaskMigrations.migrator)
        #expect(offerCheck.columns == offerCheck.codableKeys)
        #expect(offerCheck.readBack == offer)

        let event = LocationEventRecord(
            userID: "ana",
            clientEventID: "e1",
            activityID: "a1",
            trigger: 2,
            occurredAt: self.first,
            receivedAt: self.second,
            reason: 3,
            offerID: "o1"
        )
        let eventCheck = try ColumnWritesCheck.roundTrip(event, migrator: TaskMigrations.migrator)
        #expect(eventCheck.columns == eventCheck.codableKeys)
        #expect(eventCheck.readBack == event)
    }

    @Test("an activity, its rule and the preferences read by position equal what GRDB reads by name")
    func positionalReads() throws {
        let activity = ActivityRecord(
            id: "a1",
            userID: "ana",
            title: "Gym",
            repeatKind: 1,
            priority: 2,
            createdAt: self.first,
            updatedAt: self.second,
            lastCompletedAt: self.second
        )
        let rule = RuleRecord(
            activityID: "a1",
            label: "Gym",
            latitude: 40.7128,
            longitude: -74.006,
            radiusM: 150,
            trigger: 1,
            delayMinutes: 5,
            cooldownMinutes: 90,
            onlyIfIncomplete: true,
            enabled: true,
            updatedAt: self.first,
            minDwellMinutes: 15
        )
        let preferences = PreferencesRecord(
            userID: "ana",
            enabled: true,
            dailyCap: 5,
            minSpacingMinutes: 30,
            defaultCooldownMinutes: 120,
            quietStart: 1320,
            quietEnd: 420,
            timeZone: "America/New_York",
            updatedAt: self.second
        )
        let queue = try DatabaseQueue()
        try TaskMigrations.migrator.migrate(queue)
        let read = try queue.write { db in
            try activity.insert(db)
            try rule.insert(db)
            try preferences.insert(db)
            return (
                try db.cachedStatement(sql: "\(ActivityRecord.selection) FROM activity")
                    .fetchOne(read: ActivityRecord.init(columns:)),
                try db.cachedStatement(sql: "\(RuleRecord.selection) FROM activity_rule")
                    .fetchOne(read: RuleRecord.init(columns:)),
                try db.cachedStatement(sql: "\(PreferencesRecord.selection) FROM offer_preferences")
                    .fetchOne(read: PreferencesRecord.init(columns:))
            )
        }
        #expect(read.0 == activity)
        #expect(read.1 == rule)
        #expect(read.2 == preferences)
        for (selection, record) in [
            (ActivityRecord.selection, try ColumnWritesCheck.codableKeys(activity)),
            (RuleRecord.selection, try ColumnWritesCheck.codableKeys(rule)),
            (PreferencesRecord.selection, try ColumnWritesCheck.codableKeys(preferences)),
        ] {
            #expect(
                Set(
                    selection.dropFirst("SELECT ".count).split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespacesAndNewlines)
                    }
                ) == record,
                "every column Codable names is selected"
            )
        }
    }

    @Test("a prompt read by position is the prompt written, every field; the selection names every column")
    func promptByPosition() throws {
        let prompt = PromptRecord(
            id: "p-1",
            taskID: "t-1",
            userID: "ana",
            day: 2,
            localDate: "2026-06-02",
            localTime: "19:30",
            timeOfDay: 3,
            scheduledAt: self.first,
            expiresAt: self.second,
            question: "How was it?",
            context: "Day 2 of 3",
            questionType: "evening_reflection",
            priority: 0.7,
            status: "responded",
            respondedAt: self.first.addingTimeInterval(1),
            dismissedAt: self.first.addingTimeInterval(2),
            cancelledAt: self.first.addingTimeInterval(3),
            notifyAt: self.first.addingTimeInterval(4),
            pushedAt: self.first.addingTimeInterval(5)
        )
        let queue = try DatabaseQueue()
        try TaskMigrations.migrator.migrate(queue)
        let read = try queue.writeWithoutTransaction { db in
            // A prompt belongs to a task (a foreign key): its reading alone is checked here.
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try prompt.insert(db)
            return try db.cachedStatement(sql: "\(PromptRecord.selection) FROM prompt")
                .fetchOne(read: PromptRecord.init(columns:))
        }
        #expect(read == prompt)
        let selected = Set(
            PromptRecord.selection.dropFirst("SELECT ".count).split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
        )
        #expect(selected == (try ColumnWritesCheck.codableKeys(prompt)))
    }
}
