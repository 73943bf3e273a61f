import Foundation
import GRDB
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@testable import SafetyService

/// Being active, reminders without contacts, and the migrations that bring stored switches along.
@Suite("Switch machine: inactive profiles and reminders without contacts")
struct SwitchActivityTests {
    let t0 = SwitchMachineTests.t0
    let hour = SwitchMachineTests.hour

    @Test("made inactive: warnings, alarms and reminders still to go are cancelled; nothing is scheduled")
    func deactivation() {
        var machine = SwitchMachineTests.machine { $0.reminderEnabled = true }
        var settings = machine.state
        settings.isActive = false
        machine.changeSettings(to: settings, at: self.t0 + self.hour)
        #expect(machine.effects.contains(.cancelPending(.warningsAndAlarms)))
        #expect(machine.effects.contains(.cancelPending(.reminders)))
        #expect(machine.state.nextDueAt == nil && machine.clock.state(at: self.t0 + self.hour) == .notArmed)
    }

    @Test("reminders on a switch without contacts: the next reminder is scheduled; paused, the pause's end")
    func remindersWithoutContacts() {
        var machine = SwitchMachineTests.machine(
            {
                $0.reminderEnabled = true
                $0.reminderHour = 9
                // Never checked in: today needs its reminder.
                $0.lastCheckInAt = nil
            },
            facts: { $0.contacts = [] }
        )
        machine.reschedule(at: self.t0 + self.hour)
        #expect(machine.state.nextDueAt == self.t0 + 9 * self.hour, "09:00 UTC the same day")
        machine.pause(until: self.t0 + 50 * self.hour, at: self.t0 + self.hour)
        #expect(machine.state.nextDueAt == self.t0 + 50 * self.hour, "nothing else would wake it at the end")
    }

    @Test("v10: stored switches with reminders on and nothing scheduled get their next reminder time, never now")
    func reminderMigration() throws {
        let queue = try DatabaseQueue()
        let keys = DataKeys.random()
        // 2026-01-01 10:00 UTC: Taipei's 09:00 has passed (18:00 there), New York's is ahead.
        let now = self.t0 + 10 * self.hour
        let migrator = SafetyMigrations.migrator(keys: keys, now: now)
        try migrator.migrate(queue, upTo: "v9: a profile can be inactive")
        try queue.write { db in
            for (user, zone, enabled, active, paused) in [
                ("taipei", "Asia/Taipei", true, true, nil), ("york", "America/New_York", true, true, nil),
                ("off", "UTC", false, true, nil), ("inactive", "UTC", true, false, nil),
                ("paused", "UTC", true, true, Optional(now + 30 * self.hour)),
            ] as [(String, String, Bool, Bool, Date?)] {
                try db.execute(
                    sql: """
                        INSERT INTO profile (user_id, name, email, threshold_hours, language, time_zone, reminder_enabled,
                          reminder_hour, reminder_minute, push_token, count_activity, period_start, snoozes, epoch,
                          check_in_epoch, created_at, updated_at, is_active, paused_until)
                        VALUES (?, x'00', x'00', 24, 'en', ?, ?, 9, 0, '', 0, ?, 0, 1, 1, ?, ?, ?, ?)
                        """,
                    arguments: [
                        user, zone, enabled, StoredDate(now), StoredDate(now), StoredDate(now), active,
                        paused.map(StoredDate.init),
                    ]
                )
            }
        }
        try migrator.migrate(queue)
        let due = try queue.read { db in
            try Dictionary(
                uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT user_id, next_due_at FROM profile").map {
                    ($0["user_id"] as String, ($0["next_due_at"] as StoredDate?)?.date)
                }
            )
        }
        #expect(due["taipei"] == self.t0 + 25 * self.hour, "tomorrow 09:00 in Taipei (01:00 UTC)")
        #expect(due["york"] == self.t0 + 14 * self.hour, "today 09:00 in New York (14:00 UTC)")
        #expect(due["paused"] == now + 30 * self.hour, "the end of the pause")
        #expect(due["off"] == .some(nil) && due["inactive"] == .some(nil))
    }
}
