public import Foundation

/// A calendar date in someone's time zone, `YYYY-MM-DD` on the wire: what "today" means to
/// a person. Computed from an instant and an IANA zone; compared and stepped by whole days
/// (a DST day of 23 or 25 hours is still one day).
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// The date at `instant` in `zone`.
    public init(_ instant: Date, in zone: TimeZone) {
        let parts = Self.calendar(zone).dateComponents([.year, .month, .day], from: instant)
        self.year = parts.year!
        self.month = parts.month!
        self.day = parts.day!
    }

    /// Parses `YYYY-MM-DD`; nil unless it names a real date.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var components = DateComponents(year: year, month: month, day: day)
        components.hour = 12
        // Rejects 2026-02-30 and the like: the calendar would roll it into March.
        guard let noon = Self.calendar(.gmt).date(from: components), LocalDate(noon, in: .gmt).day == day else {
            return nil
        }
        self.year = year
        self.month = month
        self.day = day
    }

    public var description: String { String(format: "%04d-%02d-%02d", self.year, self.month, self.day) }

    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// The date `days` later (earlier when negative).
    public func adding(days: Int) -> LocalDate {
        let calendar = Self.calendar(.gmt)
        let noon = calendar.date(from: DateComponents(year: self.year, month: self.month, day: self.day, hour: 12))!
        return LocalDate(calendar.date(byAdding: .day, value: days, to: noon)!, in: .gmt)
    }

    /// Whole days from `self` to `other` (negative when `other` is earlier).
    public func days(to other: LocalDate) -> Int {
        let calendar = Self.calendar(.gmt)
        return calendar.dateComponents([.day], from: self.noonUTC, to: other.noonUTC).day!
    }

    /// The first instant of this date in `zone` (not always 00:00: some zones skip midnight).
    public func start(in zone: TimeZone) -> Date {
        let calendar = Self.calendar(zone)
        return calendar.startOfDay(
            for: calendar.date(from: DateComponents(year: self.year, month: self.month, day: self.day, hour: 12))!
        )
    }

    /// The instant this date shows `hour:minute` in `zone`. A time the clocks skip (a DST
    /// gap) moves to the first minute after the gap; a time that occurs twice is its first.
    public func instant(hour: Int, minute: Int, in zone: TimeZone) -> Date {
        let calendar = Self.calendar(zone)
        let start = self.start(in: zone)
        return calendar.nextDate(
            after: start.addingTimeInterval(-1),
            matching: DateComponents(hour: hour, minute: minute, second: 0),
            matchingPolicy: .nextTime,
            repeatedTimePolicy: .first,
            direction: .forward
        ) ?? start
    }

    private var noonUTC: Date {
        Self.calendar(.gmt).date(from: DateComponents(year: self.year, month: self.month, day: self.day, hour: 12))!
    }

    private static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
}

extension TimeZone {
    /// The zone named by an IANA identifier such as `Asia/Taipei`; nil for anything else
    /// (abbreviations like `PST` and offsets are not IANA names).
    public init?(iana identifier: String) {
        guard !identifier.isEmpty, identifier == "UTC" || identifier.contains("/") || identifier == "GMT",
            let zone = TimeZone(identifier: identifier)
        else { return nil }
        self = zone
    }
}
