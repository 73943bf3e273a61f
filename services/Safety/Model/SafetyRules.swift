import Foundation
import HearthCore
import HearthMail
import HearthRPC

/// The rules of the switch, as pure functions: no clock, no storage.
enum SafetyRules {
    static let thresholds: Set<UInt32> = [24, 48, 72]
    static let languages: Set<String> = ["en", "zh-Hans", "zh-Hant"]
    static let maxContacts = 10
    static let maxNameCharacters = 100
    static let maxSnoozesInARow = 3
    static let snooze: TimeInterval = 24 * 3600
    static let maxPause: TimeInterval = 30 * 86_400
    /// Warning pushes, minutes before the deadline.
    static let warningMinutes = [180, 60, 10]
    /// Within this of the deadline the state is WARNING.
    static let warningWindow: TimeInterval = 3 * 3600
    /// Heartbeats this close to the previous one collapse into it.
    static let coalesceWindow: TimeInterval = 5
    static let maxHeartbeatsPerHour = 120
    /// Check-ins kept without counting toward the rate limit (merged into the one before, or
    /// over the limit), so that a late retry of one is still known: at most this many an hour
    /// for each user. Past it such a check-in keeps no row, and a retry of it counts again.
    static let maxUncountedHeartbeatsPerHour = 64
    /// Test messages a user may ask for on one channel in an hour: the profile's email is
    /// nobody's to confirm, so without a limit SendTest could flood a stranger's inbox.
    static let maxTestsPerHour = 5
    static let maxRequestIDCharacters = 128
    static let maxPushTokenBytes = 4096
    /// Longer device info is cut, not refused: a check-in is never refused for it.
    static let maxDeviceInfoCharacters = 512

    /// The id a heartbeat is kept under (unique per user), so that a retry is known: each
    /// source's ids apart, so that an app's request id can never be taken for a forwarded
    /// activity's (`tasks:e1`) or the other way round.
    enum HeartbeatID {
        /// A check-in from the app, by the id its client sent; one sent without an id gets one of
        /// its own, never repeated.
        static func app(_ clientRequestID: String) -> String {
            clientRequestID.isEmpty ? "server:\(UUID().uuidString)" : "app:\(clientRequestID)"
        }
        /// An activity another service forwarded (one of ``activitySources``).
        static func forwarded(source: String, eventID: String) -> String {
            precondition(
                SafetyRules.activitySources.contains(source),
                "a forwarded activity's source is another service"
            )
            return "\(source):\(eventID)"
        }
    }

    /// Whether an activity forwarded after an alarm that may have reached the contacts ends it
    /// (all-clear, a new period from the activity). One from after the alarm was decided does.
    /// One from before, delayed on its way here, does only if the period it would start is not
    /// already in its last 3 hours or over: otherwise the contacts would get the all-clear and
    /// then, within hours or at once, the alarm again, for the same silence.
    static func lateActivityEndsAlarm(activityAt: Date, alarmDecidedAt: Date, thresholdHours: Int, receivedAt: Date)
        -> Bool
    {
        activityAt >= alarmDecidedAt
            || activityAt.addingTimeInterval(Double(thresholdHours) * 3600)
                > receivedAt.addingTimeInterval(Self.warningWindow)
    }

    /// The services whose activity counts as a check-in for users who opted in.
    static let activitySources: Set<String> = ["checkins", "tasks", "routines"]

    /// Every invalid field of a profile at once.
    static func profileViolations(_ request: ProfileDraft) -> [FieldViolation] {
        var violations: [FieldViolation] = []
        if case .failure(let violation) = FieldChecks.trimmed(
            request.name,
            field: "name",
            characters: 1...Self.maxNameCharacters
        ) {
            violations.append(violation)
        }
        if !MailAddress(request.email.trimmingCharacters(in: .whitespaces)).isValid {
            violations.append(FieldViolation(field: "email", description: "'\(request.email)' is not an email address"))
        }
        if !Self.thresholds.contains(request.thresholdHours) {
            violations.append(FieldViolation(field: "threshold_hours", description: "must be 24, 48 or 72"))
        }
        if !Self.languages.contains(request.preferredLanguage) {
            violations.append(
                FieldViolation(field: "preferred_language", description: "must be en, zh-Hans or zh-Hant")
            )
        }
        if TimeZone(iana: request.timeZone) == nil {
            violations.append(
                FieldViolation(field: "time_zone", description: "'\(request.timeZone)' is not an IANA time zone")
            )
        }
        if request.reminderHour > 23 {
            violations.append(FieldViolation(field: "daily_reminder.hour", description: "must be 0 to 23"))
        }
        if request.reminderMinute > 59 {
            violations.append(FieldViolation(field: "daily_reminder.minute", description: "must be 0 to 59"))
        }
        if request.pushToken.utf8.count > Self.maxPushTokenBytes {
            violations.append(
                FieldViolation(field: "push_token", description: "at most \(Self.maxPushTokenBytes) bytes")
            )
        }
        return violations
    }

    /// An address as contacts are compared and remembered: case aside.
    static func addressKey(_ address: String) -> String { address.lowercased() }

    /// A contact's address, trimmed, or the violation.
    static func contactEmail(_ raw: String) -> Result<String, FieldViolation> {
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard MailAddress(email).isValid else {
            return .failure(FieldViolation(field: "email", description: "'\(raw)' is not an email address"))
        }
        return .success(email)
    }
}

