public import Foundation
public import GRDB

/// A date bound to a statement exactly as GRDB stores a `Date` — the text
/// "yyyy-MM-dd HH:mm:ss.SSS" in UTC — but written with integer arithmetic instead of GRDB's
/// shared `DateFormatter`, which cost 7% of the safety service's CPU on the heartbeat path.
/// Columns written either way compare and read back the same (checked against GRDB for every
/// kind of date in HearthStoreTests).
public struct StoredDate: DatabaseValueConvertible, Sendable, Equatable {
    public var date: Date

    public init(_ date: Date) {
        self.date = date
    }

    public var databaseValue: DatabaseValue {
        Self.text(of: self.date).map { $0.databaseValue } ?? self.date.databaseValue
    }

    /// Reads GRDB's own text (1900-9999) with integer arithmetic, everything else with GRDB.
    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> StoredDate? {
        if case .string(let text) = dbValue.storage, let date = Self.date(ofText: text) {
            return StoredDate(date)
        }
        return Date.fromDatabaseValue(dbValue).map(StoredDate.init)
    }

    /// The date of a text "yyyy-MM-dd HH:mm:ss.SSS" (UTC) from 1900 to 9999, the very value
    /// GRDB's parser gives, without its calendar (which cost 6% of the heartbeat's writer);
    /// nil for any other shape or range, and for fields out of range (GRDB's calendar would roll
    /// them over).
    static func date(ofText text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 23, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
                bytes[10] == UInt8(ascii: " "), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
                bytes[19] == UInt8(ascii: ".")
            else { return nil }
            func number(at offset: Int, digits: Int) -> Int64? {
                var value: Int64 = 0
                for byte in bytes[offset..<offset + digits] {
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                    value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                }
                return value
            }
            guard let year = number(at: 0, digits: 4), year >= 1900,
                let month = number(at: 5, digits: 2), (1...12).contains(month),
                let day = number(at: 8, digits: 2), day >= 1, day <= Self.days(inMonth: month, of: year),
                let hour = number(at: 11, digits: 2), hour < 24,
                let minute = number(at: 14, digits: 2), minute < 60,
                let second = number(at: 17, digits: 2), second < 60,
                let millis = number(at: 20, digits: 3)
            else { return nil }
            // As Foundation's calendar adds them up (the time of day in one Double first), to
            // the last bit.
            let dayStart = Self.days(since1970Of: year, month, day) * 86_400 - 978_307_200
            let timeOfDay = Double(hour * 3_600 + minute * 60 + second) + Double(millis * 1_000_000) / 1e9
            return Date(timeIntervalSinceReferenceDate: Double(dayStart) + timeOfDay)
        }
    }

    private static func days(inMonth month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date, by Howard Hinnant's `days_from_civil`.
    private static func days(since1970Of year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let marchYear = month <= 2 ? year - 1 : year
        let era = (marchYear >= 0 ? marchYear : marchYear - 399) / 400
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// GRDB's text for `date`, or nil outside 1900-9999 (left to GRDB's formatter: its calendar
    /// is Julian before 1582, and years past 9999 need more digits).
    static func text(of date: Date) -> String? {
        // Milliseconds since 1970, to the nearest, halves up: GRDB's formatter rounds ".SSS" so.
        let udate = (date.timeIntervalSinceReferenceDate + Date.timeIntervalBetween1970AndReferenceDate) * 1000
        let rounded = (udate + 0.5).rounded(.down)
        // 1900-01-01 ..< 10000-01-01, after rounding (NaN and infinities fail it too)
        guard rounded >= -2_208_988_800_000, rounded < 253_402_300_800_000 else { return nil }
        let millis = Int64(rounded)
        let dayMillis: Int64 = 86_400_000
        let days = millis >= 0 ? millis / dayMillis : (millis - dayMillis + 1) / dayMillis
        let ofDay = millis - days * dayMillis
        let (year, month, day) = civil(daysSince1970: days)

        var bytes = [UInt8](repeating: 0, count: 23)
        func put(_ value: Int64, at offset: Int, digits: Int) {
            var value = value
            for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                bytes[index] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
                value /= 10
            }
        }
        put(year, at: 0, digits: 4)
        bytes[4] = UInt8(ascii: "-")
        put(month, at: 5, digits: 2)
        bytes[7] = UInt8(ascii: "-")
        put(day, at: 8, digits: 2)
        bytes[10] = UInt8(ascii: " ")
        put(ofDay / 3_600_000, at: 11, digits: 2)
        bytes[13] = UInt8(ascii: ":")
        put(ofDay / 60_000 % 60, at: 14, digits: 2)
        bytes[16] = UInt8(ascii: ":")
        put(ofDay / 1000 % 60, at: 17, digits: 2)
        bytes[19] = UInt8(ascii: ".")
        put(ofDay % 1000, at: 20, digits: 3)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The proleptic Gregorian year, month and day of a day number (days since 1970-01-01),
    /// by Howard Hinnant's `civil_from_days`.
    private static func civil(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468  // days since 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Date {
    /// This date bound as GRDB stores dates, without its `DateFormatter` (see ``StoredDate``).
    public var stored: StoredDate { StoredDate(self) }
}
