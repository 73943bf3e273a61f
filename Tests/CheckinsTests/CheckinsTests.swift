import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Testing

@testable import CheckinsService

@Suite("Check-ins")
struct CheckinsTests {
    @Test("captions: 280 user-perceived characters pass, 281 do not (emoji and combining marks count once)")
    func captionBoundary() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let family = "👩‍👩‍👧‍👦"
        let accented = "e\u{301}"
        let at280 = String(repeating: family, count: 140) + String(repeating: accented, count: 140)
        #expect(at280.count == 280)
        let created = try await fixture.checkIn(session, caption: "  \(at280)\n")
        #expect(created.caption == at280)
        await expectCode(.invalidArgument) { _ = try await fixture.checkIn(session, caption: at280 + "x") }
        await expectCode(.invalidArgument) { _ = try await fixture.checkIn(session, caption: "   ") }
    }

    @Test("a caption is bounded in bytes too: one letter with ten thousand accents is not one character's worth")
    func captionBytes() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        // 280 characters of 64 bytes on average pass: 17,920 bytes of UTF-8.
        let heavy = "e" + String(repeating: "\u{301}", count: (280 * 64 - 1) / 2)  // 17,919 bytes
        #expect(heavy.count == 1 && heavy.utf8.count == 17_919)
        _ = try await fixture.checkIn(session, caption: heavy, requestID: "heavy")
        let tooHeavy = heavy + "\u{301}"  // 17,921 bytes, still one character
        #expect(tooHeavy.count == 1 && tooHeavy.utf8.count == 17_921)
        let fields = await violatedFields {
            _ = try await fixture.checkIn(session, caption: tooHeavy, requestID: "too-heavy")
        }
        #expect(fields == ["caption"])
    }

    @Test("the 10th check-in of a local day passes, the 11th is RESOURCE_EXHAUSTED; the cap resets at local midnight")
    func dailyCap() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession(zone: "Asia/Taipei")
        // 20:00 in Taipei: ten before local midnight.
        for i in 0..<10 {
            fixture.clock.set(Fixture.start.addingTimeInterval(Double(i) * 60))
            _ = try await fixture.checkIn(session)
        }
        fixture.clock.set(Fixture.start.addingTimeInterval(4 * 3600 - 1))  // 23:59:59 in Taipei
        await expectCode(.resourceExhausted) { _ = try await fixture.checkIn(session) }
        fixture.clock.set(Fixture.start.addingTimeInterval(4 * 3600))  // 00:00 next day in Taipei
        _ = try await fixture.checkIn(session)
    }

    @Test("a retry with the same client_request_id returns the original and counts once; deleted ones still count")
    func idempotencyAndDeletes() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let first = try await fixture.checkIn(session, requestID: "upload-1")
        let retry = try await fixture.checkIn(session, caption: "different", requestID: "upload-1")
        #expect(retry.id == first.id)
        #expect(retry.caption == "All good")

        var delete = Hearth_Checkins_V1_DeleteCheckInRequest()
        delete.checkInID = first.id
        _ = try await fixture.service.deleteCheckIn(delete, fixture.context("sam"))
        await expectCode(.notFound) { _ = try await fixture.checkIn(session, requestID: "upload-1") }
        for _ in 0..<9 { _ = try await fixture.checkIn(session) }
        await expectCode(.resourceExhausted) { _ = try await fixture.checkIn(session) }
    }

    @Test("a retry that arrives after the window closed still gets the original check-in, to the same millisecond")
    func lateRetry() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession(hours: 2)
        // A clock and a capture time finer than the store keeps.
        fixture.clock.set(Fixture.start.addingTimeInterval(60.123456))
        let taken = Fixture.start.addingTimeInterval(30.987654)
        let first = try await fixture.checkIn(session, at: taken, requestID: "queued-1")
        let again = try await fixture.checkIn(session, at: taken, requestID: "queued-1")
        #expect(again == first)
        // The upload queue stayed offline past the session's end + 24 h.
        fixture.clock.set(Fixture.start.addingTimeInterval(2 * 3600 + 24 * 3600 + 1))
        let late = try await fixture.checkIn(session, at: taken, requestID: "queued-1")
        #expect(late == first)
        await expectCode(.invalidArgument) { _ = try await fixture.checkIn(session, at: taken, requestID: "queued-2") }
    }

    @Test("photo alt text: trimmed; 1,000 user-perceived characters pass, 1,001 do not")
    func altTextBoundary() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        func create(altText: String) async throws -> Hearth_Checkins_V1_CheckIn {
            var request = Hearth_Checkins_V1_CreateCheckInRequest()
            request.sessionID = session.id
            request.caption = "Walk done"
            request.photoAltText = altText
            request.capturedAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
            request.clientRequestID = UUID().uuidString
            return try await fixture.service.createCheckIn(request, fixture.context("sam"))
        }
        let at1000 = String(repeating: "👩‍👩‍👧‍👦", count: 500) + String(repeating: "a", count: 500)
        #expect(try await create(altText: " \(at1000) ").photoAltText == at1000)
        do {
            _ = try await create(altText: at1000 + "a")
            Issue.record("1,001 characters of alt text were accepted")
        } catch let error as RPCError {
            #expect(error.code == .invalidArgument)
            #expect(error.violations.map(\.field) == ["photo_alt_text"])
        }
    }

    @Test("a new check-in puts one notification for the owner in the outbox; a retry puts none")
    func ownerNotification() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let first = try await fixture.checkIn(session, caption: "Walk done", requestID: "r1")
        _ = try await fixture.checkIn(session, caption: "Walk done", requestID: "r1")
        let messages = try await fixture.service.store.base.writer.read { db in
            try String.fetchAll(db, sql: "SELECT message FROM push_outbox")
        }
        #expect(messages.count == 1)
        let message = try JSONSerialization.jsonObject(with: Data(messages[0].utf8)) as? [String: Any]
        #expect(message?["userID"] as? String == "olivia")
        #expect(message?["kind"] as? String == "checkin.created")
        #expect((message?["data"] as? [String: String])?["check_in_id"] == first.id)
    }

    @Test("a nest has at most 100 sessions not yet ended; ending one makes room")
    func openSessionsCap() async throws {
        let fixture = try Fixture()
        let (nest, first) = try await fixture.nestAndSession()
        var request = Hearth_Checkins_V1_CreateSessionRequest()
        request.nestID = nest.id
        request.sitterUserID = "sam"
        request.timeZone = "Asia/Taipei"
        func plan(_ week: Int) async throws -> Hearth_Checkins_V1_Session {
            let start = fixture.clock.now().addingTimeInterval(Double(week) * 7 * 86_400)
            request.startsAt = Google_Protobuf_Timestamp(date: start)
            request.endsAt = Google_Protobuf_Timestamp(date: start.addingTimeInterval(86_400))
            return try await fixture.service.createSession(request, fixture.context("olivia"))
        }
        for week in 1...99 { _ = try await plan(week) }  // with the first, 100
        await expectCode(.resourceExhausted) { _ = try await plan(100) }
        _ = try await fixture.service.endSession(.with { $0.sessionID = first.id }, fixture.context("olivia"))
        fixture.clock.advance(by: 1)
        let last = try await plan(100)
        await expectCode(.resourceExhausted) { _ = try await plan(101) }
        // Calling off a session still to come makes room too (its end moves to its start).
        _ = try await fixture.service.endSession(.with { $0.sessionID = last.id }, fixture.context("olivia"))
        _ = try await plan(101)
    }

    @Test("a full disk answers UNAVAILABLE (try again later), not INTERNAL; writes go through once there is room")
    func fullDisk() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let writer = fixture.service.store.base.writer
        // The store may not grow past the pages it has: SQLite answers SQLITE_FULL.
        try await writer.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages)")
        }
        let long = String(repeating: "x", count: 280)
        var answer: StatusCode?
        for n in 0..<200 {
            do {
                _ = try await fixture.checkIn(session, caption: long, requestID: "full-\(n)")
            } catch {
                answer = RPCError(answering: error).code
                break
            }
        }
        #expect(answer == .unavailable)
        try await writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = 1073741823") }
        _ = try await fixture.checkIn(session, caption: long, requestID: "room-again")
    }

    @Test("a call that fails on a full store turns health NOT_SERVING; a call refused for its input does not")
    func fullDiskHealth() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        try await withServer(services: [fixture.service]) { server, port in
            try await withClient(port: port) { client in
                let health = HealthClient(client: client)
                func checkIn(_ caption: String) async throws {
                    var request = Hearth_Checkins_V1_CreateCheckInRequest()
                    request.sessionID = session.id
                    request.caption = caption
                    request.capturedAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
                    request.clientRequestID = UUID().uuidString
                    _ = try await Hearth_Checkins_V1_Checkins.Client(client).createCheckIn(
                        request,
                        options: CallOptions(metadata: [TrustedMetadata.user: "sam"])
                    )
                }
                try await checkIn("before")
                await #expect(throws: RPCError.self) { try await checkIn(String(repeating: "x", count: 281)) }
                #expect(try await health.check() == .serving, "a bad request says nothing of the store")

                let writer = fixture.service.store.base.writer
                try await writer.writeWithoutTransaction { db in
                    let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
                    try db.execute(sql: "PRAGMA max_page_count = \(pages)")
                }
                var refused: RPCError?
                for _ in 0..<200 where refused == nil {
                    do { try await checkIn(String(repeating: "x", count: 280)) } catch let error as RPCError {
                        refused = error
                    }
                }
                #expect(refused?.code == .unavailable)
                #expect(try await health.check() == .notServing)
                #expect(server.health.status(of: "hearth.checkins.v1.Checkins") == .notServing)
            }
        }
    }

    @Test("deleting a check-in takes back its owner's push if it has not gone out")
    func deleteWithdrawsPush() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let kept = try await fixture.checkIn(session, caption: "Walk done")
        let deleted = try await fixture.checkIn(session, caption: "Gate code is 4512, oops")
        _ = try await fixture.service.deleteCheckIn(.with { $0.checkInID = deleted.id }, fixture.context("sam"))
        let waiting = try await fixture.service.store.base.writer.read { db in
            try String.fetchAll(db, sql: "SELECT message FROM push_outbox")
        }
        #expect(waiting.count == 1 && waiting[0].contains(kept.id) && !waiting[0].contains("4512"))
    }

    @Test("a check-in checked before its owner ended the session is refused when it is written")
    func sessionEndedWhileCheckingIn() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        fixture.clock.advance(by: 3600)
        let now = fixture.clock.now()
        // What the service built from a request captured a minute ahead (within the allowed
        // skew) while the session was under way; the owner ends the session before it is written.
        let record = CheckInRecord(
            id: "c1",
            sessionID: session.id,
            submitterUserID: "sam",
            caption: "All good",
            capturedAt: now + 60,
            createdAt: now,
            photoAltText: "",
            viewedAt: nil,
            clientRequestID: "r1",
            photoFormat: nil,
            photoWidth: nil,
            photoHeight: nil,
            photoBytes: nil
        )
        _ = try await fixture.service.endSession(.with { $0.sessionID = session.id }, fixture.context("olivia"))
        let notify = PushMessage(userID: "olivia", kind: "checkin.created", title: "", body: "", createdAt: now)
        let outcome = try await fixture.service.store.createCheckIn(
            record,
            photo: nil,
            localDay: "2026-03-10",
            notify: notify
        )
        guard case .sessionEnded(let violation) = outcome else {
            Issue.record("stored after its session ended: \(outcome)")
            return
        }
        #expect(violation.field == "captured_at")
        #expect(try await fixture.service.store.base.writer.read { db in try CheckInRecord.fetchCount(db) } == 0)
    }

    @Test("check-ins outside the session's window are refused; late arrivals within 24 h are accepted")
    func window() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession(hours: 2)
        await expectCode(.invalidArgument) {
            _ = try await fixture.checkIn(session, at: Fixture.start.addingTimeInterval(-1))
        }
        await expectCode(.invalidArgument) {
            _ = try await fixture.checkIn(session, at: Fixture.start.addingTimeInterval(301))
        }
        _ = try await fixture.checkIn(session, at: Fixture.start.addingTimeInterval(300))

        let taken = Fixture.start.addingTimeInterval(3600)
        fixture.clock.set(Fixture.start.addingTimeInterval(2 * 3600 + 24 * 3600))  // exactly 24 h after the end
        _ = try await fixture.checkIn(session, at: taken)
        fixture.clock.advance(by: 1)
        await expectCode(.invalidArgument) { _ = try await fixture.checkIn(session, at: taken) }
        await expectCode(.invalidArgument) {
            _ = try await fixture.checkIn(session, at: Fixture.start.addingTimeInterval(2 * 3600 + 1))
        }

        // A session ended the moment it began was called off: not even that moment is taken.
        fixture.clock.set(Fixture.start)
        let (_, calledOff) = try await fixture.nestAndSession(hours: 2)
        var end = Hearth_Checkins_V1_EndSessionRequest()
        end.sessionID = calledOff.id
        #expect(try await fixture.service.endSession(end, fixture.context("olivia")).endsAt == calledOff.startsAt)
        #expect(await violatedFields { _ = try await fixture.checkIn(calledOff, at: Fixture.start) } == ["session_id"])
    }

    @Test("someone who is not a participant gets NOT_FOUND from every method")
    func strangers() async throws {
        let fixture = try Fixture()
        let (nest, session) = try await fixture.nestAndSession()
        let checkIn = try await fixture.checkIn(session)
        let templates = try await fixture.service.listTemplates(
            {
                var r = Hearth_Checkins_V1_ListTemplatesRequest()
                r.nestID = nest.id
                return r
            }(),
            fixture.context("olivia")
        )
        let stranger = fixture.context("mallory")
        let service = fixture.service
        await expectCode(.notFound) {
            _ = try await service.getNest(
                {
                    var r = Hearth_Checkins_V1_GetNestRequest()
                    r.nestID = nest.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.getSession(
                {
                    var r = Hearth_Checkins_V1_GetSessionRequest()
                    r.sessionID = session.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.listSessions(
                {
                    var r = Hearth_Checkins_V1_ListSessionsRequest()
                    r.nestID = nest.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.endSession(
                {
                    var r = Hearth_Checkins_V1_EndSessionRequest()
                    r.sessionID = session.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) { _ = try await fixture.checkIn(session, as: "mallory") }
        await expectCode(.notFound) {
            _ = try await service.listCheckIns(
                {
                    var r = Hearth_Checkins_V1_ListCheckInsRequest()
                    r.sessionID = session.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.getCheckInPhoto(
                {
                    var r = Hearth_Checkins_V1_GetCheckInPhotoRequest()
                    r.checkInID = checkIn.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.deleteCheckIn(
                {
                    var r = Hearth_Checkins_V1_DeleteCheckInRequest()
                    r.checkInID = checkIn.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.markViewed(
                {
                    var r = Hearth_Checkins_V1_MarkViewedRequest()
                    r.checkInID = checkIn.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.listTemplates(
                {
                    var r = Hearth_Checkins_V1_ListTemplatesRequest()
                    r.nestID = nest.id
                    return r
                }(),
                stranger
            )
        }
        await expectCode(.notFound) {
            _ = try await service.addTemplate(
                {
                    var r = Hearth_Checkins_V1_AddTemplateRequest()
                    r.nestID = nest.id
                    r.text = "x"
                    return r
                }(),
                stranger
            )
        }
        do {
            var remove = Hearth_Checkins_V1_RemoveTemplateRequest()
            remove.templateID = templates.templates[0].id
            _ = try await service.removeTemplate(remove, stranger)
            Issue.record("a stranger removed a template")
        } catch let error as RPCError {
            #expect(error.code == .notFound)
            #expect(!error.message.contains(nest.id), "the nest's id does not leak: \(error.message)")
        }
        let mine = try await service.listMyNests(Hearth_Checkins_V1_ListMyNestsRequest(), stranger)
        #expect(mine.nests.isEmpty)
    }

    @Test("nest roles: owner, sitter only while a session is active, none; only about oneself")
    func nestRoles() async throws {
        let fixture = try Fixture()
        let (nest, _) = try await fixture.nestAndSession(hours: 1)
        func role(_ user: String, asking caller: String) async throws -> Hearth_Checkins_V1_NestRole {
            var request = Hearth_Checkins_V1_GetNestRoleRequest()
            request.nestID = nest.id
            request.userID = user
            return try await fixture.service.getNestRole(request, fixture.context(caller)).role
        }
        #expect(try await role("olivia", asking: "olivia") == .owner)
        #expect(try await role("sam", asking: "sam") == .sitter)
        #expect(try await role("sam", asking: "olivia") == .sitter)
        #expect(try await role("mallory", asking: "mallory") == .none)
        await expectCode(.permissionDenied) { _ = try await role("olivia", asking: "mallory") }
        // About someone else in a nest that does not exist: the same answer, so asking tells no
        // one which nests exist.
        var missing = Hearth_Checkins_V1_GetNestRoleRequest()
        missing.nestID = "no-such-nest"
        missing.userID = "olivia"
        await expectCode(.permissionDenied) {
            _ = try await fixture.service.getNestRole(missing, fixture.context("mallory"))
        }
        missing.userID = "mallory"
        #expect(try await fixture.service.getNestRole(missing, fixture.context("mallory")).role == .none)
        fixture.clock.advance(by: 3600)
        #expect(try await role("sam", asking: "sam") == .none)
    }

    @Test(
        "a sitter sees the nest while a session is under way, to come, or ended within a day; then only their own sessions"
    )
    func formerSitter() async throws {
        let fixture = try Fixture()
        let (nest, session) = try await fixture.nestAndSession(hours: 2)
        _ = try await fixture.checkIn(session)
        var get = Hearth_Checkins_V1_GetNestRequest()
        get.nestID = nest.id
        var templates = Hearth_Checkins_V1_ListTemplatesRequest()
        templates.nestID = nest.id
        _ = try await fixture.service.getNest(get, fixture.context("sam"))
        _ = try await fixture.service.listTemplates(templates, fixture.context("sam"))
        // ListMyNests shows exactly the nests GetNest lets him see.
        let myNests = { (user: String) in
            try await fixture.service.listMyNests(.init(), fixture.context(user)).nests.map(\.id)
        }
        #expect(try await myNests("sam") == [nest.id])

        var end = Hearth_Checkins_V1_EndSessionRequest()
        end.sessionID = session.id
        fixture.clock.advance(by: 600)
        _ = try await fixture.service.endSession(end, fixture.context("olivia"))
        // For the day late check-ins are still taken, to its last second, the nest stays in sight.
        fixture.clock.advance(by: 86_400)
        _ = try await fixture.service.listTemplates(templates, fixture.context("sam"))
        #expect(try await myNests("sam") == [nest.id])
        fixture.clock.advance(by: 1)
        #expect(try await myNests("sam").isEmpty)
        // Then let go: the nest's name and its captions (an owner may keep a gate code there) no more.
        await expectCode(.notFound) { _ = try await fixture.service.getNest(get, fixture.context("sam")) }
        await expectCode(.notFound) { _ = try await fixture.service.listTemplates(templates, fixture.context("sam")) }
        // What he posted stays his to read.
        var own = Hearth_Checkins_V1_GetSessionRequest()
        own.sessionID = session.id
        #expect(try await fixture.service.getSession(own, fixture.context("sam")).id == session.id)
        var timeline = Hearth_Checkins_V1_ListCheckInsRequest()
        timeline.sessionID = session.id
        #expect(try await fixture.service.listCheckIns(timeline, fixture.context("sam")).checkIns.count == 1)

        // A session to come lets him in again, before it starts.
        var next = Hearth_Checkins_V1_CreateSessionRequest()
        next.nestID = nest.id
        next.sitterUserID = "sam"
        next.startsAt = Google_Protobuf_Timestamp(date: fixture.clock.now().addingTimeInterval(86_400))
        next.endsAt = Google_Protobuf_Timestamp(date: fixture.clock.now().addingTimeInterval(2 * 86_400))
        next.timeZone = "Asia/Taipei"
        _ = try await fixture.service.createSession(next, fixture.context("olivia"))
        _ = try await fixture.service.getNest(get, fixture.context("sam"))

        // A session called off before it begins (its end set to its start) lets no one in.
        next.sitterUserID = "tom"
        let calledOff = try await fixture.service.createSession(next, fixture.context("olivia"))
        _ = try await fixture.service.getNest(get, fixture.context("tom"))
        end.sessionID = calledOff.id
        #expect(try await myNests("tom") == [nest.id])
        _ = try await fixture.service.endSession(end, fixture.context("olivia"))
        await expectCode(.notFound) { _ = try await fixture.service.getNest(get, fixture.context("tom")) }
        #expect(try await myNests("tom").isEmpty, "nor lists it (its name, its owner)")
    }

    @Test("timeline pages, newest first, never carry photo bytes; the owner's view is a read receipt")
    func timelineAndReceipts() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        var ids: [String] = []
        for i in 0..<7 {
            ids.append(
                try await fixture.checkIn(
                    session,
                    caption: "update \(i)",
                    at: Fixture.start.addingTimeInterval(Double(i))
                ).id
            )
        }
        var request = Hearth_Checkins_V1_ListCheckInsRequest()
        request.sessionID = session.id
        request.order = .newestFirst
        request.pageSize = 3
        var seen: [String] = []
        repeat {
            let page = try await fixture.service.listCheckIns(request, fixture.context("olivia"))
            #expect(page.checkIns.count <= 3)
            seen += page.checkIns.map(\.id)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(seen == ids.reversed())

        request.pageSize = 101
        await expectCode(.invalidArgument) {
            _ = try await fixture.service.listCheckIns(request, fixture.context("olivia"))
        }

        var view = Hearth_Checkins_V1_MarkViewedRequest()
        view.checkInID = ids[0]
        await expectCode(.permissionDenied) { _ = try await fixture.service.markViewed(view, fixture.context("sam")) }
        let viewed = try await fixture.service.markViewed(view, fixture.context("olivia"))
        #expect(viewed.hasViewedAt)
        fixture.clock.advance(by: 60)
        let again = try await fixture.service.markViewed(view, fixture.context("olivia"))
        #expect(again.viewedAt == viewed.viewedAt)
    }

    @Test("quick captions: four by default; the owner adds and removes; no duplicates; sitters only read")
    func templates() async throws {
        let fixture = try Fixture()
        let (nest, _) = try await fixture.nestAndSession()
        var list = Hearth_Checkins_V1_ListTemplatesRequest()
        list.nestID = nest.id
        let defaults = try await fixture.service.listTemplates(list, fixture.context("sam")).templates.map(\.text)
        #expect(defaults == ["Pet fed", "All good", "Walk done", "Home secure"])

        var add = Hearth_Checkins_V1_AddTemplateRequest()
        add.nestID = nest.id
        add.text = "Plants watered"
        _ = try await fixture.service.addTemplate(add, fixture.context("olivia"))
        add.text = "  pet FED "
        await expectCode(.alreadyExists) { _ = try await fixture.service.addTemplate(add, fixture.context("olivia")) }
        // Case in any script, and accents composed or not, make no new caption.
        for (first, again) in [("Кот накормлен", "КОТ НАКОРМЛЕН"), ("Café ouvert", "CAFE\u{301} OUVERT")] {
            add.text = first
            _ = try await fixture.service.addTemplate(add, fixture.context("olivia"))
            add.text = again
            await expectCode(.alreadyExists) {
                _ = try await fixture.service.addTemplate(add, fixture.context("olivia"))
            }
        }
        add.text = "Mail in"
        await expectCode(.permissionDenied) { _ = try await fixture.service.addTemplate(add, fixture.context("sam")) }
    }

    @Test("sessions: owner only, ends after it starts, a real IANA zone; every bad field is named")
    func sessionValidation() async throws {
        let fixture = try Fixture()
        let (nest, session) = try await fixture.nestAndSession()
        var request = Hearth_Checkins_V1_CreateSessionRequest()
        request.nestID = nest.id
        request.sitterUserID = "olivia"
        request.startsAt = Google_Protobuf_Timestamp(date: Fixture.start)
        request.endsAt = Google_Protobuf_Timestamp(date: Fixture.start)
        request.timeZone = "Mars/Olympus"
        do {
            _ = try await fixture.service.createSession(request, fixture.context("olivia"))
            Issue.record("accepted")
        } catch let error as RPCError {
            #expect(error.code == .invalidArgument)
            #expect(Set(error.violations.map(\.field)) == ["sitter_user_id", "ends_at", "time_zone"])
        }
        request.sitterUserID = "sam"
        request.timeZone = "Europe/London"
        // Milliseconds sent as seconds: a year past 9999 would be stored and never read back.
        request.endsAt = Google_Protobuf_Timestamp(seconds: 1_773_403_200_000)
        do {
            _ = try await fixture.service.createSession(request, fixture.context("olivia"))
            Issue.record("accepted")
        } catch let error as RPCError {
            #expect(error.code == .invalidArgument && error.violations.map(\.field) == ["ends_at"])
        }
        // The last second there is, taken and read back (a fraction of it would be the year 10000).
        request.endsAt = Google_Protobuf_Timestamp(seconds: 253_402_300_799)
        let longest = try await fixture.service.createSession(request, fixture.context("olivia"))
        var read = Hearth_Checkins_V1_GetSessionRequest()
        read.sessionID = longest.id
        #expect(try await fixture.service.getSession(read, fixture.context("olivia")).endsAt.seconds == 253_402_300_799)
        request.endsAt = Google_Protobuf_Timestamp(date: Fixture.start.addingTimeInterval(60))
        await expectCode(.permissionDenied) {
            _ = try await fixture.service.createSession(request, fixture.context("sam"))
        }

        var end = Hearth_Checkins_V1_EndSessionRequest()
        end.sessionID = session.id
        fixture.clock.advance(by: 600)
        let ended = try await fixture.service.endSession(end, fixture.context("olivia"))
        #expect(!ended.active)
        #expect(ended.endsAt == Google_Protobuf_Timestamp(date: Fixture.start.addingTimeInterval(600)))
    }
}
