import Foundation
import Testing

@testable import HearthCore

/// Local times on DST nights that are not the usual 02:00 one-hour shift: a skipped and a
/// repeated midnight (Havana) and half-hour shifts (Lord Howe). The rule under test is the one
/// ``LocalDate/instant(hour:minute:in:)`` documents: a time the clocks skip moves to the first
/// minute after the gap; a time that occurs twice is its first occurrence. Expected instants
/// computed with Python's zoneinfo.
@Suite("Local times at unusual DST transitions")
struct LocalTimeBoundaryTests {
    let havana = TimeZone(identifier: "America/Havana")!
    let lordHowe = TimeZone(identifier: "Australia/Lord_Howe")!

    private func instant(_ date: String, _ hour: Int, _ minute: Int, in zone: TimeZone) -> Date {
        LocalDate(date)!.instant(hour: hour, minute: minute, in: zone)
    }

    @Test("Havana 2026-03-08 skips 00:00-00:59: 00:30 moves to 01:00 CDT, the first minute after the gap")
    func havanaSkippedMidnight() {
        let firstAfterGap = Date(timeIntervalSince1970: 1_772_946_000)  // 01:00 CDT = 05:00 UTC
        #expect(self.instant("2026-03-08", 0, 30, in: self.havana) == firstAfterGap)
        #expect(self.instant("2026-03-08", 0, 0, in: self.havana) == firstAfterGap)
        #expect(self.instant("2026-03-08", 0, 59, in: self.havana) == firstAfterGap)
        #expect(self.instant("2026-03-08", 1, 0, in: self.havana) == firstAfterGap)
        #expect(self.instant("2026-03-08", 1, 30, in: self.havana) == Date(timeIntervalSince1970: 1_772_947_800))
        // The last minute before the gap belongs to the day before: 23:59 CST = 04:59 UTC.
        #expect(self.instant("2026-03-07", 23, 59, in: self.havana) == Date(timeIntervalSince1970: 1_772_945_940))
        // The day itself starts after the gap.
        #expect(LocalDate("2026-03-08")!.start(in: self.havana) == firstAfterGap)
    }

    @Test("Havana 2026-11-01 repeats 00:00-00:59: each is its first occurrence (CDT)")
    func havanaRepeatedMidnight() {
        // 00:00 CDT = 04:00 UTC; the second 00:00 (CST) would be 05:00 UTC.
        #expect(self.instant("2026-11-01", 0, 0, in: self.havana) == Date(timeIntervalSince1970: 1_793_505_600))
        #expect(self.instant("2026-11-01", 0, 30, in: self.havana) == Date(timeIntervalSince1970: 1_793_507_400))
        #expect(self.instant("2026-11-01", 0, 59, in: self.havana) == Date(timeIntervalSince1970: 1_793_509_140))
        // After the repeat: 01:00 CST = 06:00 UTC.
        #expect(self.instant("2026-11-01", 1, 0, in: self.havana) == Date(timeIntervalSince1970: 1_793_512_800))
        #expect(LocalDate("2026-11-01")!.start(in: self.havana) == Date(timeIntervalSince1970: 1_793_505_600))
    }

    @Test("Lord Howe 2026-10-04 jumps from 02:00 to 02:30: 02:15 moves to 02:30 (+11:00)")
    func lordHoweHalfHourGap() {
        let firstAfterGap = Date(timeIntervalSince1970: 1_791_041_400)  // 02:30 +11:00 = 15:30 UTC on the 3rd
        #expect(self.instant("2026-10-04", 2, 15, in: self.lordHowe) == firstAfterGap)
        #expect(self.instant("2026-10-04", 2, 0, in: self.lordHowe) == firstAfterGap)
        #expect(self.instant("2026-10-04", 2, 29, in: self.lordHowe) == firstAfterGap)
        #expect(self.instant("2026-10-04", 2, 30, in: self.lordHowe) == firstAfterGap)
        // The last minute before the gap: 01:59 +10:30 = 15:29 UTC.
        #expect(self.instant("2026-10-04", 1, 59, in: self.lordHowe) == Date(timeIntervalSince1970: 1_791_041_340))
    }

    @Test("Lord Howe 2026-04-05 repeats 01:30-01:59: each is its first occurrence (+11:00)")
    func lordHoweHalfHourRepeat() {
        // 01:30 +11:00 = 14:30 UTC on the 4th; the second 01:30 (+10:30) would be 15:00 UTC.
        #expect(self.instant("2026-04-05", 1, 30, in: self.lordHowe) == Date(timeIntervalSince1970: 1_775_313_000))
        #expect(self.instant("2026-04-05", 1, 59, in: self.lordHowe) == Date(timeIntervalSince1970: 1_775_314_740))
        // Just before and just after the repeated half hour.
        #expect(self.instant("2026-04-05", 1, 29, in: self.lordHowe) == Date(timeIntervalSince1970: 1_775_312_940))
        #expect(self.instant("2026-04-05", 2, 0, in: self.lordHowe) == Date(timeIntervalSince1970: 1_775_316_600))
    }
}
