public import Foundation
import Synchronization

/// Formats dates with fixed patterns in a given locale and zone. Making a `DateFormatter`
/// costs far more than using one (it loads ICU data), so each pattern, locale and zone gets
/// one, kept and used under a lock.
public enum DateFormats {
    private static let formatters = Mutex<[String: DateFormatter]>([:])
    private static let capacity = 1024

    /// `date` as `pattern` (a `DateFormatter` pattern) in `locale` (e.g. `en_US_POSIX`) and `zone`.
    public static func string(_ date: Date, pattern: String, locale: String, zone: TimeZone) -> String {
        let key = "\(pattern)\u{0}\(locale)\u{0}\(zone.identifier)"
        return Self.formatters.withLock { formatters in
            if let formatter = formatters[key] { return formatter.string(from: date) }
            if formatters.count >= Self.capacity { formatters.removeAll() }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: locale)
            formatter.timeZone = zone
            formatter.dateFormat = pattern
            formatters[key] = formatter
            return formatter.string(from: date)
        }
    }
}
