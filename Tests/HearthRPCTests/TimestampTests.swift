import Foundation
import HearthContracts
import HearthRPC
import SwiftProtobuf
import Testing

@Suite("Timestamps on the wire")
struct TimestampTests {
    @Test("a date goes on the wire to the millisecond, with no binary fraction left over")
    func milliseconds() {
        // 2026-11-22 21:55:31.444 UTC, as a store reads it back: not exactly .444 as a Double.
        let stored = Date(timeIntervalSinceReferenceDate: 817_163_731.444)
        #expect(Google_Protobuf_Timestamp(date: stored).nanos != 444_000_000, "the case this exists for")
        let wire = Google_Protobuf_Timestamp(millisecondsOf: stored)
        #expect(wire.seconds == 1_795_470_931 && wire.nanos == 444_000_000)
        #expect(Google_Protobuf_Timestamp(millisecondsOf: Date(timeIntervalSince1970: 0.0004)).nanos == 0)
        #expect(Google_Protobuf_Timestamp(millisecondsOf: Date(timeIntervalSince1970: 0.0006)).nanos == 1_000_000)
        let before1970 = Google_Protobuf_Timestamp(millisecondsOf: Date(timeIntervalSince1970: -1.5))
        #expect(before1970.seconds == -2 && before1970.nanos == 500_000_000)
        let wholeSecond = Google_Protobuf_Timestamp(millisecondsOf: Date(timeIntervalSince1970: -2))
        #expect(wholeSecond.seconds == -2 && wholeSecond.nanos == 0)
    }

    @Test("a request's time is checked against the Timestamp range: year 1 to 9999, nanos below a second")
    func validRange() throws {
        func check(_ seconds: Int64, _ nanos: Int32 = 0) -> Bool {
            var timestamp = Google_Protobuf_Timestamp()
            timestamp.seconds = seconds
            timestamp.nanos = nanos
            return (try? FieldChecks.timestamp(timestamp, field: "at").get()) != nil
        }
        #expect(check(-62_135_596_800), "0001-01-01T00:00:00Z")
        #expect(!check(-62_135_596_801))
        #expect(check(253_402_300_799), "9999-12-31T23:59:59Z")
        #expect(check(253_402_300_798, 999_999_999))
        // A fraction of the last second would be the year 10000 as a Date or a stored millisecond.
        #expect(!check(253_402_300_799, 1) && !check(253_402_300_799, 999_999_999))
        #expect(!check(253_402_300_800))
        #expect(!check(0, 1_000_000_000) && !check(0, -1))
        // Milliseconds sent as seconds: year 58,000 or so.
        let violation = FieldChecks.timestamp(Google_Protobuf_Timestamp(seconds: 1_773_403_200_000), field: "ends_at")
        #expect(throws: FieldViolation.self) { try violation.get() }
        let missing = FieldChecks.requiredTimestamp(Google_Protobuf_Timestamp(), isSet: false, field: "ends_at")
        #expect(throws: FieldViolation(field: "ends_at", description: "is required")) { try missing.get() }
    }
}
