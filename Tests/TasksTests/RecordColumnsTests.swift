import Foundation
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
            snoozedOfferID: "o0"
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
}
