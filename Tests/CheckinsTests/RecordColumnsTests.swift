import Foundation
import HearthStore
import HearthTestSupport
import Testing

@testable import CheckinsService

@Suite("Checkins records written column by column")
struct CheckinsRecordColumnsTests {
    @Test("a check-in's prepared insert writes every column Codable names, and reads back equal")
    func checkIn() throws {
        let record = CheckInRecord(
            id: "c1",
            sessionID: "s1",
            submitterUserID: "sam",
            caption: "Walk done",
            capturedAt: Store.asStored(Date(timeIntervalSince1970: 1_800_000_000.123)),
            createdAt: Store.asStored(Date(timeIntervalSince1970: 1_800_000_060.5)),
            photoAltText: "The dog",
            viewedAt: Store.asStored(Date(timeIntervalSince1970: 1_800_000_120.001)),
            clientRequestID: "r1",
            photoFormat: "jpeg",
            photoWidth: 1600,
            photoHeight: 1200,
            photoBytes: 250_000
        )
        let check = try ColumnWritesCheck.roundTrip(record, migrator: CheckinMigrations.migrator)
        #expect(check.columns == check.codableKeys)
        #expect(check.readBack == record)
    }
}
