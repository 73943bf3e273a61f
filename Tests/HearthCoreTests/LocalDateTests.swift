import Foundation
import HearthCore
import Testing

@Suite("Local dates and times")
struct LocalDateTests {
    let losAngeles = TimeZone(identifier: "America/Los_Angeles")!

    @Test("parsing accepts real dates only")
    func parsing() {
        #expect(LocalDate("2026-02-28")?.description == "2026-02-28")
        #expect(LocalDate("2028-02-29") != nil)
        for bad in ["2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026/01/01", "", "2026-01-01T00"] {
            #expect(LocalDate(bad) == nil, "\(bad)")
        }
    }

    @Test("whole days across DST: 23- and 25-hour days are one day each")
    func days() {
        let before = LocalDate("2026-03-07")!
        #expect(before.adding(days: 1).description == "2026-03-08")
        #expect(before.days(to: LocalDate("2026-11-02")!) == 240)
        let dstDay = LocalDate("2026-03-08")!
        #expect(
            dstDay.adding(days: 1).start(in: self.losAngeles).timeIntervalSince(dstDay.start(in: self.losAngeles)) == 23
                * 3600
        )
        let fallBack = LocalDate("2026-11-01")!
        #expect(
            fallBack.adding(days: 1).start(in: self.losAngeles).timeIntervalSince(fallBack.start(in: self.losAngeles))
                == 25 * 3600
        )
    }

    @Test("a local time in a DST gap moves to the first minute after it; one that occurs twice is the first")
    func instants() {
        let gap = LocalDate("2026-03-08")!.instant(hour: 2, minute: 30, in: self.losAngeles)
        #expect(gap == Date(timeIntervalSince1970: 1_772_964_000))  // 03:00 PDT = 10:00 UTC
        let twice = LocalDate("2026-11-01")!.instant(hour: 1, minute: 30, in: self.losAngeles)
        #expect(twice == Date(timeIntervalSince1970: 1_793_521_800))  // 01:30 PDT = 08:30 UTC
        let plain = LocalDate("2026-01-12")!.instant(hour: 22, minute: 0, in: self.losAngeles)
        #expect(plain == Date(timeIntervalSince1970: 1_768_284_000))
        #expect(TimeZone(iana: "PST") == nil)
        #expect(TimeZone(iana: "Asia/Taipei") != nil)
    }
}
