import Foundation
import GRDB
import Testing

@testable import HearthStore

@Suite("Stored dates")
struct StoredDateTests {
    /// What GRDB itself stores for `date`.
    private func grdb(_ date: Date) -> DatabaseValue { date.databaseValue }

    @Test("a StoredDate binds the very text GRDB's formatter writes, for every kind of date")
    func sameTextAsGRDB() async {
        var generator = SystemRandomNumberGenerator()
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -0.0005),
            Date(timeIntervalSince1970: 951_782_399.999),  // 2000-02-28 23:59:59.999
            Date(timeIntervalSince1970: 951_868_800),  // 2000-03-01, after a 400-year leap day
            Date(timeIntervalSince1970: 4_107_542_400),  // 2100-03-01: 2100 is no leap year
            Date(timeIntervalSince1970: -2_208_988_800),  // 1900-01-01, the first date done by hand
            Date(timeIntervalSince1970: 253_402_300_799.999),  // 9999-12-31 23:59:59.999, the last
            Date(timeIntervalSince1970: -2_208_988_800.001),  // before: GRDB's formatter does it
            Date(timeIntervalSince1970: 253_402_300_800),  // after: likewise
            Date(timeIntervalSince1970: 253_402_300_799.9996),  // rounds into the year 10000: likewise
            Date(timeIntervalSince1970: -12_219_292_800),  // 1582-10-15, the Gregorian switch
            // Halves of a millisecond round up, also before 1970 (found by the random dates).
            Date(timeIntervalSince1970: -2_188_130_109.8995),
            Date(timeIntervalSince1970: -426_724_256.444_5),
            Date(timeIntervalSince1970: 1_763_800_000.000_5),
        ]
        for _ in 0..<30_000 {
            let seconds = Double.random(in: -2_208_988_800...4_102_444_800, using: &generator)
            dates.append(Date(timeIntervalSince1970: seconds))
            // Whole milliseconds, as the stores keep them (Store.asStored), whose Double is often
            // a hair below the exact value.
            dates.append(Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000))
            dates.append(Date(timeIntervalSince1970: (seconds * 1000).rounded(.down) / 1000 + 0.000_999_9))
        }
        var mismatches: [String] = []
        for (index, date) in dates.enumerated() {
            if StoredDate(date).databaseValue != self.grdb(date) {
                mismatches.append(
                    "\(date.timeIntervalSince1970): \(StoredDate(date).databaseValue) vs \(self.grdb(date))"
                )
            }
            // Give the test pool's threads back now and then: the tests beside this one wait
            // for their schedulers with a bound.
            if index % 1_000 == 0 { await Task.yield() }
        }
        #expect(mismatches.count == 0, "\(mismatches.prefix(5))")
    }

    @Test("a stored text reads back as the very date GRDB's parser gives")
    func readsAsGRDB() async {
        var generator = SystemRandomNumberGenerator()
        var texts = [
            "1900-01-01 00:00:00.000", "1970-01-01 00:00:00.000", "1969-12-31 23:59:59.999",
            "2000-02-29 12:00:00.500", "2100-02-28 23:59:59.999", "9999-12-31 23:59:59.999",
            "2026-03-08 10:00:00.001", "2026-11-01 08:59:59.999",
            // Near Foundation's reference date, where how the parts are added up shows.
            "2000-12-31 23:59:59.999", "2001-01-01 00:00:00.001", "2000-12-27 13:07:41.123", "2001-01-04 22:22:22.222",
        ]
        for _ in 0..<30_000 {
            let seconds = Double.random(in: -2_208_988_800...253_402_300_799, using: &generator)
            texts.append(StoredDate.text(of: Date(timeIntervalSince1970: seconds))!)
        }
        for _ in 0..<10_000 {
            // Within 400 days of 2001-01-01, every time.
            let seconds = Double.random(in: 943_920_000...1_012_953_600, using: &generator)
            texts.append(StoredDate.text(of: Date(timeIntervalSince1970: seconds))!)
        }
        var mismatches: [String] = []
        for (index, text) in texts.enumerated() {
            let ours = StoredDate.date(ofText: text)
            let theirs = Date.fromDatabaseValue(text.databaseValue)
            if ours == nil || ours != theirs {
                mismatches.append("\(text): \(String(describing: ours)) vs \(String(describing: theirs))")
            }
            if index % 1_000 == 0 { await Task.yield() }
        }
        #expect(mismatches.count == 0, "\(mismatches.prefix(5))")
    }

    @Test("other shapes and rolled-over fields are left to GRDB")
    func readsOnlyItsOwnShape() {
        for text in [
            "2026-02-29 00:00:00.000", "2026-04-31 00:00:00.000", "2026-13-01 00:00:00.000",
            "2026-01-01 24:00:00.000", "2026-01-01 00:60:00.000", "1899-12-31 23:59:59.999",
            "2026-01-01 00:00:00", "2026-01-01T00:00:00.000", "2026-01-01 00:00:00.00x", "12026-01-01 00:00:00.00",
        ] {
            #expect(StoredDate.date(ofText: text) == nil, "\(text)")
        }
        // Read by GRDB all the same.
        #expect(
            StoredDate.fromDatabaseValue("2026-01-01 00:00:00".databaseValue)?.date
                == Date(timeIntervalSince1970: 1_767_225_600)
        )
    }

    @Test("outside 1900-9999 the text is GRDB's own")
    func outsideTheFastRange() {
        #expect(StoredDate.text(of: Date(timeIntervalSince1970: -2_208_988_800.001)) == nil)
        #expect(StoredDate.text(of: Date(timeIntervalSince1970: 253_402_300_800)) == nil)
        // Rounds up into the year 10000: GRDB's.
        #expect(StoredDate.text(of: Date(timeIntervalSince1970: 253_402_300_799.9996)) == nil)
        #expect(StoredDate.text(of: Date(timeIntervalSince1970: 253_402_300_799.999)) == "9999-12-31 23:59:59.999")
        #expect(StoredDate.text(of: Date(timeIntervalSince1970: 0)) == "1970-01-01 00:00:00.000")
    }

    @Test("a stored date reads back as the Date GRDB reads back, and sorts the same in SQL")
    func readsBack() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a, b)")
            for seconds in [0, 1_763_800_000.123, 1_763_800_000.1239, 4_000_000_000.5] {
                let date = Date(timeIntervalSince1970: seconds)
                try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [date.stored, date])
            }
            let rows = try Row.fetchAll(db, sql: "SELECT a, b, a = b AS same FROM t ORDER BY a")
            #expect(rows.allSatisfy { $0["same"] == true })
            #expect(
                try StoredDate.fetchAll(db, sql: "SELECT a FROM t").map(\.date)
                    == (try Date.fetchAll(db, sql: "SELECT b FROM t"))
            )
        }
    }
}
