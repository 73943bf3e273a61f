import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Synchronization
import Testing

@testable import SafetyService

@Suite("Safety switch", .timeLimit(.minutes(2)), .serialized)
struct SafetyTests {
    let hour: TimeInterval = 3600

    @Test(
        "warnings at 3 h, 1 h and 10 min before the deadline, the email at it; GetStatus follows",
        arguments: StoreKind.allCases
    )
    func onTime(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            let t0 = system.clock.now()
            try await system.checkIn()
            try await system.settle()
            #expect(try await system.status().state == .normal)

            try await system.advance(to: t0 + 21 * hour - 1)
            #expect(try system.pushes().isEmpty)
            try await system.advance(to: t0 + 21 * hour)
            try await eventually("the 3 h warning") { try system.pushes() == ["safety.warning_180"] }
            #expect(try await system.status().state == .warning)
            try await system.advance(to: t0 + 23 * hour)
            try await eventually("the 1 h warning") { try system.pushes().count == 2 }
            try await system.advance(to: t0 + 24 * hour - 600)
            try await eventually("the 10 min warning") { try system.pushes().count == 3 }
            #expect(try system.emails().isEmpty)
            try await system.advance(to: t0 + 24 * hour)
            try await eventually("the alert email") { try system.emails().count == 1 }
            let email = try system.emails()[0]
            #expect(email.to == "brother@example.com")
            #expect(email.subject == "Hearth Alert: Mei Chen hasn't checked in")
            #expect(email.body.contains("Mar 10, 2026 at 5:00 AM PDT"), "\(email.body)")
            let status = try await system.status()
            #expect(status.state == .expired)
            #expect(status.warnings.map(\.minutesBefore) == [180, 60, 10])
            #expect(status.emails.map(\.state) == [.sent])
            // Nothing more fires in this period.
            try await system.advance(to: t0 + 48 * hour)
            #expect(try system.emails().count == 1 && system.pushes().count == 3)
        }
    }

    @Test(
        "a check-in cancels the period's warnings; after an alert, the next check-in sends an all-clear",
        arguments: StoreKind.allCases
    )
    func checkInCancelsAndClears(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: ["a@example.com", "b@example.com"])
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 21 * hour)
            try await eventually("the 3 h warning") { try system.pushes().count == 1 }
            let answered = try await system.checkIn()
            #expect(answered.emails.isEmpty && answered.state == .normal)
            #expect(try await answered == system.status(), "the heartbeat answers the status as GetStatus reads it")
            try await system.advance(to: t0 + 23.5 * hour)
            #expect(try system.pushes().count == 1, "the 1 h warning of the old period was cancelled")
            #expect(try await system.status().state == .normal)

            try await system.advance(to: t0 + 21 * hour + 24 * hour)
            try await system.advance(to: t0 + 21 * hour + 24 * hour + 24 * hour)
            try await eventually("both contacts alerted") { try system.emails().count == 2 }
            let clearing = try await system.checkIn()
            #expect(
                clearing.emails.map(\.kind) == ["ALL_CLEAR", "ALL_CLEAR"],
                "the answer names the all-clears it queued"
            )
            try await system.settle()
            try await eventually("all-clear to both") { try system.emails().count == 4 }
            let clear = try system.emails().suffix(2)
            #expect(Set(clear.map(\.to)) == ["a@example.com", "b@example.com"])
            #expect(clear.allSatisfy { $0.subject == "All clear: Mei Chen checked in" })
            let status = try await system.status()
            #expect(status.state == .normal)
            #expect(status.emails.map(\.kind) == ["ALL_CLEAR", "ALL_CLEAR"])
        }
    }

    @Test("changing the threshold moves the deadline from the last check-in", arguments: StoreKind.allCases)
    func thresholdChange(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 48)
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 30 * hour)
            #expect(try await system.status().state == .normal)
            try await system.profile(threshold: 24, contacts: [])
            try await system.settle()
            // The deadline was t0 + 24 h: already past, so the alert goes at once, without warnings.
            try await eventually("the alert") { try system.emails().count == 1 }
            #expect(try system.pushes().isEmpty)
            #expect(try await system.status().state == .expired)
        }
    }

    @Test(
        "snooze adds 24 h at most 3 times in a row; pause stops everything; resume starts a new period",
        arguments: StoreKind.allCases
    )
    func snoozePauseResume(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            let t0 = system.clock.now()
            try await system.settle()
            for count in 1...3 {
                let status = try await system.service.snooze(Hearth_Safety_V1_SnoozeRequest(), callContext("mei"))
                #expect(status.snoozes == UInt32(count))
                #expect(status.deadline.date == t0 + Double(24 + 24 * count) * hour)
            }
            await expectCode(.failedPrecondition) {
                _ = try await system.service.snooze(Hearth_Safety_V1_SnoozeRequest(), callContext("mei"))
            }
            try await system.checkIn()
            #expect(try await system.status().snoozes == 0)

            var pause = Hearth_Safety_V1_PauseRequest()
            pause.until = Google_Protobuf_Timestamp(date: system.clock.now() + 30 * 86_400 + 1)
            await expectCode(.invalidArgument) { _ = try await system.service.pause(pause, callContext("mei")) }
            pause.until = Google_Protobuf_Timestamp(date: system.clock.now() + 5 * 86_400)
            let paused = try await system.service.pause(pause, callContext("mei"))
            #expect(paused.state == .paused)
            try await system.settle()
            try await system.advance(to: t0 + 4 * 86_400)
            #expect(try system.pushes().isEmpty && system.emails().isEmpty, "nothing fires while paused")
            // While paused the deadline shown is the one the pause's end brings, not the one it stopped.
            let whilePaused = try await system.status()
            #expect(whilePaused.deadline.date == t0 + 5 * 86_400 + 24 * hour)
            #expect(whilePaused.remainingSeconds == Int64(2 * 86_400))
            let resumed = try await system.service.resume(Hearth_Safety_V1_ResumeRequest(), callContext("mei"))
            #expect(resumed.state == .normal)
            #expect(resumed.deadline.date == t0 + 4 * 86_400 + 24 * hour)
        }
    }

    @Test(
        "snoozes in a row end only at a check-in: a pause and a resume do not give three more",
        arguments: StoreKind.allCases
    )
    func snoozeRunOutlastsPause(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            try await system.settle()
            func snooze() async throws -> Hearth_Safety_V1_Status {
                try await system.service.snooze(Hearth_Safety_V1_SnoozeRequest(), callContext("mei"))
            }
            for _ in 1...3 { _ = try await snooze() }
            var pause = Hearth_Safety_V1_PauseRequest()
            pause.until = Google_Protobuf_Timestamp(date: system.clock.now() + 86_400)
            _ = try await system.service.pause(pause, callContext("mei"))
            let resumed = try await system.service.resume(Hearth_Safety_V1_ResumeRequest(), callContext("mei"))
            #expect(resumed.snoozes == 3, "the run goes on through the pause")
            #expect(resumed.deadline.date == system.clock.now() + 24 * hour, "the new period's deadline has no snoozes")
            await expectCode(.failedPrecondition) { _ = try await snooze() }

            try await system.checkIn()
            let afterCheckIn = try await snooze()
            #expect(afterCheckIn.snoozes == 1)
        }
    }

    @Test("down at the deadline: on restart the email goes once, and no stale warnings", arguments: StoreKind.allCases)
    func restartAfterMissedDeadline(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            let t0 = system.clock.now()
            try await system.settle()
            try await system.restart { system.clock.set(t0 + 30 * hour) }
            try await eventually("the alert after the restart") { try system.emails().count == 1 }
            try await system.settle()
            #expect(try system.pushes().isEmpty)
            try await system.restart()
            try await system.settle()
            #expect(try system.emails().count == 1, "not sent again by the next start")
        }
    }

    @Test("emails in zh-Hant and zh-Hans: subject, body and local time; the time zone's DST name")
    func languages() async throws {
        // 2026-01-13 06:00 UTC.
        try await withSafetySystem(start: Date(timeIntervalSince1970: 1_768_284_000)) { system in
            try await system.profile(
                "wen",
                name: "陳小文",
                language: "zh-Hant",
                zone: "Asia/Taipei",
                contacts: ["a@example.com"]
            )
            try await system.profile(
                "li",
                name: "李华",
                language: "zh-Hans",
                zone: "America/Los_Angeles",
                contacts: ["b@example.com"]
            )
            let t0 = system.clock.now()
            try await system.settle()
            try await system.advance(to: t0 + 24 * hour)
            try await eventually("two alerts") { try system.emails().count == 2 }
            let byTo = Dictionary(uniqueKeysWithValues: try system.emails().map { ($0.to, $0) })
            let hant = try #require(byTo["a@example.com"])
            #expect(hant.subject == "Hearth 警報：陳小文 尚未報平安")
            #expect(hant.body.contains("2026年1月13日 下午2:00 [GMT+8]"), "\(hant.body)")
            let hans = try #require(byTo["b@example.com"])
            #expect(hans.subject == "Hearth 警报：李华 尚未报平安")
            #expect(
                hans.body.contains("2026年1月12日 晚上10:00 [PST]") || hans.body.contains("2026年1月12日 下午10:00 [PST]"),
                "\(hans.body)"
            )

            // In July Los Angeles is on daylight time.
            let summer = AlertTexts(
                language: "en",
                name: "Mei",
                timeZone: TimeZone(identifier: "America/Los_Angeles")!,
                product: "Hearth"
            )
            #expect(summer.localTime(Date(timeIntervalSince1970: 1_783_915_200)) == "Jul 12, 2026 at 9:00 PM PDT")
            let winter = AlertTexts(
                language: "en",
                name: "Mei",
                timeZone: TimeZone(identifier: "America/Los_Angeles")!,
                product: "Hearth"
            )
            #expect(winter.localTime(Date(timeIntervalSince1970: 1_768_284_000)) == "Jan 12, 2026 at 10:00 PM PST")
        }
    }

    @Test("the daily reminder comes at the local time, not on a day with a check-in", arguments: StoreKind.allCases)
    func dailyReminder(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            // 2026-03-10 05:00 in Los Angeles; the reminder is at 21:00 there (04:00 UTC).
            try await system.profile(threshold: 72, reminder: (21, 0))
            let t0 = system.clock.now()
            let reminders = { try system.pushes().filter { $0 == "safety.reminder" }.count }
            try await system.settle()
            try await system.advance(to: t0 + 16 * hour - 1)
            #expect(try reminders() == 0)
            try await system.advance(to: t0 + 16 * hour)
            try await eventually("the first reminder") { try reminders() == 1 }
            // The next day she checks in at 10:00: no reminder that evening.
            try await system.advance(to: t0 + 29 * hour)
            try await system.checkIn()
            try await system.advance(to: t0 + 40 * hour + 1)
            #expect(try reminders() == 1)
            try await system.advance(to: t0 + 64 * hour)
            try await eventually("the third day's reminder") { try reminders() == 2 }
        }
    }

    @Test(
        "on a clock with sub-millisecond time the answer, its repeat and GetStatus agree to the last digit",
        arguments: StoreKind.allCases
    )
    func heartbeatAnswersAsStored(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            system.clock.advance(by: 0.000_4)
            let first = try await system.checkIn(id: "r1")
            let repeated = try await system.checkIn(id: "r1")
            #expect(repeated == first)
            #expect(try await system.status() == first)
        }
    }

    @Test(
        "repeats within 5 s collapse; the same request id counts once; the 121st in an hour is RESOURCE_EXHAUSTED",
        arguments: StoreKind.allCases
    )
    func heartbeatLimits(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(countActivity: true)
            let first = try await system.checkIn(id: "r1")
            system.clock.advance(by: 4)
            let again = try await system.checkIn(id: "r2")
            #expect(again.lastCheckInAt == first.lastCheckInAt)
            system.clock.advance(by: 2)
            let later = try await system.checkIn(id: "r1")
            #expect(later.lastCheckInAt == first.lastCheckInAt, "a retry of r1 counts once")
            for index in 0..<119 {
                system.clock.advance(by: 6)
                _ = try await system.checkIn(id: "n\(index)")
            }
            system.clock.advance(by: 6)
            do {
                _ = try await system.checkIn(id: "over")
                Issue.record("the 121st check-in in an hour was not limited")
            } catch let error as RPCError {
                #expect(error.code == .resourceExhausted)
                // The oldest of the hour (r1, 726 s ago) leaves it in 2,874 s.
                #expect(error.retryAfter == .seconds(2_874))
            }
            let limitedAt = system.clock.now()
            let status = try await system.status()
            #expect(status.lastCheckInAt.date == limitedAt, "the limited check-in still reset the timer")
            // Its repeat within 5 s collapses into it (it is kept uncounted): answered, not refused.
            system.clock.advance(by: 2)
            let collapsed = try await system.checkIn(id: "over-again")
            #expect(collapsed.lastCheckInAt.date == limitedAt)
            // A client's retry of a check-in that did not count toward the limit, a minute later, is
            // still that check-in: it does not move the deadline later than the user last checked
            // in. One merged into the check-in before it:
            system.clock.advance(by: 60)
            let mergedRetry = try await system.checkIn(id: "over-again")
            #expect(mergedRetry.lastCheckInAt.date == limitedAt, "a retry of a merged check-in counts once")
            // One over the rate limit (itself a new check-in: the last was 62 s ago), with a
            // forwarded activity counted in between:
            system.clock.advance(by: 6)
            await #expect(throws: RPCError.self) { _ = try await system.checkIn(id: "late") }
            let lateAt = system.clock.now()
            system.clock.advance(by: 60)
            try await system.forwardTaskAnswer("answer-1", at: system.clock.now() - 1)
            let forwardedAt = try await system.status().lastCheckInAt.date
            #expect(forwardedAt > lateAt, "the activity counted (over the limit, as a check-in does)")
            system.clock.advance(by: 60)
            let limitedRetry = try await system.checkIn(id: "late")
            #expect(limitedRetry.lastCheckInAt.date == forwardedAt, "a retry of a limited check-in counts once")
        }
    }

    @Test(
        "SendTest: to the user's own email or device, labelled a test; at most 5 an hour on each channel",
        arguments: StoreKind.allCases
    )
    func sendTest(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(language: "zh-Hant")
            let send = { (channel: Hearth_Safety_V1_Channel) in
                try await system.service.sendTest(.with { $0.channel = channel }, callContext("mei"))
            }
            #expect(try await send(.email).sentTo == "mei@example.com")
            #expect(try await send(.push).sentTo == "push")
            try await system.settle()
            try await eventually("the test email and push") {
                try system.emails().count == 1 && system.pushes().count == 1
            }
            let email = try system.emails()[0]
            #expect(email.to == "mei@example.com" && email.subject == "[測試] Hearth 平安檢查")
            #expect(try system.pushes() == ["safety.test"])
            let first = system.clock.now()
            for _ in 0..<4 {
                system.clock.advance(by: 60)
                _ = try await send(.email)
            }
            system.clock.advance(by: 60)
            do {
                _ = try await send(.email)
                Issue.record("a sixth test email within the hour was sent")
            } catch let error as RPCError {
                #expect(error.code == .resourceExhausted)
                #expect(error.retryAfter == .seconds(3600 - 300), "when the first leaves the hour")
            }
            _ = try await send(.push)  // another channel's count
            system.clock.set(first + 3600 + 1)
            _ = try await send(.email)
            await expectCode(.invalidArgument) { _ = try await send(.unspecified) }
        }
    }

    @Test("the process deletes old heartbeats on its own, hourly on its clock")
    func historyPrunedByTheProcess() async throws {
        try await withSafetySystem { system in
            try await system.profile()
            let t0 = system.clock.now()
            try await system.checkIn(id: "first")
            try await system.advance(to: t0 + 29 * 86_400)
            try await system.checkIn(id: "later")
            let heartbeats = {
                try await system.service.fileStore.base.writer.read { db in
                    try String.fetchAll(db, sql: "SELECT request_id FROM heartbeat ORDER BY at")
                }
            }
            #expect(try await heartbeats() == ["app:first", "app:later"])
            try await system.advance(to: t0 + 31 * 86_400)
            #expect(try await heartbeats() == ["app:later"], "the first is over 30 days old")
        }
    }

    @Test(
        "at most 64 check-ins an hour are kept uncounted: a late retry of the 64th is known, of the 65th counts again"
    )
    func uncountedCheckInsCap() async throws {
        try await withSafetySystem { system in
            try await system.profile()
            let first = try await system.checkIn(id: "first")
            system.clock.advance(by: 1)
            for index in 1...65 {
                let merged = try await system.checkIn(id: "merged-\(index)")
                #expect(merged.lastCheckInAt == first.lastCheckInAt)
            }
            let uncounted = try await system.uncountedHeartbeats()
            #expect(uncounted == SafetyRules.maxUncountedHeartbeatsPerHour)
            system.clock.advance(by: 60)
            let known = try await system.checkIn(id: "merged-64")
            #expect(known.lastCheckInAt == first.lastCheckInAt, "the 64th was kept: its retry is a repeat")
            let unknown = try await system.checkIn(id: "merged-65")
            #expect(unknown.lastCheckInAt.date == system.clock.now(), "the 65th was not: its retry counts")
        }
    }

    @Test(
        "a request id recorded more than an hour ago still counts once, also over the rate limit",
        arguments: StoreKind.allCases
    )
    func oldRequestIDCountsOnce(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile()
            let first = try await system.checkIn(id: "old")
            system.clock.advance(by: 2 * 3600)
            let retried = try await system.checkIn(id: "old")
            #expect(retried.lastCheckInAt == first.lastCheckInAt)
            for index in 0..<120 {
                system.clock.advance(by: 6)
                _ = try await system.checkIn(id: "n\(index)")
            }
            let before = try await system.status()
            system.clock.advance(by: 6)
            // Over the limit (120 in the last hour), and still a repeat, not a new check-in.
            let overLimit = try await system.checkIn(id: "old")
            #expect(overLimit.lastCheckInAt == before.lastCheckInAt)
            // Also once no more are kept uncounted this hour (the first of these is over the limit,
            // the rest merge into it): looked up.
            system.clock.advance(by: 1)
            for index in 0..<SafetyRules.maxUncountedHeartbeatsPerHour {
                _ = try? await system.checkIn(id: "m\(index)")
            }
            let uncounted = try await system.uncountedHeartbeats()
            #expect(uncounted == SafetyRules.maxUncountedHeartbeatsPerHour)
            let full = try await system.status()
            system.clock.advance(by: 6)
            let overBoth = try await system.checkIn(id: "old")
            #expect(overBoth.lastCheckInAt == full.lastCheckInAt)
        }
    }

    @Test(
        "an app's request id is never taken for a forwarded activity's, nor the other way round",
        arguments: StoreKind.allCases
    )
    func requestIDsBySource(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(countActivity: true)
            let forward = { (eventID: String) in try await system.forwardTaskAnswer(eventID, at: system.clock.now()) }
            // The app sends what looks like a forwarded id; the activity with that id still counts.
            try await system.checkIn(id: "tasks:answer-9")
            system.clock.advance(by: 60)
            #expect(try await forward("answer-9"), "the activity counted")
            #expect(try await system.status().lastCheckInAt.date == system.clock.now())
            // And an activity's id is no app check-in's.
            system.clock.advance(by: 60)
            #expect(try await forward("answer-10"))
            system.clock.advance(by: 60)
            let checkIn = try await system.checkIn(id: "tasks:answer-10")
            #expect(checkIn.lastCheckInAt.date == system.clock.now(), "the check-in counted")
        }
    }

    @Test("v4 moves the app's request ids under app:, and leaves forwarded ones as they are")
    func requestIDMigration() throws {
        let queue = try Self.oldStore(upTo: "v3: check-ins kept without counting", profiles: [("mei", 0)])
        let at = Self.oldStoreTime
        try queue.write { db in
            for (id, source) in [
                ("c1", "app"), ("tasks:e1", "app"), ("x", "app"), ("app:x", "app"), ("tasks:e2", "tasks"),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id)
                        VALUES ('mei', ?, 'UTC', '', ?, ?)
                        """,
                    arguments: [at, source, id]
                )
            }
        }
        try SafetyMigrations.migrator(keys: DataKeys.random()).migrate(queue)
        let ids = try queue.read { db in
            try String.fetchAll(db, sql: "SELECT source || ' ' || request_id FROM heartbeat ORDER BY 1")
        }
        // `x` and `app:x` cannot both become `app:x`: which keeps its id depends on the order
        // SQLite updates them in (by key: `app:x` first, and then `x` can move).
        let moved = ["app app:app:x", "app app:c1", "app app:tasks:e1", "app app:x", "tasks tasks:e2"]
        let kept = ["app app:app:x", "app app:c1", "app app:tasks:e1", "app x", "tasks tasks:e2"]
        #expect(ids == moved || ids == kept, "\(ids)")
    }

    @Test("v5 starts each profile's snoozes in a row from its period's snoozes")
    func snoozeRunMigration() throws {
        let queue = try Self.oldStore(
            upTo: "v4: the app's request ids apart from forwarded ones",
            profiles: [("mei", 2), ("kai", 0)]
        )
        try SafetyMigrations.migrator(keys: DataKeys.random()).migrate(queue)
        let runs = try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, snoozes_in_a_row FROM profile ORDER BY user_id")
                .map { "\($0["user_id"] as String) \($0["snoozes_in_a_row"] as Int)" }
        }
        #expect(runs == ["kai 0", "mei 2"])
    }

    static let oldStoreTime = "2026-03-10 12:00:00.000"

    /// For migration tests: an in-memory store migrated up to `migration`, with a profile row
    /// as the first migrations made it (the columns they all have) for each user and its snoozes.
    private static func oldStore(upTo migration: String, profiles: [(user: String, snoozes: Int)]) throws
        -> DatabaseQueue
    {
        let queue = try DatabaseQueue()
        try SafetyMigrations.migrator(keys: DataKeys.random()).migrate(queue, upTo: migration)
        try queue.write { db in
            for (user, snoozes) in profiles {
                try db.execute(
                    sql: """
                        INSERT INTO profile (user_id, name, email, threshold_hours, language, time_zone,
                            reminder_enabled, reminder_hour, reminder_minute, push_token, count_activity,
                            period_start, snoozes, epoch, check_in_epoch, created_at, updated_at)
                        VALUES (?, 'Name', 'a@example.com', 24, 'en', 'UTC', 0, 0, 0, '', 1, ?, ?, 1, 1, ?, ?)
                        """,
                    arguments: [user, Self.oldStoreTime, snoozes, Self.oldStoreTime, Self.oldStoreTime]
                )
            }
        }
        return queue
    }

    @Test(
        "profiles and contacts are validated field by field; at most 10 contacts, no duplicates by case",
        arguments: StoreKind.allCases
    )
    func validation(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            var request = Hearth_Safety_V1_UpsertProfileRequest()
            request.thresholdHours = 36
            request.preferredLanguage = "fr"
            request.timeZone = "Mars/Base"
            request.email = "nope"
            request.dailyReminder.hour = 24
            do {
                _ = try await system.service.upsertProfile(request, callContext("mei"))
                Issue.record("accepted")
            } catch let error as RPCError {
                #expect(
                    Set(error.violations.map(\.field))
                        == [
                            "name", "email", "threshold_hours", "preferred_language", "time_zone",
                            "daily_reminder.hour",
                        ]
                )
            }
            #expect(try await system.status().state == .notArmed)
            try await system.profile(contacts: [])
            #expect(try await system.status().state == .notArmed, "no contact yet")
            for index in 1...10 {
                var contact = Hearth_Safety_V1_AddContactRequest()
                contact.email = "c\(index)@example.com"
                _ = try await system.service.addContact(contact, callContext("mei"))
            }
            #expect(try await system.status().notArmedReason == .awaitingConfirmation)
            try await system.confirmInvitations()
            var contact = Hearth_Safety_V1_AddContactRequest()
            contact.email = "C1@Example.com"
            await expectCode(.alreadyExists) { _ = try await system.service.addContact(contact, callContext("mei")) }
            contact.email = "c11@example.com"
            await expectCode(.failedPrecondition) {
                _ = try await system.service.addContact(contact, callContext("mei"))
            }
            contact.email = "not an email"
            contact.name = String(repeating: "n", count: 101)
            do {
                _ = try await system.service.addContact(contact, callContext("mei"))
                Issue.record("accepted")
            } catch let error as RPCError {
                #expect(error.code == .invalidArgument && Set(error.violations.map(\.field)) == ["email", "name"])
            }
            #expect(try await system.status().state == .normal)
            _ = try await system.service.deleteAccount(Hearth_Safety_V1_DeleteAccountRequest(), callContext("mei"))
            #expect(try await system.status().state == .notArmed)
            await expectCode(.notFound) {
                _ = try await system.service.getProfile(Hearth_Safety_V1_GetProfileRequest(), callContext("mei"))
            }
        }
    }
}
