import Foundation
import HearthCore

// The steps the events are made of: periods and epochs, what is pending, the next due time,
// the daily reminder. Each keeps the facts true of the state it leaves.
extension SwitchMachine {
    /// The due items the current epoch has decided.
    var decided: Set<DueItem> {
        guard let decided = self.facts.decided else { preconditionFailure("the decided items were not read") }
        return decided
    }

    /// A new period from `start`: a check-in (cancels what is pending, sends all-clears) or
    /// the end of a pause. Answers how many all-clears it recorded.
    @discardableResult
    mutating func startPeriod(at start: Date, checkIn: Bool) -> Int {
        guard let period = self.facts.period else { preconditionFailure("the period's messages were not read") }
        // Pending warnings and alarms are never older than the last check-in: each check-in
        // cancels them all.
        if period.hasPending { self.cancelPending(.warningsAndAlarms) }
        self.state.epoch += 1
        self.facts.decided = []
        self.state.periodStart = start
        self.state.snoozes = 0
        self.state.updatedAt = start
        guard checkIn else { return 0 }
        self.state.snoozesInARow = 0
        self.state.lastCheckInAt = start
        self.state.checkInEpoch = self.state.epoch
        // The new period has no message yet but the all-clears below.
        self.facts.period = PeriodMessages()
        guard !period.alerted.isEmpty else { return 0 }
        let contacts = self.contacts(alerted: period.alerted)
        for contact in contacts {
            self.record(
                MessageKind.allClear,
                to: .contact(contact),
                words: .allClear(checkedInAt: start),
                sends: true,
                at: start
            )
        }
        return contacts.count
    }

    /// A pause that ran out: a new period starts when it ended, unless a check-in since began a
    /// later one (never moved back to the pause's end: an early alarm).
    mutating func endPauseIfOver(at now: Date) {
        guard let pausedUntil = self.state.pausedUntil, pausedUntil <= now else { return }
        self.state.pausedUntil = nil
        if self.state.periodStart < pausedUntil { self.startPeriod(at: pausedUntil, checkIn: false) }
    }

    /// A new epoch of the same period (a snooze, a new threshold, the switch armed): warnings
    /// decided for the old deadline do not stand.
    mutating func newEpoch(at now: Date) {
        self.cancelPending(.warnings)
        self.state.epoch += 1
        self.facts.decided = []
        self.state.updatedAt = now
    }

    mutating func cancelPending(_ scope: SwitchEffect.CancelScope) {
        self.effects.append(.cancelPending(scope))
        if scope == .warningsAndAlarms { self.facts.period?.hasPending = false }
    }

    /// Records a message of the current epoch; a due item's counts as decided.
    mutating func record(
        _ kind: String,
        to recipient: SwitchMessage.Recipient,
        words: SwitchMessage.Words,
        sends: Bool,
        at now: Date
    ) {
        let message = SwitchMessage(
            kind: kind,
            epoch: self.state.epoch,
            recipient: recipient,
            words: words,
            sends: sends,
            at: now
        )
        self.effects.append(.record(message))
        if let item = SwitchClock.items.first(where: { $0.kind == kind }) {
            self.facts.decided?.insert(item)
            if sends { self.facts.period?.hasPending = true }
        }
        if kind == MessageKind.reminder, case .user(let key) = recipient {
            // One recorded before stays as it was (once per epoch and key, as the outbox keeps it).
            let before = self.facts.reminders?[key] ?? false
            self.facts.reminders?[key] = before || sends
        }
    }

    /// Sets when the scheduler looks at this switch next: the next due item, the next reminder,
    /// or, for reminders paused on a switch not armed (which has no item to wake it), the end of
    /// the pause.
    mutating func reschedule(at now: Date) {
        let clock = self.clock
        let next = clock.nextDue(after: now, decided: self.decided)
        let reminder = self.reminderDue(clock, at: now).map { max($0.time, now) }
        let pauseEnd =
            self.state.reminderEnabled && self.state.isActive ? self.state.pausedUntil.map { max($0, now) } : nil
        self.state.nextDueAt = [next, reminder, pauseEnd].compactMap { $0 }.min()
    }

    /// The next daily reminder (nil when off, paused or inactive), contacts or not: it builds
    /// the habit before anyone is watching. A day needs none once the user checked in that day or
    /// was reminded.
    func reminderDue(_ clock: SwitchClock, at now: Date) -> (date: LocalDate, time: Date)? {
        guard self.state.reminderEnabled, self.state.isActive, !clock.isPaused(at: now) else { return nil }
        guard let reminders = self.facts.reminders else { preconditionFailure("the reminders were not read") }
        let zone = self.state.zone
        let rule = DailyReminderRule(hour: self.state.reminderHour, minute: self.state.reminderMinute, zone: zone)
        let checkedIn = self.state.lastCheckInAt.map { LocalDate($0, in: zone) }
        return rule.next(at: now) { date in
            date == checkedIn || reminders[ReminderKey.of(date)] != nil
        }
    }

    /// A reminder turned on (or moved) after today's time has passed starts tomorrow: today's
    /// is recorded as decided, not sent at once. Moved to a time still ahead today, it comes
    /// today after all (unless it came already).
    mutating func reconsiderTodaysReminder(at now: Date) {
        let zone = self.state.zone
        let today = LocalDate(now, in: zone)
        let key = ReminderKey.of(today)
        guard today.instant(hour: self.state.reminderHour, minute: self.state.reminderMinute, in: zone) <= now else {
            self.effects.append(.forgetSkippedReminder(key: key))
            if self.facts.reminders?[key] == false { self.facts.reminders?[key] = nil }
            return
        }
        self.record(MessageKind.reminder, to: .user(key: key), words: .none, sends: false, at: now)
    }

    /// The contacts now that `alerted` names: by id, or by address (case aside) for one
    /// removed and added again since, who still holds the alarm. One removed and not added
    /// again gets nothing more: the user took them off the list.
    func contacts(alerted: [AlertedContact]) -> [SwitchContact] {
        let ids = Set(alerted.map(\.contactID))
        let keys = Set(alerted.map(\.key))
        return self.facts.contacts.filter { ids.contains($0.id) || keys.contains($0.key) }
    }
}
