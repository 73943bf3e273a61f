import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthScheduler
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

@Suite("Safety store: alerts racing check-ins")
struct AlertRaceTests {
    let t0 = SafetySystem.start
    let hour: TimeInterval = 3600
    /// The stores' keys: a restarted store opens what the killed one sealed.
    let keys = DataKeys.random()

    private func armed(contacts: [String], location: StoreLocation = .inMemory) async throws -> (
        SafetyStore, ManualClock
    ) {
        let clock = ManualClock(self.t0)
        let store = try SafetyStore(location: location, keys: self.keys, clock: clock)
        _ = try await store.upsertProfile("mei") { profile in
            profile.name = "Mei Chen"
            profile.email = "mei@example.com"
        }
        for email in contacts { try await store.addConfirmedContact("mei", email: email) }
        return (store, clock)
    }

    /// Decides what is due, as the decider does.
    private func decide(_ store: SafetyStore, at now: Date) async throws {
        _ = try await store.decideDue(
            now: now,
            limit: 10
        )
    }

    /// Decides what is due, and claims the alert emails as the email sender does.
    private func decideAlert(_ store: SafetyStore, at now: Date) async throws -> [AlertRecord] {
        try await self.decide(store, at: now)
        return try await self.claim(store, at: now).filter { $0.kind == AlertRecord.Kind.alert }
    }

    /// Decides the alarm at `now` and records its first email as delivered.
    @discardableResult
    private func deliveredAlarm(_ store: SafetyStore, at now: Date, reply: String = "") async throws -> AlertRecord {
        let alarm = try #require(try await self.decideAlert(store, at: now).first)
        try await store.record(alarm.claim, attempt: .success(reply), now: now)
        return alarm
    }

    private func claim(_ store: SafetyStore, at now: Date) async throws -> [AlertRecord] {
        try await store.claimDue(.email, now: now, limit: 10, lease: AlertSender.lease).map(\.alert)
    }

    /// Every message still to be delivered, claimed or not.
    private func pending(_ store: SafetyStore) async throws -> [AlertRecord] {
        try await store.base.writer.read { db in
            try AlertRecord.fetchAll(db, keys: store.keys, "WHERE state = 'pending'")
        }
    }

    private func message(_ id: String, in store: SafetyStore) async throws -> AlertRecord? {
        try await store.base.writer.read { db in
            try AlertRecord.fetchAll(db, keys: store.keys, "WHERE id = ?", binding: id).first
        }
    }

    /// An attempt whose answer never came after the message was sent: it may have arrived.
    private func timedOut(_ alert: AlertRecord, in store: SafetyStore, at now: Date) async throws {
        try await self.failed(alert, in: store, at: now, mayHaveArrived: true)
    }

    private func failed(_ alert: AlertRecord, in store: SafetyStore, at now: Date, mayHaveArrived: Bool) async throws {
        try await store.record(
            alert.claim,
            attempt: .failure(DeliveryFailure(message: "failed", isPermanent: false, mayHaveArrived: mayHaveArrived)),
            now: now
        )
    }

    private func checkIn(_ store: SafetyStore) async throws -> HeartbeatResult {
        try await store.recordHeartbeat(
            "mei",
            timeZone: nil,
            deviceInfo: "",
            requestID: UUID().uuidString,
            source: "app"
        )
    }

