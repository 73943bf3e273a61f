import Foundation
import HearthCore

/// The rules of one user's switch: a state and the facts it reads in, an event, then the new
/// state and the effects (``SwitchEffect``) out. No clock and no storage: the store reads the
/// state and facts, runs one event, and applies what comes out in the same write transaction.
struct SwitchMachine: Sendable {
    // Set by the events alone (here and in SwitchMachine+Periods.swift); read by the store.
    var state: SwitchState
    var facts: SwitchFacts
    /// What the events so far ask the store to do, in order.
    var effects: [SwitchEffect] = []

    init(state: SwitchState, facts: SwitchFacts) {
        self.state = state
        self.facts = facts
    }

    /// The switch at this moment.
    var clock: SwitchClock {
        SwitchClock(
            periodStart: self.state.periodStart,
            thresholdHours: self.state.thresholdHours,
            snoozes: self.state.snoozes,
            pausedUntil: self.state.pausedUntil,
            armed: self.state.isActive && !self.facts.contacts.isEmpty
        )
    }

    // MARK: Check-ins

    /// A check-in at `at`: from the app, or an activity elsewhere (`forwarded`), which counts
    /// from when it happened.
    struct CheckIn: Sendable {
        var at: Date
        /// When it reached the switch (for a forwarded activity, later than `at`).
        var receivedAt: Date
        var forwarded: Bool
        /// The zone the phone is in, when it said.
        var timeZone: String?
    }

    enum CheckInDecision: Equatable, Sendable {
        /// Changes nothing: a retry, merged into the check-in before it, or an activity that says
        /// nothing about this period. `keep`: the check-in is kept uncounted, so a late retry of
        /// it is known.
        case repeated(keep: Bool)
        /// A new period began, if the request id is new (`record` says how to find out); the
        /// effects are to be applied only then. `retryAfter`: over the rate limit, the check-in
        /// reset the timer but was not counted, and the next counts after this long.
        case counts(record: RequestRecord, allClears: Int, retryAfter: TimeInterval?)
    }

    /// How the store keeps a check-in's request id, which tells whether it came before.
    enum RequestRecord: Equatable, Sendable {
        /// Kept (counted or not); a conflict means it came more than an hour ago.
        case insert(counted: Bool)
        /// Not kept (over both limits): looked up by key instead.
        case lookUp
    }

    /// A check-in: a new period starts, every pending warning and alert of the old one is
    /// cancelled, and contacts who were alerted get an all-clear.
    mutating func checkIn(_ checkIn: CheckIn, recent: RecentHeartbeats) -> CheckInDecision {
        let at = checkIn.at
        // An activity at or before the last check-in, or from before the period began (a
        // forward delayed past a resume, or past the first contact arming the switch), says
        // nothing about this period: starting one from it would move the deadline back, to a
        // false alarm. A retry of it comes with the same time, so it is answered the same.
        if checkIn.forwarded, at <= (self.state.lastCheckInAt ?? .distantPast) || at < self.state.periodStart {
            return .repeated(keep: false)
        }
        // An activity from before an alarm that may have reached the contacts, delayed on its
        // way here, ends it only if the period it would start has time left (see the rule).
        if checkIn.forwarded, let alarmed = self.facts.alarmDecidedAt,
            !SafetyRules.lateActivityEndsAlarm(
                activityAt: at,
                alarmDecidedAt: alarmed,
                thresholdHours: self.state.thresholdHours,
                receivedAt: checkIn.receivedAt
            )
        {
            return .repeated(keep: false)
        }
        if recent.includesRequest { return .repeated(keep: false) }
        // Check-ins that do not count toward the rate limit are kept too (uncounted), so that a
        // late retry of one is known as that check-in: those from the app, at most 64 an hour.
        // (A forwarded activity's retry comes with its own time, which the checks above answer
        // as they did the first time.)
        let keepsUncounted = !checkIn.forwarded && recent.uncounted < SafetyRules.maxUncountedHeartbeatsPerHour
        // Within 5 s of the last check-in (not the last row: one over the rate limit resets the
        // timer too), or at a time not after it: merged into it.
        if let last = self.state.lastCheckInAt, at.timeIntervalSince(last) < SafetyRules.coalesceWindow {
            return .repeated(keep: keepsUncounted)
        }
        // Over the rate limit it still resets the timer.
        let limited = recent.counted.count >= SafetyRules.maxHeartbeatsPerHour
        if let timeZone = checkIn.timeZone { self.state.timeZone = timeZone }
        let allClears = self.startPeriod(at: at, checkIn: true)
        self.reschedule(at: at)
        return .counts(
            record: !limited || keepsUncounted ? .insert(counted: !limited) : .lookUp,
            allClears: allClears,
            retryAfter: limited ? recent.counted.first.map { $0.addingTimeInterval(3600).timeIntervalSince(at) } : nil
        )
    }

