import Foundation
import HearthCore

/// One user's switch as its rules see it: the settings they read and the parts they move.
/// The store keeps it in the user's profile row.
struct SwitchState: Equatable, Sendable {
    var thresholdHours: Int
    var timeZone: String
    var reminderEnabled: Bool
    var reminderHour: Int
    var reminderMinute: Int
    /// False: nothing fires (no warning, alarm or reminder) until the user makes it active again.
    var isActive: Bool
    /// The last check-in, or when the switch was last resumed or armed: the deadline counts
    /// from it.
    var periodStart: Date
    var lastCheckInAt: Date?
    /// Snoozes in this period: each moves its deadline 24 h.
    var snoozes: Int
    /// Snoozes since the last check-in, across the periods a pause's end begins: the limit.
    var snoozesInARow: Int
    var pausedUntil: Date?
    /// Bumped at every check-in, snooze and resume: due items are decided once per epoch.
    var epoch: Int
    /// The epoch the last check-in began (alerts since then get an all-clear at the next).
    var checkInEpoch: Int
    /// When the scheduler must look at this switch next; nil when nothing is left.
    var nextDueAt: Date?
    var updatedAt: Date

    /// The zone its days are counted in (UTC for a name no longer known).
    var zone: TimeZone { TimeZone(iana: self.timeZone) ?? .gmt }

    /// A pause that has run out by `now`, whether or not the switch has recorded it yet.
    func pauseOver(at now: Date) -> Bool { self.pausedUntil.map { $0 <= now } ?? false }
}

/// An emergency contact, as the rules need it: who, and their address as it is compared (the
/// rules never need the address itself).
struct SwitchContact: Equatable, Sendable {
    var id: String
    /// The address as it is compared: case aside (the store keeps a keyed hash of that).
    var key: String

    init(id: String, key: String) {
        self.id = id
        self.key = key
    }

    init(id: String, address: String) {
        self.init(id: id, key: SafetyRules.addressKey(address))
    }
}

/// What the store knows of a switch beyond its state, read in the transaction a transition
/// runs in. A fact a transition does not read may be left out (nil); one it reads must be
/// there.
struct SwitchFacts: Equatable, Sendable {
    /// The user's contacts now: the switch is armed with one at least.
    var contacts: [SwitchContact]
    /// The due items the current epoch has decided.
    var decided: Set<DueItem>?
    /// The messages since the last check-in, which a new period reads.
    var period: PeriodMessages?
    /// The daily reminders recorded in the last 3 days, by ``ReminderKey``: true for one sent
    /// or to be sent, false for one only recorded as decided (skipped).
    var reminders: [String: Bool]?
    /// When the latest alarm since the last check-in that may have reached a contact (sent,
    /// tried, or under way) was decided; read for a forwarded activity.
    var alarmDecidedAt: Date?

    init(
        contacts: [SwitchContact],
        decided: Set<DueItem>? = nil,
        period: PeriodMessages? = nil,
        reminders: [String: Bool]? = nil,
        alarmDecidedAt: Date? = nil
    ) {
        self.contacts = contacts
        self.decided = decided
        self.period = period
        self.reminders = reminders
        self.alarmDecidedAt = alarmDecidedAt
    }
}

/// The messages of a period (since the last check-in), as a new period reads them.
struct PeriodMessages: Equatable, Sendable {
    /// Whether a warning or the alert is pending.
    var hasPending: Bool
    /// The alarms that reached their contacts or may have, whatever became of them since: each
    /// contact still named earns the all-clear.
    var alerted: [AlertedContact]

    init(hasPending: Bool = false, alerted: [AlertedContact] = []) {
        self.hasPending = hasPending
        self.alerted = alerted
    }
}

/// Whom an alarm went to: by id, and by address key for a contact removed and added again since.
struct AlertedContact: Equatable, Sendable {
    var contactID: String
    var key: String

    init(contactID: String, key: String) {
        self.contactID = contactID
        self.key = key
    }

    init(contactID: String, address: String) {
        self.init(contactID: contactID, key: SafetyRules.addressKey(address))
    }
}

/// The last hour of a user's check-ins, as the rate limit reads them.
struct RecentHeartbeats: Equatable, Sendable {
    /// When each counted one came, oldest first.
    var counted: [Date] = []
    /// How many were kept without counting.
    var uncounted = 0
    /// Whether one of them has this check-in's request id.
    var includesRequest = false
}

/// The key a daily reminder is recorded under, once per local date.
enum ReminderKey {
    static func of(_ date: LocalDate) -> String { "reminder:\(date)" }
}

/// What a transition asks the store to do, in order, in its transaction.
enum SwitchEffect: Equatable, Sendable {
    /// Cancels what is pending for the user and not yet sent.
    case cancelPending(CancelScope)
    /// Records a message in the switch's outbox (once per epoch, kind and recipient).
    case record(SwitchMessage)
    /// Forgets a daily reminder recorded as skipped (its time moved ahead, still to come today).
    case forgetSkippedReminder(key: String)

    enum CancelScope: Hashable, Sendable {
        /// The warning pushes.
        case warnings
        /// The warnings and the alarm emails.
        case warningsAndAlarms
        /// The alarm emails to one contact.
        case contact(id: String)
        /// The daily reminders still to be sent.
        case reminders
    }
}

/// A message the switch decided.
struct SwitchMessage: Equatable, Sendable {
    enum Recipient: Equatable, Sendable {
        /// The user's own push, under `key` (empty for a warning, ``ReminderKey`` for a reminder).
        case user(key: String)
        /// A contact's email.
        case contact(SwitchContact)
    }

    enum Words: Equatable, Sendable {
        /// A due item's: the warning push or the alarm email.
        case due(DueItem)
        /// The all-clear after the check-in at that time.
        case allClear(checkedInAt: Date)
        case reminder
        /// Recorded as decided and never sent: no words.
        case none
    }

    var kind: String
    var epoch: Int
    var recipient: Recipient
    var words: Words
    /// False for one recorded as decided and never sent.
    var sends: Bool
    var at: Date
}

/// Why the switch refused a change; the message is the caller's.
enum SwitchRefusal: Error, Equatable, Sendable {
    case paused(until: Date)
    case tooManySnoozes
    case deadlinePassed
    case contactsAlarmed
    case notPaused

    var message: String {
        switch self {
        case .paused(let until):
            "the switch is paused until \(until.formatted(.iso8601)); nothing fires before"
        case .tooManySnoozes: "at most \(SafetyRules.maxSnoozesInARow) snoozes in a row; check in instead"
        case .deadlinePassed: "the deadline has passed; check in instead"
        case .contactsAlarmed: "your emergency contacts were emailed this period; check in instead"
        case .notPaused: "the switch is not paused"
        }
    }
}
