import Foundation
import Testing

@testable import HearthCore

@Suite("Local dates and times")
struct LocalDateTests {
    let losAngeles = TimeZone(identifier: "America/Los_Angeles")!

    @Test("parsing accepts real dates only")
    func parsing() {
        #expect(LocalDate("2026-02-28")?.description == "2026-02-28")
        #expect(LocalDate("2028-02-29") != nil)
        let bad = [
            "2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026/01/01", "", "2026-01-01T00",
            // Signs that Int(_:) would take, and digits that are not ASCII.
            "2026-+7-01", "2026-07-+1", "+026-07-01", "2026-٠٧-01",
        ]
        for bad in bad {
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

    @Test("day arithmetic agrees with the calendar across months, leap years and centuries")
    func dayArithmetic() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let origin = LocalDate("1999-12-31")!
        var noon = calendar.date(from: DateComponents(year: 1999, month: 12, day: 31, hour: 12))!
        for offset in 0..<(365 * 130) {
            let date = origin.adding(days: offset)
            #expect(date == LocalDate(noon, in: .gmt))
            #expect(origin.days(to: date) == offset)
            noon = calendar.date(byAdding: .day, value: 1, to: noon)!
        }
        #expect(LocalDate("2024-03-01")!.adding(days: -1).description == "2024-02-29")
        #expect(LocalDate("2100-03-01")!.adding(days: -1).description == "2100-02-28")
        #expect(LocalDate("1970-01-01")!.adding(days: -1).description == "1969-12-31")
    }

    @Test("dates are proleptic Gregorian throughout: no Julian days before 1582, the same parsed or computed")
    func prolepticGregorian() {
        #expect(LocalDate("1500-02-29") == nil, "1500 is no leap year in the Gregorian calendar")
        #expect(LocalDate("1582-10-10")?.description == "1582-10-10", "the days the Julian switch skipped exist")
        let instant = Date(timeIntervalSince1970: TimeInterval(LocalDate("1500-03-01")!.daysSinceEpoch * 86_400))
        #expect(LocalDate(instant, in: .gmt).description == "1500-03-01")
        #expect(LocalDate(Date(timeIntervalSince1970: -1), in: .gmt).description == "1969-12-31")
        let taipei = TimeZone(identifier: "Asia/Taipei")!
        #expect(LocalDate(Date(timeIntervalSince1970: 1_773_144_000), in: taipei).description == "2026-03-10")
        #expect(
            LocalDate(Date(timeIntervalSince1970: 1_773_144_000 + 4 * 3600), in: taipei).description == "2026-03-11"
        )
    }

    @Test(
        "in every known zone, on every day of 2026, a local time is the first instant that shows it, or the end of its gap"
    )
    func instantsEverywhere() {
        // 1.4 million cases: checked with plain comparisons and reported together, since an
        // expectation (and a label) for each would cost the rest of the suite seconds of CPU.
        var checked = 0
        var gaps = 0
        var failures: [String] = []
        for identifier in TimeZone.knownTimeZoneIdentifiers {
            guard let zone = TimeZone(identifier: identifier) else { continue }
            // What the zone's clocks show at `instant`, as seconds since 1970 read as UTC.
            func reading(_ instant: Date) -> TimeInterval {
                instant.timeIntervalSince1970 + TimeInterval(zone.secondsFromGMT(for: instant))
            }
            var date = LocalDate("2026-01-01")!
            while date.year == 2026 {
                for (hour, minute) in [(0, 0), (0, 30), (1, 30), (2, 0), (2, 15), (2, 30), (3, 0), (9, 0), (23, 59)] {
                    let wall = TimeInterval(date.daysSinceEpoch * 86_400 + hour * 3600 + minute * 60)
                    let instant = date.instant(hour: hour, minute: minute, in: zone)
                    let holds: Bool
                    if reading(instant) == wall {
                        // The first time it shows: not half an hour, an hour or two earlier too.
                        holds = [1800.0, 3600, 7200].allSatisfy { reading(instant - $0) != wall }
                    } else {
                        // Skipped: the first instant after the jump over it.
                        holds = reading(instant - 1) < wall && wall < reading(instant)
                        gaps += 1
                    }
                    if !holds && failures.count < 20 {
                        failures.append("\(identifier) \(date) \(hour):\(minute): \(instant)")
                    }
                    checked += 1
                }
                date = date.adding(days: 1)
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(checked > 1_000_000 && gaps > 50)
    }
}

@Suite("Zero-padded numbers")
struct ZeroPaddedTests {
    @Test("as String(format:) writes them, for every width and sign met here")
    func asFormat() {
        for value in [0, 7, 9, 10, 42, 99, 100, 999, 1000, 9999, 12345, -1, -42] {
            for width in [0, 1, 2, 4] {
                #expect(value.zeroPadded(to: width) == String(format: "%0\(width)d", value), "\(value), \(width)")
            }
        }
        #expect(LocalDate(year: 5, month: 1, day: 9)?.description == "0005-01-09")
    }
}