    // MARK: Snooze, pause, resume

    /// Moves the deadline 24 h later, at most three times without a check-in, never after it
    /// passed (nor once the alarm was decided: a snooze that read its time before the decider
    /// took the writer, or a clock stepped back, would start a period that alarms again).
    mutating func snooze(at now: Date) throws(SwitchRefusal) {
        var next = self
        // A pause that ran out before the decider saw it: the snooze moves the period it began.
        next.endPauseIfOver(at: now)
        let clock = next.clock
        if let pausedUntil = next.state.pausedUntil, clock.isPaused(at: now) {
            // Its end starts a new period, snoozes gone: a snooze now would change nothing.
            throw .paused(until: pausedUntil)
        }
        guard next.state.snoozesInARow < SafetyRules.maxSnoozesInARow else { throw .tooManySnoozes }
        guard clock.deadline > now else { throw .deadlinePassed }
        guard !next.decided.contains(.alert) else { throw .contactsAlarmed }
        next.state.snoozes += 1
        next.state.snoozesInARow += 1
        next.newEpoch(at: now)
        next.reschedule(at: now)
        self = next
    }

    /// Nothing fires until `until` (or a resume); then a new period starts. Pausing is a sign
    /// of life: nothing decided before it goes out, alarms included.
    mutating func pause(until: Date, at now: Date) {
        self.state.pausedUntil = until
        self.cancelPending(.warningsAndAlarms)
        self.reschedule(at: now)
    }

    mutating func resume(at now: Date) throws(SwitchRefusal) {
        guard self.state.pausedUntil.map({ $0 > now }) == true else { throw .notPaused }
        self.state.pausedUntil = nil
        self.startPeriod(at: now, checkIn: false)
        self.reschedule(at: now)
    }

    // MARK: Settings and contacts

    /// New settings (threshold, zone, reminder, active or not). A new threshold moves the
    /// deadline (it counts from the last check-in); a new zone moves the reminder as much as a new
    /// time does. Made inactive, the switch cancels what is pending; active again, it starts a new
    /// period then, as a resume does (the period's messages are read for that).
    mutating func changeSettings(to settings: SwitchState, at now: Date) {
        let before = self.state
        self.state.isActive = settings.isActive
        if before.isActive && !settings.isActive {
            self.cancelPending(.warningsAndAlarms)
            self.cancelPending(.reminders)
        }
        let reactivated = !before.isActive && settings.isActive
        if reactivated { self.startPeriod(at: now, checkIn: false) }
        self.state.thresholdHours = settings.thresholdHours
        self.state.timeZone = settings.timeZone
        self.state.reminderEnabled = settings.reminderEnabled
        self.state.reminderHour = settings.reminderHour
        self.state.reminderMinute = settings.reminderMinute
        self.state.updatedAt = now
        if self.state.thresholdHours != before.thresholdHours {
            if self.decided.contains(.alert) {
                // The alarm went out this period: only a check-in arms the switch again,
                // whatever the new deadline (never the alarm twice in a period).
                self.cancelPending(.warnings)
            } else {
                // A new deadline: warnings decided for the old one do not stand for it.
                self.newEpoch(at: now)
            }
        }
        let reminder = { (state: SwitchState) in (state.reminderEnabled, state.reminderHour, state.reminderMinute) }
        if self.state.reminderEnabled,
            reactivated || reminder(before) != reminder(self.state) || self.state.timeZone != before.timeZone
        {
            self.reconsiderTodaysReminder(at: now)
        }
        self.reschedule(at: now)
    }

