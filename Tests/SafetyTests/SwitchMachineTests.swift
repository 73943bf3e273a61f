import Foundation
import Testing

@testable import SafetyService

/// The switch's rules as a table: a state and facts, one event, the state and effects that
/// come out. No store, no clock.
@Suite("Switch machine: every transition, without a store")
struct SwitchMachineTests {
    /// 2026-01-01 00:00 UTC: the last check-in, and the start of the period.
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)
    static let hour: TimeInterval = 3600
    let t0 = Self.t0
    let hour = Self.hour
    static let mei = SwitchContact(id: "c1", address: "Mei@Example.com")
    static let kai = SwitchContact(id: "c2", address: "kai@example.com")

    /// Threshold 24 h, in UTC, checked in at t0 (epoch 3), one contact; nothing decided.
    static func machine(
        _ state: (inout SwitchState) -> Void = { _ in },
        facts: (inout SwitchFacts) -> Void = { _ in }
    ) -> SwitchMachine {
        var switchState = SwitchState(
            thresholdHours: 24,
            timeZone: "UTC",
            reminderEnabled: false,
            reminderHour: 9,
            reminderMinute: 0,
            isActive: true,
            periodStart: Self.t0,
            lastCheckInAt: Self.t0,
            snoozes: 0,
            snoozesInARow: 0,
            pausedUntil: nil,
            epoch: 3,
            checkInEpoch: 3,
            nextDueAt: Self.t0 + 21 * Self.hour,
            updatedAt: Self.t0
        )
        state(&switchState)
        var switchFacts = SwitchFacts(contacts: [Self.mei], decided: [], period: PeriodMessages(), reminders: [:])
        facts(&switchFacts)
        return SwitchMachine(state: switchState, facts: switchFacts)
    }

    static func message(
        _ kind: String,
        epoch: Int,
        to recipient: SwitchMessage.Recipient,
        _ words: SwitchMessage.Words,
        sends: Bool = true,
        at: Date
    ) -> SwitchEffect {
        .record(SwitchMessage(kind: kind, epoch: epoch, recipient: recipient, words: words, sends: sends, at: at))
    }

    func appCheckIn(at: Date, timeZone: String? = nil) -> SwitchMachine.CheckIn {
        SwitchMachine.CheckIn(at: at, receivedAt: at, forwarded: false, timeZone: timeZone)
    }

    // MARK: Check-ins

    @Test("a check-in starts a period: new epoch, snoozes gone, the first warning 21 h on")
    func checkInCounts() {
        var machine = Self.machine {
            $0.snoozes = 2
            $0.snoozesInARow = 2
        }
        let at = self.t0 + 30 * self.hour
        let decision = machine.checkIn(self.appCheckIn(at: at, timeZone: "Asia/Taipei"), recent: RecentHeartbeats())
        #expect(decision == .counts(record: .insert(counted: true), allClears: 0, retryAfter: nil))
        #expect(machine.state.epoch == 4 && machine.state.checkInEpoch == 4)
        #expect(machine.state.periodStart == at && machine.state.lastCheckInAt == at)
        #expect(machine.state.snoozes == 0 && machine.state.snoozesInARow == 0)
        #expect(machine.state.timeZone == "Asia/Taipei")
        #expect(machine.state.nextDueAt == at + 21 * self.hour)
        #expect(machine.effects.isEmpty)
    }

    @Test("a check-in cancels what is pending and sends the all-clear to each contact alerted, found by id or address")
    func checkInAllClears() {
        let again = SwitchContact(id: "c9", address: "kai@example.com")
        var machine = Self.machine { _ in
        } facts: {
            $0.contacts = [Self.mei, again]
            $0.period = PeriodMessages(
                hasPending: true,
                alerted: [
                    AlertedContact(contactID: "c1", address: "mei@example.com"),
                    // Removed and added again since (a new id): still holds the alarm.
                    AlertedContact(contactID: "c2", address: "KAI@example.com"),
                    // Removed for good: nothing more.
                    AlertedContact(contactID: "c3", address: "gone@example.com"),
                ]
            )
        }
        let at = self.t0 + 25 * self.hour
        let decision = machine.checkIn(self.appCheckIn(at: at), recent: RecentHeartbeats())
        #expect(decision == .counts(record: .insert(counted: true), allClears: 2, retryAfter: nil))
        #expect(
            machine.effects == [
                .cancelPending(.warningsAndAlarms),
                Self.message("all_clear", epoch: 4, to: .contact(Self.mei), .allClear(checkedInAt: at), at: at),
                Self.message("all_clear", epoch: 4, to: .contact(again), .allClear(checkedInAt: at), at: at),
            ]
        )
    }

    @Test(
        "repeats change nothing: the same request id, within 5 s (kept uncounted while under 64 an hour)",
        arguments: [
            (RecentHeartbeats(includesRequest: true), 60.0, SwitchMachine.CheckInDecision.repeated(keep: false)),
            (RecentHeartbeats(), 4.999, .repeated(keep: true)),
            (RecentHeartbeats(uncounted: 64), 4.0, .repeated(keep: false)),
        ]
    )
    func checkInRepeats(recent: RecentHeartbeats, after: TimeInterval, decision: SwitchMachine.CheckInDecision) {
        var machine = Self.machine()
        let before = machine.state
        #expect(machine.checkIn(self.appCheckIn(at: self.t0 + after), recent: recent) == decision)
        #expect(machine.state == before && machine.effects.isEmpty)
    }

    @Test("over 120 counted in an hour: the timer is reset, the check-in kept uncounted, or looked up past 64 of those")
    func checkInRateLimit() {
        let at = self.t0 + 2 * self.hour
        let counted = (0..<120).map { at - 3000 + Double($0) }
        var kept = Self.machine()
        #expect(
            kept.checkIn(self.appCheckIn(at: at), recent: RecentHeartbeats(counted: counted))
                == .counts(record: .insert(counted: false), allClears: 0, retryAfter: 600)
        )
        #expect(kept.state.periodStart == at)
        var looked = Self.machine()
        #expect(
            looked.checkIn(self.appCheckIn(at: at), recent: RecentHeartbeats(counted: counted, uncounted: 64))
                == .counts(record: .lookUp, allClears: 0, retryAfter: 600)
        )
    }

    @Test("a forwarded activity from before the period, or before an alarm with too little time left, says nothing")
    func forwardedActivity() {
        let received = self.t0 + 30 * self.hour
        func forwarded(_ at: Date, alarm: Date?) -> SwitchMachine.CheckInDecision {
            var machine = Self.machine { _ in
            } facts: {
                $0.alarmDecidedAt = alarm
            }
            return machine.checkIn(
                SwitchMachine.CheckIn(at: at, receivedAt: received, forwarded: true, timeZone: nil),
                recent: RecentHeartbeats()
            )
        }
        #expect(forwarded(self.t0, alarm: nil) == .repeated(keep: false))
        #expect(forwarded(self.t0 - 1, alarm: nil) == .repeated(keep: false))
        let counts = SwitchMachine.CheckInDecision.counts(record: .insert(counted: true), allClears: 0, retryAfter: nil)
        #expect(forwarded(self.t0 + self.hour, alarm: nil) == counts)
        // The alarm was decided at t0 + 24 h: an activity after it ends it.
        #expect(forwarded(self.t0 + 25 * self.hour, alarm: self.t0 + 24 * self.hour) == counts)
        // From before it, it ends it only if its period would have more than 3 h left.
        #expect(forwarded(self.t0 + 10 * self.hour, alarm: self.t0 + 24 * self.hour) == counts)
        #expect(forwarded(self.t0 + 9 * self.hour, alarm: self.t0 + 24 * self.hour) == .repeated(keep: false))
    }

    // MARK: Snooze, pause, resume

    @Test("a snooze moves the deadline 24 h in a new epoch, cancelling the warnings decided for the old one")
    func snooze() throws {
        var machine = Self.machine()
        let now = self.t0 + 22 * self.hour
        try machine.snooze(at: now)
        #expect(machine.state.snoozes == 1 && machine.state.snoozesInARow == 1 && machine.state.epoch == 4)
        #expect(machine.state.nextDueAt == self.t0 + 45 * self.hour)
        #expect(machine.effects == [.cancelPending(.warnings)])
    }

    @Test(
        "a snooze is refused while paused, after 3 in a row, past the deadline, and once the alarm was decided",
        arguments: [
            ("paused", SwitchRefusal.paused(until: SwitchMachineTests.t0 + 40 * SwitchMachineTests.hour)),
            ("three", .tooManySnoozes),
            ("late", .deadlinePassed),
            ("alarmed", .contactsAlarmed),
        ]
    )
    func snoozeRefused(case name: String, refusal: SwitchRefusal) {
        var machine = Self.machine { state in
            if name == "paused" { state.pausedUntil = Self.t0 + 40 * Self.hour }
            if name == "three" { state.snoozesInARow = 3 }
        } facts: { facts in
            if name == "alarmed" { facts.decided = [.alert] }
        }
        let before = machine
        let now = self.t0 + (name == "late" ? 24 : 22) * self.hour
        #expect(throws: refusal) { try machine.snooze(at: now) }
        #expect(machine.state == before.state && machine.effects.isEmpty)
    }

    @Test("a pause that ran out before a snooze began a period at its end; the snooze moves that one")
    func snoozeAfterPause() throws {
        var machine = Self.machine { $0.pausedUntil = Self.t0 + 2 * Self.hour }
        try machine.snooze(at: self.t0 + 3 * self.hour)
        #expect(machine.state.pausedUntil == nil && machine.state.periodStart == self.t0 + 2 * self.hour)
        #expect(machine.state.epoch == 5 && machine.state.snoozes == 1)
        #expect(machine.state.nextDueAt == self.t0 + (2 + 24 + 24 - 3) * self.hour)
        #expect(machine.effects == [.cancelPending(.warnings)])
    }

    @Test("a refused snooze changes nothing, not even the period a pause's end would have begun")
    func refusedSnoozeAfterPause() {
        var machine = Self.machine { state in
            state.pausedUntil = Self.t0 + 2 * Self.hour
            state.snoozesInARow = 3
        } facts: {
            $0.period = PeriodMessages(hasPending: true)
        }
        let before = machine.state
        #expect(throws: SwitchRefusal.tooManySnoozes) { try machine.snooze(at: self.t0 + 3 * self.hour) }
        #expect(machine.state == before && machine.effects.isEmpty)
    }

    @Test("a pause cancels everything pending and holds the switch until it ends; a resume starts a period")
    func pauseAndResume() throws {
        var machine = Self.machine()
        let until = self.t0 + 48 * self.hour
        machine.pause(until: until, at: self.t0 + self.hour)
        #expect(machine.effects == [.cancelPending(.warningsAndAlarms)])
        #expect(machine.state.pausedUntil == until && machine.state.nextDueAt == until)
        let now = self.t0 + 5 * self.hour
        try machine.resume(at: now)
        #expect(machine.state.pausedUntil == nil && machine.state.periodStart == now && machine.state.epoch == 4)
        #expect(machine.state.lastCheckInAt == self.t0, "a resume is no check-in")
        #expect(machine.state.nextDueAt == now + 21 * self.hour)
        #expect(machine.effects == [.cancelPending(.warningsAndAlarms)], "the resume found nothing pending")
        var unpaused = Self.machine()
        #expect(throws: SwitchRefusal.notPaused) { try unpaused.resume(at: now) }
    }

    // MARK: Settings and contacts

    @Test("a new threshold starts a new epoch, unless the alarm went out: then only the warnings go")
    func newThreshold() {
        var settings = Self.machine().state
        settings.thresholdHours = 48
        var fresh = Self.machine()
        fresh.changeSettings(to: settings, at: self.t0 + self.hour)
        #expect(fresh.state.epoch == 4 && fresh.effects == [.cancelPending(.warnings)])
        #expect(fresh.state.nextDueAt == self.t0 + 45 * self.hour)
        var alarmed = Self.machine { _ in
        } facts: {
            $0.decided = [.alert]
        }
        alarmed.changeSettings(to: settings, at: self.t0 + 30 * self.hour)
        #expect(alarmed.state.epoch == 3 && alarmed.effects == [.cancelPending(.warnings)])
    }

    @Test("a reminder turned on after today's time starts tomorrow; before it, it comes today")
    func reminderTurnedOn() {
        var settings = Self.machine().state
        settings.reminderEnabled = true
        var late = Self.machine()
        late.changeSettings(to: settings, at: self.t0 + 10 * self.hour)
        let key = "reminder:2026-01-01"
        #expect(
            late.effects == [
                Self.message(
                    "reminder",
                    epoch: 3,
                    to: .user(key: key),
                    .none,
                    sends: false,
                    at: self.t0 + 10 * self.hour
                )
            ]
        )
        #expect(late.facts.reminders == [key: false])
        var early = Self.machine { $0.lastCheckInAt = Self.t0 - 24 * Self.hour }
        early.changeSettings(to: settings, at: self.t0 + 8 * self.hour)
        #expect(early.effects == [.forgetSkippedReminder(key: key)])
        #expect(early.state.nextDueAt == self.t0 + 9 * self.hour)
    }

    @Test("the first contact arms the switch from now; a duplicate (case aside) and an 11th are refused")
    func addContact() {
        var unarmed = Self.machine {
            $0.nextDueAt = nil
        } facts: {
            $0.contacts = []
        }
        let now = self.t0 + 30 * self.hour
        #expect(unarmed.addContact(Self.mei, at: now) == .added)
        #expect(unarmed.state.periodStart == now && unarmed.state.epoch == 4)
        #expect(unarmed.state.nextDueAt == now + 21 * self.hour)
        #expect(unarmed.effects == [.cancelPending(.warnings)])
        var armed = Self.machine()
        #expect(armed.addContact(Self.kai, at: now) == .added)
        #expect(armed.state.epoch == 3 && armed.effects.isEmpty)
        var duplicate = Self.machine()
        #expect(duplicate.addContact(SwitchContact(id: "c5", address: "MEI@example.com"), at: now) == .duplicate)
        var full = Self.machine { _ in
        } facts: { facts in
            facts.contacts = (0..<10).map { SwitchContact(id: "c\($0)", address: "p\($0)@example.com") }
        }
        #expect(full.addContact(Self.kai, at: now) == .full)
        #expect(duplicate.effects.isEmpty && full.effects.isEmpty)
    }

    @Test("a removed contact's pending alarm is cancelled; without contacts nothing is due")
    func removeContact() {
        var machine = Self.machine()
        machine.removeContact(id: "c1", at: self.t0 + self.hour)
        #expect(machine.effects == [.cancelPending(.contact(id: "c1"))])
        #expect(machine.state.nextDueAt == nil)
    }

    // MARK: Deciding

    @Test("due: the 3 h warning, then only the latest of warnings due together, then the alarm to every contact")
    func decideDue() {
        var first = Self.machine()
        let warningAt = self.t0 + 21 * self.hour
        first.decideDue(at: warningAt)
        let warning = DueItem.warning(minutesBefore: 180)
        #expect(
            first.effects == [
                .cancelPending(.warnings),
                Self.message("warning_180", epoch: 3, to: .user(key: ""), .due(warning), at: warningAt),
            ]
        )
        #expect(first.state.nextDueAt == self.t0 + 23 * self.hour)

        var behind = Self.machine()
        let late = self.t0 + 23.5 * self.hour
        behind.decideDue(at: late)
        #expect(
            behind.effects == [
                .cancelPending(.warnings),
                Self.message("warning_180", epoch: 3, to: .user(key: ""), .none, sends: false, at: late),
                Self.message("warning_60", epoch: 3, to: .user(key: ""), .due(.warning(minutesBefore: 60)), at: late),
            ]
        )

        var alarm = Self.machine { _ in
        } facts: {
            $0.contacts = [Self.mei, Self.kai]
        }
        let deadline = self.t0 + 24 * self.hour
        alarm.decideDue(at: deadline)
        #expect(
            alarm.effects == [
                .cancelPending(.warnings),
                Self.message("alert", epoch: 3, to: .contact(Self.mei), .due(.alert), at: deadline),
                Self.message("alert", epoch: 3, to: .contact(Self.kai), .due(.alert), at: deadline),
            ]
        )
        #expect(alarm.state.nextDueAt == nil, "nothing is left in the period")
    }

    @Test("nothing is decided while paused or unarmed; a pause that ran out begins a period at its end")
    func decideNothing() {
        var paused = Self.machine { $0.pausedUntil = Self.t0 + 100 * Self.hour }
        paused.decideDue(at: self.t0 + 30 * self.hour)
        #expect(paused.effects.isEmpty && paused.state.nextDueAt == self.t0 + 100 * self.hour)
        var unarmed = Self.machine { _ in
        } facts: {
            $0.contacts = []
        }
        unarmed.decideDue(at: self.t0 + 30 * self.hour)
        #expect(unarmed.effects.isEmpty && unarmed.state.nextDueAt == nil)
        var over = Self.machine { $0.pausedUntil = Self.t0 + 10 * Self.hour }
        over.decideDue(at: self.t0 + 12 * self.hour)
        #expect(over.state.pausedUntil == nil && over.state.periodStart == self.t0 + 10 * self.hour)
        #expect(over.state.epoch == 4 && over.effects.isEmpty)
        #expect(over.state.nextDueAt == self.t0 + 31 * self.hour)
    }

    @Test("the daily reminder goes out at its time, then tomorrow's is next; a day checked in needs none")
    func dailyReminder() {
        var machine = Self.machine {
            $0.reminderEnabled = true
            $0.lastCheckInAt = Self.t0 - 24 * Self.hour
        } facts: {
            $0.decided = [.warning(minutesBefore: 180), .warning(minutesBefore: 60), .warning(minutesBefore: 10)]
        }
        let at = self.t0 + 9 * self.hour
        machine.decideDue(at: at)
        #expect(
            machine.effects == [
                Self.message("reminder", epoch: 3, to: .user(key: "reminder:2026-01-01"), .reminder, at: at)
            ]
        )
        #expect(machine.state.nextDueAt == self.t0 + 24 * self.hour, "the alarm, before tomorrow's 09:00")
        var checkedIn = Self.machine {
            $0.reminderEnabled = true
            $0.lastCheckInAt = Self.t0 + Self.hour
        }
        checkedIn.decideDue(at: at)
        #expect(checkedIn.effects.isEmpty)
    }

    // MARK: Deliveries

    @Test("an alarm known to have arrived after a check-in cancelled it earns its contact one all-clear")
    func lateAlarm() {
        let now = self.t0 + 2 * self.hour
        func late(epoch: Int, contactID: String, address: String, cleared: Set<String> = []) -> [SwitchEffect] {
            var machine = Self.machine()
            machine.lateAlarmArrived(
                epoch: epoch,
                contactID: contactID,
                addressKey: SafetyRules.addressKey(address),
                allClearedSince: cleared,
                at: now
            )
            return machine.effects
        }
        let allClear = Self.message(
            "all_clear",
            epoch: 3,
            to: .contact(Self.mei),
            .allClear(checkedInAt: self.t0),
            at: now
        )
        #expect(late(epoch: 2, contactID: "c1", address: "x@example.com") == [allClear])
        #expect(late(epoch: 2, contactID: "old", address: "mei@example.com") == [allClear], "added again: by address")
        #expect(late(epoch: 2, contactID: "c1", address: "", cleared: ["c1"]).isEmpty, "once per period")
        #expect(late(epoch: 3, contactID: "c1", address: "").isEmpty, "no check-in since")
        #expect(late(epoch: 2, contactID: "gone", address: "gone@example.com").isEmpty, "removed for good")
    }

    @Test("a warning is stale in a later epoch or once its deadline has passed")
    func staleWarning() {
        let state = Self.machine().state
        #expect(!SwitchMachine.isStale(warningOf: 3, on: state, at: self.t0 + 23 * self.hour))
        #expect(SwitchMachine.isStale(warningOf: 3, on: state, at: self.t0 + 24 * self.hour))
        #expect(SwitchMachine.isStale(warningOf: 2, on: state, at: self.t0 + self.hour))
    }

    // MARK: The facts each event reads

    /// Only the facts the store reads for each event (``FactReads``), reminders
    /// off: an event that read one left out would stop the process.
    static func bare(_ state: (inout SwitchState) -> Void = { _ in }, reads: FactReads) -> SwitchMachine {
        var machine = Self.machine(state)
        machine.facts = SwitchFacts(
            contacts: machine.facts.contacts,
            decided: reads.contains(.decided) ? [] : nil,
            period: reads.contains(.period) ? PeriodMessages() : nil,
            reminders: reads.contains(.reminders) ? [:] : nil
        )
        return machine
    }

    @Test("each event runs on the facts its store reads for it")
    func factsRead() throws {
        var checkIn = Self.bare(reads: [.period])
        _ = checkIn.checkIn(self.appCheckIn(at: self.t0 + self.hour), recent: RecentHeartbeats())
        var snooze = Self.bare(reads: [.decided])
        try snooze.snooze(at: self.t0 + self.hour)
        var pause = Self.bare(reads: [.decided])
        pause.pause(until: self.t0 + 2 * self.hour, at: self.t0 + self.hour)
        var resume = Self.bare({ $0.pausedUntil = Self.t0 + 2 * Self.hour }, reads: [.period])
        try resume.resume(at: self.t0 + self.hour)
        var decide = Self.bare(reads: [.decided])
        decide.decideDue(at: self.t0 + 21 * self.hour)
        // A pause run out by then: the period is read too.
        var ended = Self.bare({ $0.pausedUntil = Self.t0 + 2 * Self.hour }, reads: [.decided, .period])
        ended.decideDue(at: self.t0 + 3 * self.hour)
        var snoozeEnded = Self.bare({ $0.pausedUntil = Self.t0 + 2 * Self.hour }, reads: [.decided, .period])
        try snoozeEnded.snooze(at: self.t0 + 3 * self.hour)
        #expect(ended.state.periodStart == self.t0 + 2 * self.hour && snoozeEnded.state.snoozes == 1)
        var late = Self.bare(reads: [])
        late.lateAlarmArrived(epoch: 2, contactID: "c1", addressKey: "", allClearedSince: [], at: self.t0)
        #expect(late.effects.count == 1)
    }
}
