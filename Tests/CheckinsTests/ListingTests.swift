import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService

@Suite("Nests and sessions: pages and limits")
struct ListingTests {
    @Test("ListSessions pages a nest's sessions by start either way; a sitter's pages hold only their own")
    func sessionPages() async throws {
        let fixture = try Fixture()
        let nest = try await fixture.service.createNest(.with { $0.name = "Home" }, fixture.context("olivia"))
        var made: [(id: String, sitter: String)] = []
        for index in 0..<7 {
            // Pairs start at the same instant: the id orders them.
            let startsAt = Fixture.start.addingTimeInterval(Double(index / 2) * 3600)
            let sitter = index % 3 == 0 ? "kim" : "sam"
            var request = Hearth_Checkins_V1_CreateSessionRequest()
            request.nestID = nest.id
            request.sitterUserID = sitter
            request.startsAt = Google_Protobuf_Timestamp(date: startsAt)
            request.endsAt = Google_Protobuf_Timestamp(date: startsAt.addingTimeInterval(86_400))
            request.timeZone = "Europe/London"
            let session = try await fixture.service.createSession(request, fixture.context("olivia"))
            made.append((session.id, sitter))
        }
        func walk(_ user: String, order: Hearth_Checkins_V1_Order, size: UInt32) async throws -> (
            ids: [String], pages: [Int]
        ) {
            var request = Hearth_Checkins_V1_ListSessionsRequest()
            request.nestID = nest.id
            request.order = order
            request.pageSize = size
            var ids: [String] = []
            var pages: [Int] = []
            repeat {
                let page = try await fixture.service.listSessions(request, fixture.context(user))
                ids += page.sessions.map(\.id)
                pages.append(page.sessions.count)
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty
            return (ids, pages)
        }
        let oldestFirst = try await walk("olivia", order: .unspecified, size: 3)
        #expect(oldestFirst.pages == [3, 3, 1] && Set(oldestFirst.ids) == Set(made.map(\.id)))
        let newestFirst = try await walk("olivia", order: .newestFirst, size: 3)
        #expect(newestFirst.ids == oldestFirst.ids.reversed())
        #expect(try await walk("olivia", order: .oldestFirst, size: 0).pages == [7], "0 means 50")
        let sams = try await walk("sam", order: .oldestFirst, size: 3)
        #expect(sams.ids == oldestFirst.ids.filter { id in made.contains { $0.id == id && $0.sitter == "sam" } })
        #expect(sams.pages == [3, 1])
        await expectCode(.notFound) { _ = try await walk("stranger", order: .oldestFirst, size: 3) }
        #expect(await violatedFields { _ = try await walk("olivia", order: .oldestFirst, size: 101) } == ["page_size"])
        _ = try await walk("olivia", order: .oldestFirst, size: 100)
    }

    @Test("a user owns at most 100 nests; the 101st is RESOURCE_EXHAUSTED, and someone else's are not counted")
    func nestCap() async throws {
        let fixture = try Fixture()
        for index in 0..<CheckinRules.maxNestsPerOwner {
            _ = try await fixture.service.createNest(.with { $0.name = "Nest \(index)" }, fixture.context("olivia"))
        }
        await expectCode(.resourceExhausted) {
            _ = try await fixture.service.createNest(.with { $0.name = "One more" }, fixture.context("olivia"))
        }
        _ = try await fixture.service.createNest(.with { $0.name = "Mine" }, fixture.context("sam"))
        let listed = try await fixture.service.listMyNests(.init(), fixture.context("olivia"))
        #expect(listed.nests.count == CheckinRules.maxNestsPerOwner && listed.nextPageToken.isEmpty)
    }

    @Test("ListMyNests pages the nests one owns and sits in, oldest first, none twice; page_size at most 100")
    func myNestsInPages() async throws {
        let fixture = try Fixture()
        var expected: [String] = []
        // Sam owns three nests and sits in five of Olivia's (two sessions in one of them),
        // made a second apart so that creation orders them.
        for index in 0..<8 {
            let owner = index < 3 ? "sam" : "olivia"
            let nest = try await fixture.service.createNest(.with { $0.name = "Nest \(index)" }, fixture.context(owner))
            expected.append(nest.id)
            if owner == "olivia" {
                for _ in 0..<(index == 4 ? 2 : 1) {
                    var session = Hearth_Checkins_V1_CreateSessionRequest()
                    session.nestID = nest.id
                    session.sitterUserID = "sam"
                    session.startsAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
                    session.endsAt = Google_Protobuf_Timestamp(date: fixture.clock.now().addingTimeInterval(86_400))
                    session.timeZone = "Europe/London"
                    _ = try await fixture.service.createSession(session, fixture.context("olivia"))
                }
            }
            fixture.clock.advance(by: 1)
        }
        var request = Hearth_Checkins_V1_ListMyNestsRequest()
        request.pageSize = 3
        var seen: [String] = []
        var pages: [Int] = []
        repeat {
            let page = try await fixture.service.listMyNests(request, fixture.context("sam"))
            seen += page.nests.map(\.id)
            pages.append(page.nests.count)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(seen == expected && pages == [3, 3, 2])
        request.pageSize = 101
        #expect(
            await violatedFields { _ = try await fixture.service.listMyNests(request, fixture.context("sam")) } == [
                "page_size"
            ]
        )
    }
}