    enum ContactChange: Equatable, Sendable {
        case added
        case duplicate
        case full
    }

    /// A new contact. The first arms the switch: its period counts from now, not from when
    /// the profile was made (that deadline may be long past: an alarm as the first email).
    /// Snoozes stay, so the deadline only moves later.
    mutating func addContact(_ contact: SwitchContact, at now: Date) -> ContactChange {
        if self.facts.contacts.contains(where: { $0.key == contact.key }) { return .duplicate }
        guard self.facts.contacts.count < SafetyRules.maxContacts else { return .full }
        let arms = self.facts.contacts.isEmpty
        self.facts.contacts.append(contact)
        if arms, self.state.periodStart < now {
            self.newEpoch(at: now)
            self.state.periodStart = now
        }
        self.reschedule(at: now)
        return .added
    }

    /// A contact removed: their pending alarm is not sent.
    mutating func removeContact(id: String, at now: Date) {
        self.facts.contacts.removeAll { $0.id == id }
        self.cancelPending(.contact(id: id))
        self.reschedule(at: now)
    }

    // MARK: Deciding

    /// What is due at `now`: warnings while the deadline is ahead, the alarm (one email per
    /// contact) once it passed, and the daily reminder.
    mutating func decideDue(at now: Date) {
        self.endPauseIfOver(at: now)
        let clock = self.clock
        let items = clock.itemsDue(at: now, decided: self.decided)
        // A warning still retrying is stale once a later one (or the alarm) is decided.
        if !items.send.isEmpty { self.cancelPending(.warnings) }
        // Earlier warnings that fell due with a later one: decided, never sent.
        for item in items.skip {
            self.record(item.kind, to: .user(key: ""), words: .none, sends: false, at: now)
        }
        for item in items.send {
            switch item {
            case .warning:
                self.record(item.kind, to: .user(key: ""), words: .due(item), sends: true, at: now)
            case .alert:
                for contact in self.facts.contacts {
                    self.record(item.kind, to: .contact(contact), words: .due(item), sends: true, at: now)
                }
            }
        }
        if let reminder = self.reminderDue(clock, at: now), reminder.time <= now {
            let key = ReminderKey.of(reminder.date)
            self.record(MessageKind.reminder, to: .user(key: key), words: .reminder, sends: true, at: now)
        }
        self.reschedule(at: now)
    }

    /// An alarm to a contact (`contactID`, `addressKey`) of `epoch` that reached them, or may
    /// have, known only after a check-in cancelled it while it was under way: the contact
    /// holds an alarm that is over, and is sent the all-clear, once per contact and period as
    /// any all-clear (`allClearedSince`: contacts sent one in a later epoch already). A
    /// contact removed and not added again gets nothing more.
    mutating func lateAlarmArrived(
        epoch: Int,
        contactID: String,
        addressKey: String,
        allClearedSince: Set<String>,
        at now: Date
    ) {
        guard self.state.checkInEpoch > epoch,
            let contact = self.contacts(alerted: [AlertedContact(contactID: contactID, key: addressKey)]).first,
            !allClearedSince.contains(contact.id)
        else { return }
        let words = SwitchMessage.Words.allClear(checkedInAt: self.state.lastCheckInAt ?? now)
        self.record(MessageKind.allClear, to: .contact(contact), words: words, sends: true, at: now)
    }

    /// Whether a warning of `epoch` still pending on `state`'s switch is stale: its deadline has
    /// passed ("we'll email your contact in 10 minutes" while they are being emailed), or a new
    /// epoch began. The deadline does not depend on the contacts: none are read for it.
    static func isStale(warningOf epoch: Int, on state: SwitchState, at now: Date) -> Bool {
        let machine = SwitchMachine(state: state, facts: SwitchFacts(contacts: []))
        return state.epoch != epoch || machine.clock.deadline <= now
    }
}

/// The kinds of message the switch records besides its due items'.
enum MessageKind {
    static let alert = DueItem.alert.kind
    static let allClear = "all_clear"
    static let reminder = "reminder"
    static let test = "test"
    /// An invitation to a contact (re-sent ones too).
    static let invitation = "invitation"
}
