public import Foundation

/// A calendar date in someone's time zone, `YYYY-MM-DD` on the wire: what "today" means to
/// a person. Computed from an instant and an IANA zone; compared and stepped by whole days
/// (a DST day of 23 or 25 hours is still one day).
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// The date at `instant` in `zone`: what its clocks show then, in whole days (the proleptic
    /// Gregorian calendar, as everywhere in this type).
    public init(_ instant: Date, in zone: TimeZone) {
        let local = instant.timeIntervalSince1970 + TimeInterval(zone.secondsFromGMT(for: instant))
        self.init(daysSinceEpoch: Int((local / 86_400).rounded(.down)))
    }

    /// The date `year-month-day` of the proleptic Gregorian calendar; nil unless it names a real
    /// date. Integer arithmetic, no calendar object.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), (1...31).contains(day) else { return nil }
        let date = LocalDate(checked: year, month, day)
        // 2026-02-30 counts on to March 2: not the date it was asked for.
        guard LocalDate(daysSinceEpoch: date.daysSinceEpoch) == date else { return nil }
        self = date
    }

    private init(checked year: Int, _ month: Int, _ day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`; nil unless it names a real date.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy(\.isASCIIDigits),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            let date = LocalDate(year: year, month: month, day: day)
        else { return nil }
        self = date
    }

    public var description: String {
        "\(self.year.zeroPadded(to: 4))-\(self.month.zeroPadded(to: 2))-\(self.day.zeroPadded(to: 2))"
    }

    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// The date `days` later (earlier when negative).
    public func adding(days: Int) -> LocalDate {
        LocalDate(daysSinceEpoch: self.daysSinceEpoch + days)
    }

    /// Whole days from `self` to `other` (negative when `other` is earlier).
    public func days(to other: LocalDate) -> Int {
        other.daysSinceEpoch - self.daysSinceEpoch
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's
    /// days_from_civil: integer arithmetic, no calendar object).
    public var daysSinceEpoch: Int {
        let y = self.month <= 2 ? self.year - 1 : self.year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (self.month + (self.month > 2 ? -3 : 9)) + 2) / 5 + self.day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (civil_from_days).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        self.day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        self.month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        self.year = yearOfEra + era * 400 + (self.month <= 2 ? 1 : 0)
    }

    /// The first instant of this date in `zone`: 00:00, or where a zone skips midnight, the
    /// first minute after the gap (what ``instant(hour:minute:in:)`` answers for 00:00, with
    /// no calendar search on most days).
    public func start(in zone: TimeZone) -> Date {
        self.instant(hour: 0, minute: 0, in: zone)
    }

    /// The instant this date shows `hour:minute` in `zone`. A time the clocks skip (a DST
    /// gap) moves to the first minute after the gap; a time that occurs twice is its first.
    public func instant(hour: Int, minute: Int, in zone: TimeZone) -> Date {
        // Most days have no offset change near them: then the wall-clock reading minus the
        // zone's one offset is the answer, with no calendar search.
        let wall = TimeInterval(self.daysSinceEpoch * 86_400 + hour * 3600 + minute * 60)
        let windowStart = Date(timeIntervalSince1970: wall - 2 * 86_400)
        let windowEnd = Date(timeIntervalSince1970: wall + 2 * 86_400)
        if let transition = zone.nextDaylightSavingTimeTransition(after: windowStart), transition <= windowEnd {
            return Self.instantNearChange(wall: wall, in: zone)
        }
        return Date(timeIntervalSince1970: wall - TimeInterval(zone.secondsFromGMT(for: windowStart)))
    }

    /// The instant a zone shows the wall-clock reading `wall` (seconds since 1970 read as UTC)
    /// within two days of an offset change: the reading minus the offset before the change or
    /// the one after, whichever the zone really shows then (the earlier when both do: a time
    /// that occurs twice). In a gap neither does, and the answer is the change itself, the
    /// first minute after the gap. (Not the calendar's `nextDate` search: it answers a time in
    /// Lord Howe's 30-minute gap with the next day's.)
    static func instantNearChange(wall: TimeInterval, in zone: TimeZone) -> Date {
        func offset(_ instant: TimeInterval) -> TimeInterval {
            TimeInterval(zone.secondsFromGMT(for: Date(timeIntervalSince1970: instant)))
        }
        let before = offset(wall - 2 * 86_400)
        let after = offset(wall + 2 * 86_400)
        if let first = [wall - before, wall - after].filter({ $0 + offset($0) == wall }).min() {
            return Date(timeIntervalSince1970: first)
        }
        // A gap: the clocks jumped past `wall` at a change after `wall - after`.
        let gapStart = Date(timeIntervalSince1970: min(wall - before, wall - after))
        return zone.nextDaylightSavingTimeTransition(after: gapStart) ?? Date(timeIntervalSince1970: wall - before)
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

extension StringProtocol {
    /// Whether every character is one of 0-9 (and there is at least one): what `Int(_:)`
    /// alone would not check, since it also takes a sign ("+9", "-0").
    public var isASCIIDigits: Bool {
        !self.isEmpty && self.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}
