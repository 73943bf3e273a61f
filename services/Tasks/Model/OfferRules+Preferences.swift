import Foundation
import HearthCore
import HearthRPC

// The user's offer preferences: opt-in, a daily cap, spacing, a default cooldown, quiet hours,
// and the zone every local day is counted in.
extension OfferRules {
    // MARK: Preferences

    /// Minutes after local midnight: [start, end), crossing midnight when end < start.
    struct QuietHours: Sendable, Equatable {
        var start: Int
        var end: Int

        /// Whether `minute` (after local midnight) falls inside.
        func contains(_ minute: Int) -> Bool {
            self.start < self.end
                ? (self.start <= minute && minute < self.end) : (minute >= self.start || minute < self.end)
        }
    }

    /// When a snoozed offer comes back: `minutes` after `now`, or, when that falls in quiet
    /// hours, the first minute after they end (a snooze is exempt from the daily cap only).
    static func snoozedDelivery(minutes: Int, now: Date, preferences: Preferences) -> Date {
        let due = now.addingTimeInterval(TimeInterval(minutes * 60))
        let zone = preferences.zone
        guard let quiet = preferences.quietHours, quiet.contains(TaskRules.minuteOfDay(due, in: zone)) else {
            return due
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let end = DateComponents(hour: quiet.end / 60, minute: quiet.end % 60, second: 0)
        return calendar.nextDate(after: due, matching: end, matchingPolicy: .nextTime) ?? due
    }

    /// A user's offer preferences; the defaults until they set them, with offers off (the plan's
    /// opt-in).
    struct Preferences: Sendable, Equatable {
        var enabled = false
        var dailyCap = 2
        var minSpacingMinutes = 360
        var defaultCooldownMinutes = 120
        var quietHours: QuietHours?
        var timeZone = "UTC"

        var zone: TimeZone { TimeZone(identifier: self.timeZone) ?? .gmt }
    }

    /// Every violation of a SetOfferPreferences request at once; an unset number takes its default.
    /// Turning offers on needs a time zone; turning them off keeps `current`'s when none is given.
    static func preferences(_ request: PreferencesDraft, current: Preferences) -> Result<Preferences, RPCError> {
        var violations: [FieldViolation] = []
        var preferences = Preferences()
        preferences.enabled = request.enabled ?? true
        func number(_ value: UInt32?, _ field: String, _ range: ClosedRange<Int>, default fallback: Int) -> Int {
            guard let value else { return fallback }
            if !range.contains(Int(value)) {
                violations.append(
                    FieldViolation(
                        field: field,
                        description: "must be \(range.lowerBound) to \(range.upperBound) (is \(value))"
                    )
                )
            }
            return Int(value)
        }
        preferences.dailyCap = number(
            request.dailyCap,
            "daily_cap",
            Self.dailyCap,
            default: 2
        )
        preferences.minSpacingMinutes = number(
            request.minSpacingMinutes,
            "min_spacing_minutes",
            Self.minSpacingMinutes,
            default: 360
        )
        preferences.defaultCooldownMinutes = number(
            request.defaultCooldownMinutes,
            "default_cooldown_minutes",
            Self.cooldownMinutes,
            default: 120
        )
        if let quietHours = request.quietHours {
            let start = TaskRules.clockTime(quietHours.start)
            let end = TaskRules.clockTime(quietHours.end)
            if start == nil {
                violations.append(
                    FieldViolation(
                        field: "quiet_hours.start",
                        description: "'\(quietHours.start)' is not HH:MM"
                    )
                )
            }
            if end == nil {
                violations.append(
                    FieldViolation(field: "quiet_hours.end", description: "'\(quietHours.end)' is not HH:MM")
                )
            }
            if let start, let end {
                if start == end {
                    violations.append(FieldViolation(field: "quiet_hours.end", description: "must differ from start"))
                }
                preferences.quietHours = QuietHours(start: start.minuteOfDay, end: end.minuteOfDay)
            }
        }
        if !preferences.enabled && request.timeZone.isEmpty {
            preferences.timeZone = current.timeZone
        } else {
            switch FieldChecks.zone(request.timeZone) {
            case .success: preferences.timeZone = request.timeZone
            case .failure(let violation) where request.timeZone.isEmpty:
                violations.append(
                    FieldViolation(
                        field: violation.field,
                        description: "is required to turn offers on: an IANA time zone such as Asia/Taipei"
                    )
                )
            case .failure(let violation): violations.append(violation)
            }
        }
        return violations.isEmpty ? .success(preferences) : .failure(.invalidArgument(violations))
    }
}