    @Test(
        "an alarm email is tried again for as long as its server fails for a reason that may pass; a warning gives up at its deadline, an all-clear after 12"
    )
    func alarmNeverGivesUp() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        var alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        // 30 attempts: 30 s, 1 min, ... then hourly, a day and more of an SMTP relay down.
        for attempt in 1...30 {
            try await self.failed(alert, in: store, at: clock.now(), mayHaveArrived: false)
            let after = try #require(try await self.message(alert.id, in: store))
            #expect(after.state == .pending, "attempt \(attempt)")
            clock.set(try #require(after.nextAttemptAt))
            alert = try #require(try await self.claim(store, at: clock.now()).first { $0.id == alert.id })
        }
        #expect(clock.now() > self.t0 + 48 * hour)
        try await store.record(alert.claim, attempt: .success(""), now: clock.now())
        #expect(try await self.message(alert.id, in: store)?.state == .sent)

        // Any other message that keeps failing is given up after 12 attempts: the all-clear.
        clock.set(clock.now() + 60)
        #expect(try await self.checkIn(store).enqueued)
        var allClear = try #require(try await self.claim(store, at: clock.now()).first)
        #expect(allClear.kind == AlertRecord.Kind.allClear)
        for attempt in 1...DeliveryFailure.maxAttempts {
            try await self.failed(allClear, in: store, at: clock.now(), mayHaveArrived: false)
            let after = try #require(try await self.message(allClear.id, in: store))
            guard attempt < DeliveryFailure.maxAttempts else {
                #expect(after.state == .failed && after.nextAttemptAt == nil)
                break
            }
            #expect(after.state == .pending, "attempt \(attempt)")
            clock.set(try #require(after.nextAttemptAt))
            allClear = try #require(try await self.claim(store, at: clock.now()).first)
        }

        // A warning past its use is given up.
        let (other, otherClock) = try await self.armed(contacts: ["a@example.com"])
        otherClock.set(self.t0 + 21 * hour)
        try await self.decide(other, at: otherClock.now())
        var warning = try #require(
            try await other.claimDue(.push, now: otherClock.now(), limit: 10, lease: 60).first?.alert
        )
        // Retried until its deadline (24 h) passes, then cancelled: "we'll email your contact
        // in 3 hours" is never sent once they are being emailed.
        while true {
            try await self.failed(warning, in: other, at: otherClock.now(), mayHaveArrived: false)
            let after = try #require(try await self.message(warning.id, in: other))
            otherClock.set(try #require(after.nextAttemptAt))
            guard let next = try await other.claimDue(.push, now: otherClock.now(), limit: 10, lease: 60).first?.alert
            else {
                break
            }
            #expect(otherClock.now() < self.t0 + 24 * hour)
            warning = next
        }
        #expect(otherClock.now() >= self.t0 + 24 * hour)
        #expect(warning.attempts < DeliveryFailure.maxAttempts)
        #expect(try await self.message(warning.id, in: other)?.state == .cancelled)
    }

    @Test("history no rule reads is deleted: heartbeats after 30 days, past periods' settled alerts after 90")
    func prunesHistory() async throws {
        let (store, clock) = try await self.armed(contacts: [])
        let day: TimeInterval = 86_400
        let now = self.t0 + 100 * day
        _ = try await store.upsertProfile("zed") { profile in
            profile.name = "Zed"
            profile.email = "zed@example.com"
        }
        try await store.base.writer.write { db in
            func heartbeat(_ user: String, _ id: String, at: Date, counted: Bool = true) throws {
                try db.execute(
                    sql: "INSERT INTO heartbeat VALUES (?, ?, 'UTC', '', 'app', ?, ?)",
                    arguments: [user, StoredDate(at), id, counted]
                )
            }
            try heartbeat("mei", "old", at: now - 30 * day - 1)
            try heartbeat("mei", "kept", at: now - 30 * day)
            try heartbeat("zed", "old", at: now - 40 * day)
            try heartbeat("zed", "old-merged", at: now - 40 * day, counted: false)
            try db.execute(sql: "UPDATE profile SET epoch = 5, check_in_epoch = 5 WHERE user_id = 'mei'")
            func alert(_ id: String, epoch: Int, age: TimeInterval, state: String, claimed: Bool = false) throws {
                try db.execute(
                    sql: """
                        INSERT INTO alert (id, user_id, epoch, kind, channel, contact_id, address, subject, body,
                            state, attempts, last_error, created_at, claimed_at)
                        VALUES (?, 'mei', ?, 'warning_180', 'push', ?, '', '', '', ?, 1, '', ?, ?)
                        """,
                    arguments: [id, epoch, id, state, StoredDate(now - age), claimed ? StoredDate(now) : nil]
                )
            }
            try alert("old-sent", epoch: 3, age: 91 * day, state: "sent")
            try alert("old-failed", epoch: 4, age: 91 * day, state: "failed")
            try alert("recent", epoch: 3, age: 89 * day, state: "sent")
            try alert("current-period", epoch: 5, age: 91 * day, state: "sent")
            try alert("old-pending", epoch: 3, age: 91 * day, state: "pending")
            try alert("old-claimed", epoch: 3, age: 91 * day, state: "cancelled", claimed: true)
        }
        clock.set(now)
        // One user a batch and one row a transaction: both users are reached, each finished.
        let deleted = try await store.pruneHistory(now: now, usersPerBatch: 1, rowsPerTransaction: 1)
        #expect(deleted.heartbeats == 3 && deleted.alerts == 2)
        let (heartbeats, alerts) = try await store.base.writer.read { db in
            (
                try String.fetchAll(db, sql: "SELECT user_id || ':' || request_id FROM heartbeat ORDER BY 1"),
                try String.fetchAll(db, sql: "SELECT id FROM alert ORDER BY id")
            )
        }
        #expect(heartbeats == ["mei:kept"])
        #expect(alerts == ["current-period", "old-claimed", "old-pending", "recent"])
    }

    @Test("an alert email delivered after a pause cancelled it is recorded as sent, once")
    func deliveredAfterPause() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        // The pause comes while the email is being sent; it cancels it.
        clock.set(self.t0 + 24 * hour + 1)
        _ = try await store.pause("mei", until: clock.now() + 3600)
        try await store.record(alert.claim, attempt: .success(""), now: clock.now())
        let recorded = try await self.message(alert.id, in: store)
        #expect(recorded?.state == .sent && recorded?.attempts == 1 && recorded?.claimedAt == nil)
        #expect(try await self.pending(store).isEmpty, "no all-clear without a check-in")
        // A second outcome for it changes nothing more.
        try await store.record(alert.claim, attempt: .success(""), now: clock.now())
        #expect(try await self.message(alert.id, in: store) == recorded)
    }