/// A profile as UpsertProfile asks for it, before the rules have checked it.
struct ProfileDraft: Sendable, Equatable {
    var name: String
    var email: String
    var thresholdHours: UInt32
    var preferredLanguage: String
    var timeZone: String
    var reminderHour: UInt32
    var reminderMinute: UInt32
    var pushToken: String
}

/// What the switch shows: where it stands against its deadline.
enum SwitchPhase: Sendable, Equatable {
    /// More than 3 h left.
    case normal
    /// 3 h or less left.
    case warning
    /// The deadline passed: contacts are (being) emailed.
    case expired
    case paused
    /// No contact: nothing is scheduled.
    case notArmed
}

/// What can be due in one epoch of the switch (an epoch ends at a check-in, snooze or resume).
enum DueItem: Hashable, Sendable {
    case warning(minutesBefore: Int)
    case alert

    /// How the store names it.
    var kind: String {
        switch self {
        case .warning(let minutes): "warning_\(minutes)"
        case .alert: "alert"
        }
    }
}

/// The switch at one moment: when the deadline is, what is due, what state it shows.
struct SwitchClock: Sendable, Equatable {
    /// The last check-in, or when the switch was last resumed.
    var periodStart: Date
    var thresholdHours: Int
    var snoozes: Int
    var pausedUntil: Date?
    /// Armed: a profile with at least one contact.
    var armed: Bool

    /// When the alarm is due: the threshold (and any snoozes) from the period's start. A pause
    /// that ends after that start begins a new period at its end, snoozes gone: while it lasts
    /// (nothing fires), and once it has ended, before the scheduler has recorded that, the
    /// deadline counts from there.
    var deadline: Date {
        let threshold = Double(self.thresholdHours) * 3600
        if let pausedUntil, pausedUntil > self.periodStart { return pausedUntil.addingTimeInterval(threshold) }
        return self.periodStart.addingTimeInterval(threshold + Double(self.snoozes) * SafetyRules.snooze)
    }

    func isPaused(at now: Date) -> Bool { self.pausedUntil.map { $0 > now } ?? false }

    func state(at now: Date) -> SwitchPhase {
        if !self.armed { return .notArmed }
        if self.isPaused(at: now) { return .paused }
        let left = self.deadline.timeIntervalSince(now)
        if left <= 0 { return .expired }
        return left <= SafetyRules.warningWindow ? .warning : .normal
    }

    /// When each item falls due.
    func dueTime(of item: DueItem) -> Date {
        switch item {
        case .warning(let minutes): self.deadline.addingTimeInterval(-Double(minutes) * 60)
        case .alert: self.deadline
        }
    }

    static let items: [DueItem] = SafetyRules.warningMinutes.map { .warning(minutesBefore: $0) } + [.alert]

    /// What to decide now, given what this epoch already decided: `send` holds the alert once
    /// the deadline passed, or else the latest warning due (after a restart, the 3 h warning
    /// that fell due while down is not sent beside the 1 h one, with its wrong "3 hours");
    /// `skip`, the earlier warnings due with it, to be recorded as decided and never sent.
    /// Nothing while paused or not armed; no warning once the deadline passed.
    func itemsDue(at now: Date, decided: Set<DueItem>) -> (send: [DueItem], skip: [DueItem]) {
        guard self.armed, !self.isPaused(at: now) else { return ([], []) }
        let due = Self.items.filter { !decided.contains($0) && self.dueTime(of: $0) <= now }
        if self.deadline <= now { return (due.filter { $0 == .alert }, []) }
        // Items are in time order: the last due warning is the one closest to the deadline.
        guard let latest = due.last else { return ([], []) }
        return ([latest], due.dropLast())
    }

    /// The next moment the scheduler must look at this switch: the next undecided item, or
    /// the end of a pause. Nil when nothing is left.
    func nextDue(after now: Date, decided: Set<DueItem>) -> Date? {
        guard self.armed else { return nil }
        // A pause not yet recorded as over: at its end, or at once if that has passed (the
        // period it begins must be recorded before its items can be read as decided or not).
        if let pausedUntil, pausedUntil > now || pausedUntil > self.periodStart { return max(pausedUntil, now) }
        let deadlinePassed = self.deadline <= now
        return Self.items
            .filter { item in
                if decided.contains(item) { return false }
                if case .warning = item, deadlinePassed { return false }
                return true
            }
            .map { max(self.dueTime(of: $0), now) }
            .min()
    }
}

/// The optional daily reminder: a push at the chosen local time, skipped on a day the user
/// has already checked in (or was already reminded).
struct DailyReminderRule: Sendable {
    var hour: Int
    var minute: Int
    var zone: TimeZone

    /// When the next reminder falls due: today's time (possibly already past, so due now)
    /// unless today is done, else tomorrow's. `done` says whether a local date needs none.
    func next(at now: Date, done: (LocalDate) -> Bool) -> (date: LocalDate, time: Date) {
        let today = LocalDate(now, in: self.zone)
        let date = done(today) ? today.adding(days: 1) : today
        return (date, date.instant(hour: self.hour, minute: self.minute, in: self.zone))
    }
}
