import Foundation
import HearthContracts
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
}