    @Test("a warning push delivered after a check-in cancelled it is recorded as sent")
    func warningDeliveredAfterCancel() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 21 * hour)
        try await self.decide(store, at: clock.now())
        let warning = try #require(
            try await store.claimDue(.push, now: clock.now(), limit: 10, lease: AlertSender.lease).first?.alert
        )
        _ = try await self.checkIn(store)
        #expect(try await self.message(warning.id, in: store)?.state == .cancelled)
        try await store.record(warning.claim, attempt: .success(""), now: clock.now())
        #expect(try await self.message(warning.id, in: store)?.state == .sent)
        #expect(try await self.pending(store).isEmpty)
    }

    @Test(
        "a check-in while an alert email is being sent: its contact gets the all-clear once it went out or may have"
    )
    func checkInDuringSend() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com", "b@example.com", "c@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alerts = try await self.decideAlert(store, at: clock.now())
        let byAddress = Dictionary(uniqueKeysWithValues: try alerts.map { (try $0.address.open(), $0) })
        clock.set(self.t0 + 24 * hour + 1)
        #expect(try await self.checkIn(store).enqueued == false, "nothing known to have gone out yet")
        // a's went out, b's was refused before its content went out, c's answer never came.
        let a = try #require(byAddress["a@example.com"])
        try await store.record(a.claim, attempt: .success(""), now: clock.now())
        try await self.failed(
            try #require(byAddress["b@example.com"]),
            in: store,
            at: clock.now(),
            mayHaveArrived: false
        )
        try await self.timedOut(try #require(byAddress["c@example.com"]), in: store, at: clock.now())
        let due = try await self.claim(store, at: clock.now())
        #expect(due.map(\.kind) == [AlertRecord.Kind.allClear, AlertRecord.Kind.allClear])
        #expect(Set(try due.map { try $0.address.open() }) == ["a@example.com", "c@example.com"])
        #expect(try await self.message(a.id, in: store)?.state == .sent)
        // A second outcome for a changes nothing more.
        try await store.record(a.claim, attempt: .success(""), now: clock.now())
        #expect(try await self.pending(store).count == 2)
    }

    @Test("an alert that may have arrived earns its contact the all-clear even after it failed for good")
    func mayHaveArrivedThenFailed() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        try await self.timedOut(alert, in: store, at: clock.now())
        clock.set(self.t0 + 25 * hour)
        let retry = try #require(try await self.claim(store, at: clock.now()).first)
        try await store.record(
            retry.claim,
            attempt: .failure(DeliveryFailure(message: "550 no such user", isPermanent: true, mayHaveArrived: false)),
            now: clock.now()
        )
        #expect(try await self.message(alert.id, in: store)?.state == .failed)
        #expect(try await self.checkIn(store).enqueued)
    }

    @Test("an alert attempt refused before its content went out (SMTP down) earns no all-clear")
    func refusedAlertGetsNoAllClear() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        try await self.failed(alert, in: store, at: clock.now(), mayHaveArrived: false)
        clock.set(self.t0 + 24 * hour + 10)
        #expect(try await self.checkIn(store).enqueued == false)
        #expect(try await self.pending(store).isEmpty, "the alert is cancelled, nothing else queued")
    }

    @Test("a check-in after an alert attempt that may have reached its contact sends that contact the all-clear")
    func triedAlertGetsAllClear() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com", "b@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alerts = try await self.decideAlert(store, at: clock.now())
        let tried = try #require(alerts.first { $0.address == "a@example.com" })
        // The server's answer to the final "." never came: it may have taken the message.
        try await self.timedOut(tried, in: store, at: clock.now())
        // The other was refused before its content went out.
        let refused = try #require(alerts.first { $0.address == "b@example.com" })
        try await self.failed(refused, in: store, at: clock.now(), mayHaveArrived: false)
        clock.set(self.t0 + 24 * hour + 10)
        #expect(try await self.checkIn(store).enqueued)
        let due = try await self.claim(store, at: clock.now())
        #expect(due.map(\.kind) == [AlertRecord.Kind.allClear] && due.map(\.address) == ["a@example.com"])
    }

    @Test("an alert tried before a pause cancelled it still earns its contact the all-clear at the next check-in")
    func triedThenPausedGetsAllClear() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        try await self.timedOut(alert, in: store, at: clock.now())
        _ = try await store.pause("mei", until: clock.now() + 3600)
        clock.set(self.t0 + 24 * hour + 60)
        #expect(try await self.checkIn(store).enqueued)
        #expect(try await self.claim(store, at: clock.now()).map(\.kind) == [AlertRecord.Kind.allClear])
    }

    @Test("an alert tried, cleared by a check-in, then delivered after a second check-in: one all-clear, not two")
    func oneAllClearAcrossCheckIns() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(store, at: clock.now()).first)
        try await self.timedOut(alert, in: store, at: clock.now())
        // Tried again after its backoff; under way when the check-ins come.
        clock.set(self.t0 + 25 * hour)
        let retry = try await self.claim(store, at: clock.now())
        #expect(retry.map(\.id) == [alert.id])
        clock.set(self.t0 + 25 * hour + 10)
        #expect(try await self.checkIn(store).enqueued, "the first check-in clears it")
        clock.set(self.t0 + 25 * hour + 60)
        _ = try await self.checkIn(store)
        try await store.record(try #require(retry.first).claim, attempt: .success(""), now: clock.now())
        let due = try await self.pending(store)
        #expect(due.filter { $0.kind == AlertRecord.Kind.allClear }.count == 1, "\(due.map(\.kind))")
    }

    @Test("a removed contact's pending alert is not sent; pausing cancels pending alert emails")
    func removedContactAndPause() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com", "b@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alerts = try await self.decideAlert(store, at: clock.now())
        #expect(alerts.count == 2)
        let removed = try #require(alerts.first { $0.address == "a@example.com" })
        #expect(try await store.removeContact("mei", id: removed.contactID))
        #expect(try await self.pending(store).map(\.address) == ["b@example.com"])
        _ = try await store.pause("mei", until: clock.now() + 86_400)
        #expect(try await self.pending(store).isEmpty)
    }

    @Test("a check-in after a pause ran out, before the decider saw it end, keeps its period: no early alarm")
    func checkInAfterThePauseRanOut() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        _ = try await store.pause("mei", until: self.t0 + 2 * hour)
        clock.set(self.t0 + 5 * hour)
        _ = try await self.checkIn(store)
        // The decider's first pass since comes at the check-in's 3 h warning.
        clock.set(self.t0 + 26 * hour)
        try await self.decide(store, at: clock.now())
        #expect(try await self.claim(store, at: clock.now()).isEmpty, "no alarm 24 h after the pause's end")
        let status = try #require(try await store.status("mei"))
        #expect(status.clock.deadline == self.t0 + 29 * hour && status.profile.pausedUntil == nil)
    }

    @Test("after a pause ran out, before the decider saw it end, the status and a snooze count from the pause's end")
    func afterThePauseBeforeTheDecider() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        _ = try await store.pause("mei", until: self.t0 + 30 * hour)
        clock.set(self.t0 + 10 * hour)
        guard case .refused(let why) = try await store.snooze("mei") else {
            Issue.record("a snooze while paused was taken: its end starts a period, snoozes gone")
            return
        }
        #expect(why.hasPrefix("the switch is paused until"))
        clock.set(self.t0 + 31 * hour)  // the deadline before the pause, 24 h, long past
        let status = try #require(try await store.status("mei"))
        #expect(status.clock.deadline == self.t0 + 54 * hour)
        #expect(status.clock.state(at: clock.now()) == .normal)
        guard case .changed(let snoozed) = try await store.snooze("mei") else {
            Issue.record("the snooze was refused")
            return
        }
        #expect(snoozed.snoozes == 1 && snoozed.pausedUntil == nil)
        #expect(try await store.status("mei")?.clock.deadline == self.t0 + 78 * hour)
        try await self.decide(store, at: clock.now())
        #expect(try await store.status("mei")?.clock.deadline == self.t0 + 78 * hour, "the decider agrees")
    }

    @Test("a write after a pause ran out, before the decider saw it end, leaves the switch due at once, not silenced")
    func writeAfterThePauseBeforeTheDecider() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com", "b@example.com"])
        // Every item of the first period decided: the three warnings and the alarm.
        for at in [21.0, 23.0, 23.0 + 50.0 / 60, 24.0] {
            clock.set(self.t0 + at * hour)
            try await self.decide(store, at: clock.now())
        }
        clock.set(self.t0 + 25 * hour)
        _ = try await store.pause("mei", until: self.t0 + 30 * hour)
        // Paused, a snooze would change nothing (the pause's end starts a period, snoozes gone).
        guard case .refused = try await store.snooze("mei") else {
            Issue.record("a snooze while paused was taken")
            return
        }
        clock.set(self.t0 + 31 * hour)
        let contact = try #require(try await store.contacts("mei").first)
        #expect(try await store.removeContact("mei", id: contact.id))
        let due = try #require(try await store.profile("mei")?.nextDueAt)
        #expect(due <= clock.now(), "the decider looks at once, to record the pause's end")
        try await self.decide(store, at: clock.now())
        #expect(try await store.status("mei")?.clock.deadline == self.t0 + 54 * hour)
        clock.set(self.t0 + 54 * hour)
        #expect(try await self.decideAlert(store, at: clock.now()).count == 1, "the new period's alarm")
    }

    @Test("a contact alerted, then removed and added again, still gets the all-clear")
    func contactAddedAgainGetsTheAllClear() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        let alert = try await self.deliveredAlarm(store, at: clock.now())
        // The user fixes the contact's name the only way there is.
        #expect(try await store.removeContact("mei", id: alert.contactID))
        try await store.addConfirmedContact("mei", email: "A@example.com", name: "Al")
        clock.set(self.t0 + 25 * hour)
        #expect(try await self.checkIn(store).enqueued)
        let due = try await self.claim(store, at: clock.now())
        #expect(due.map(\.kind) == [AlertRecord.Kind.allClear] && due.map(\.address) == ["A@example.com"])
    }

    @Test("a claimed message is not claimed again before its lease ends; each claim counts an attempt")
    func lease() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        let now = self.t0 + 24 * hour
        clock.set(now)
        let alert = try #require(try await self.decideAlert(store, at: now).first)
        #expect(alert.attempts == 1 && alert.claimedAt == now)
        clock.set(now + AlertSender.lease - 1)
        #expect(try await self.claim(store, at: clock.now()).isEmpty, "under way, or its outcome not written")
        clock.set(now + AlertSender.lease)
        let again = try await self.claim(store, at: clock.now())
        #expect(again.map(\.id) == [alert.id] && again.first?.attempts == 2)
        // Due again after this lease: a sender leaves out what it has under way itself.
        clock.set(now + 2 * AlertSender.lease)
        #expect(try await store.claimDue(.email, now: clock.now(), limit: 10, lease: 60, excluding: [alert.id]).isEmpty)
        #expect(try await self.claim(store, at: clock.now()).map(\.attempts) == [3])
    }

    @Test("a process start makes an attempt that a killed process left under way due at once; it may have arrived")
    func claimReleasedAtStart() async throws {
        let file = try TemporaryStoreFile()
        let (killed, clock) = try await self.armed(contacts: ["a@example.com"], location: file.location)
        clock.set(self.t0 + 24 * hour)
        let alert = try #require(try await self.decideAlert(killed, at: clock.now()).first)

        clock.set(self.t0 + 24 * hour + 5)
        let restarted = try SafetyStore(location: file.location, keys: self.keys, clock: clock)
        try restarted.releaseClaims()
        let again = try await self.claim(restarted, at: clock.now())
        #expect(again.map(\.id) == [alert.id] && again.first?.attempts == 1, "the killed attempt is not counted")
        // This attempt is refused before its content went out; the first one's fate is unknown.
        try await self.failed(alert, in: restarted, at: clock.now(), mayHaveArrived: false)
        #expect(try await self.message(alert.id, in: restarted)?.mayHaveArrived == true)
        clock.set(self.t0 + 24 * hour + 10)
        #expect(try await self.checkIn(restarted).enqueued, "its contact gets the all-clear")
    }

    @Test("a snooze that reaches the writer after the alarm was decided is refused: never the alarm twice a period")
    func snoozeCrossingTheAlarm() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 24 * hour)
        try await self.deliveredAlarm(store, at: clock.now(), reply: "250 ok")
        // The snooze's time is a minute before the deadline (a clock stepped back, or a call
        // that read the time before the decision took the writer).
        clock.set(self.t0 + 24 * hour - 60)
        guard case .refused = try await store.snooze("mei") else {
            Issue.record("a snooze after the alarm went out was taken")
            return
        }
        clock.set(self.t0 + 72 * hour)
        #expect(try await self.decideAlert(store, at: clock.now()).isEmpty, "no second alarm at a later deadline")
    }

    @Test("a warning still pending when its deadline passed is never sent, even if claimed before the decider runs")
    func staleWarningNotClaimed() async throws {
        let (store, clock) = try await self.armed(contacts: ["a@example.com"])
        clock.set(self.t0 + 21 * hour)
        try await self.decide(store, at: clock.now())
        let warning = try #require(try await self.pending(store).first)
        #expect(warning.channel == .push)
        // The process was down (or the webhook was) until past the deadline; the push sender
        // looks before the decider did.
        clock.set(self.t0 + 24 * hour + 5)
        #expect(try await store.claimDue(.push, now: clock.now(), limit: 10, lease: AlertSender.lease).isEmpty)
        #expect(try await self.message(warning.id, in: store)?.state == .cancelled)
        #expect(try await self.decideAlert(store, at: clock.now()).count == 1, "the alarm still goes")
    }

    @Test("an alert under way when a check-in cancelled it, in a process then killed: the start sends the all-clear")
    func cancelledClaimReleasedAtStart() async throws {
        let file = try TemporaryStoreFile()
        let (killed, clock) = try await self.armed(contacts: ["a@example.com"], location: file.location)
        clock.set(self.t0 + 24 * hour)
        _ = try #require(try await self.decideAlert(killed, at: clock.now()).first)
        clock.set(self.t0 + 24 * hour + 1)
        #expect(try await self.checkIn(killed).enqueued == false)

        let restarted = try SafetyStore(location: file.location, keys: self.keys, clock: clock)
        try restarted.releaseClaims()
        #expect(try await self.claim(restarted, at: clock.now()).map(\.kind) == [AlertRecord.Kind.allClear])
    }
}
