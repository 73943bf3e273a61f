public import Foundation
public import GRDB
import GRDBSQLite
import HearthCore

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
                let month = number(at: 5, digits: 2), let day = number(at: 8, digits: 2),
                let calendarDay = LocalDate(year: Int(year), month: Int(month), day: Int(day)),
                let hour = number(at: 11, digits: 2), hour < 24,
                let minute = number(at: 14, digits: 2), minute < 60,
                let second = number(at: 17, digits: 2), second < 60,
                let millis = number(at: 20, digits: 3)
            else { return nil }
            // As Foundation's calendar adds them up (the time of day in one Double first), to
            // the last bit.
            let dayStart = Int64(calendarDay.daysSinceEpoch) * 86_400 - 978_307_200
            let timeOfDay = Double(hour * 3_600 + minute * 60 + second) + Double(millis * 1_000_000) / 1e9
            return Date(timeIntervalSinceReferenceDate: Double(dayStart) + timeOfDay)
        }
    }

    /// Binds GRDB's text for the date from a buffer on the stack, without making a `String`.
    public func bind(to sqliteStatement: SQLiteStatement, at index: CInt) -> CInt {
        Self.withText(of: self.date) { text in
            sqlite3_bind_text(sqliteStatement, index, text.baseAddress, CInt(text.count), sqliteTransient)
        } ?? self.date.bind(to: sqliteStatement, at: index)
    }

    /// GRDB's text for `date`, or nil outside 1900-9999 (left to GRDB's formatter: its calendar
    /// is Julian before 1582, and years past 9999 need more digits).
    static func text(of date: Date) -> String? {
        Self.withText(of: date) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with GRDB's text for `date` (valid only inside it), or answers nil outside
    /// 1900-9999.
    private static func withText<R>(of date: Date, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        // Milliseconds since 1970, to the nearest, halves up: GRDB's formatter rounds ".SSS" so.
        let udate = (date.timeIntervalSinceReferenceDate + Date.timeIntervalBetween1970AndReferenceDate) * 1000
        let rounded = (udate + 0.5).rounded(.down)
        // 1900-01-01 ..< 10000-01-01, after rounding (NaN and infinities fail it too)
        guard rounded >= -2_208_988_800_000, rounded < 253_402_300_800_000 else { return nil }
        let millis = Int64(rounded)
        let dayMillis: Int64 = 86_400_000
        let days = millis >= 0 ? millis / dayMillis : (millis - dayMillis + 1) / dayMillis
        let ofDay = millis - days * dayMillis
        let calendarDay = LocalDate(daysSinceEpoch: Int(days))

        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 23) { bytes in
            func put(_ value: Int64, at offset: Int, digits: Int) {
                var value = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    bytes[index] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
                    value /= 10
                }
            }
            put(Int64(calendarDay.year), at: 0, digits: 4)
            bytes[4] = UInt8(ascii: "-")
            put(Int64(calendarDay.month), at: 5, digits: 2)
            bytes[7] = UInt8(ascii: "-")
            put(Int64(calendarDay.day), at: 8, digits: 2)
            bytes[10] = UInt8(ascii: " ")
            put(ofDay / 3_600_000, at: 11, digits: 2)
            bytes[13] = UInt8(ascii: ":")
            put(ofDay / 60_000 % 60, at: 14, digits: 2)
            bytes[16] = UInt8(ascii: ":")
            put(ofDay / 1000 % 60, at: 17, digits: 2)
            bytes[19] = UInt8(ascii: ".")
            put(ofDay % 1000, at: 20, digits: 3)
            return body(UnsafeBufferPointer(bytes))
        }
    }
}

extension Date {
    /// This date bound as GRDB stores dates, without its `DateFormatter` (see ``StoredDate``).
    public var stored: StoredDate { StoredDate(self) }
}
