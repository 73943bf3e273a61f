import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService

/// An account export's part in checkins: ExportUser.
@Suite("Export")
struct ExportTests {
    /// ExportUser for `user`.
    static func export(_ fixture: Fixture, _ user: String) async throws -> Hearth_Checkins_V1_UserExport {
        try await fixture.service.exportUser(Hearth_Checkins_V1_ExportUserRequest(), fixture.context(user))
    }

    /// The nest as GetNest answers `user`.
    static func nest(_ fixture: Fixture, _ id: String, as user: String) async throws -> Hearth_Checkins_V1_Nest {
        try await fixture.service.getNest(.with { $0.nestID = id }, fixture.context(user))
    }

    /// The session as GetSession answers `user`.
    static func session(_ fixture: Fixture, _ id: String, as user: String) async throws
        -> Hearth_Checkins_V1_Session
    {
        try await fixture.service.getSession(.with { $0.sessionID = id }, fixture.context(user))
    }

    /// A session's check-ins as ListCheckIns answers `user`, oldest first (one page: a test's few).
    static func checkIns(_ fixture: Fixture, _ sessionID: String, as user: String) async throws
        -> [Hearth_Checkins_V1_CheckIn]
    {
        var request = Hearth_Checkins_V1_ListCheckInsRequest()
        request.sessionID = sessionID
        request.order = .oldestFirst
        request.pageSize = 100
        let page = try await fixture.service.listCheckIns(request, fixture.context(user))
        #expect(page.nextPageToken.isEmpty)
        return page.checkIns
    }

    /// A nest's quick captions as ListTemplates answers `user`.
    static func templates(_ fixture: Fixture, _ nestID: String, as user: String) async throws
        -> [Hearth_Checkins_V1_Template]
    {
        try await fixture.service.listTemplates(.with { $0.nestID = nestID }, fixture.context(user)).templates
    }

    @Test(
        "ExportUser answers the owner's nests then the ones they sit, the sessions and check-ins of both, their nests' quick captions; each as the reads answer it, nothing of anyone else's"
    )
    func ownerAndSitter() async throws {
        let fixture = try Fixture()
        // Nora's cabin, which Olivia sits: made before Olivia's home, it comes after it all the same.
        let (cabin, oliviaAtCabin) = try await fixture.nestAndSession(owner: "nora", sitter: "olivia")
        fixture.clock.advance(by: 60)
        // Olivia's home, which Sam sits, with a quick caption of hers besides the defaults.
        let (home, samAtHome) = try await fixture.nestAndSession(owner: "olivia", sitter: "sam")
        var template = Hearth_Checkins_V1_AddTemplateRequest()
        template.nestID = home.id
        template.text = "Plants watered"
        _ = try await fixture.service.addTemplate(template, fixture.context("olivia"))
        // Uma's studio, which Vic sits: nothing of Olivia's or Sam's.
        let (studio, vicAtStudio) = try await fixture.nestAndSession(owner: "uma", sitter: "vic")
        // Check-ins taken a minute apart, the sessions' interleaved: Sam's photo, Olivia's at the
        // cabin, Sam's without a photo; Vic's at the studio.
        fixture.clock.advance(by: 60)
        let samsPhoto = try await ErasureTests.photoCheckIn(fixture, samAtHome, caption: "Asleep")
        fixture.clock.advance(by: 60)
        let olivias = try await fixture.checkIn(oliviaAtCabin, caption: "Cat fed", as: "olivia")
        fixture.clock.advance(by: 60)
        let samsWalk = try await fixture.checkIn(samAtHome, caption: "Walk done", as: "sam")
        let vics = try await fixture.checkIn(vicAtStudio, caption: "Fish fed", as: "vic")

        // Olivia: her home first (though the younger), then the cabin; both sessions by start;
        // the three check-ins by capture; her home's quick captions, the defaults among them.
        let olivia = try await Self.export(fixture, "olivia")
        #expect(olivia.nests.map(\.id) == [home.id, cabin.id])
        let homeToOlivia = try await Self.nest(fixture, home.id, as: "olivia")
        let cabinToOlivia = try await Self.nest(fixture, cabin.id, as: "olivia")
        #expect(olivia.nests == [homeToOlivia, cabinToOlivia])
        let listed = try await fixture.service.listMyNests(.init(), fixture.context("olivia")).nests
        #expect(listed.map(\.id) == [cabin.id, home.id], "ListMyNests: by creation alone")
        #expect(Set(olivia.nests.map(\.id)) == Set(listed.map(\.id)))
        #expect(olivia.sessions.map(\.id) == [oliviaAtCabin.id, samAtHome.id])
        let cabinSession = try await Self.session(fixture, oliviaAtCabin.id, as: "olivia")
        let homeSession = try await Self.session(fixture, samAtHome.id, as: "olivia")
        #expect(olivia.sessions == [cabinSession, homeSession])
        let oliviasIDs = [samsPhoto.id, olivias.id, samsWalk.id]
        let atHome = try await Self.checkIns(fixture, samAtHome.id, as: "olivia")
        let atCabin = try await Self.checkIns(fixture, oliviaAtCabin.id, as: "olivia")
        let byID = Dictionary(uniqueKeysWithValues: (atHome + atCabin).map { ($0.id, $0) })
        #expect(olivia.checkIns.map(\.id) == oliviasIDs)
        #expect(olivia.checkIns == oliviasIDs.compactMap { byID[$0] })
        #expect(olivia.checkIns.map(\.hasPhoto_p) == [true, false, false])
        #expect(olivia.checkIns.first?.photo == samsPhoto.photo)
        #expect(olivia.checkIns.first?.photo.format.isEmpty == false)
        let homeTemplates = try await Self.templates(fixture, home.id, as: "olivia")
        #expect(olivia.templates == homeTemplates)
        #expect(olivia.templates.map(\.text) == CheckinRules.defaultTemplates + ["Plants watered"])
        #expect(olivia.templates.allSatisfy { $0.nestID == home.id })
        // Nothing of Uma's studio.
        #expect(!olivia.nests.contains { $0.id == studio.id })
        #expect(!olivia.sessions.contains { $0.id == vicAtStudio.id })
        #expect(!olivia.checkIns.contains { $0.id == vics.id })

        // Sam: Olivia's home, which he sits, his session and his check-ins; not her quick
        // captions (hers, not his), nor Nora's cabin (Olivia's sitting, not his).
        let sam = try await Self.export(fixture, "sam")
        let homeToSam = try await Self.nest(fixture, home.id, as: "sam")
        let sessionToSam = try await Self.session(fixture, samAtHome.id, as: "sam")
        let listedToSam = try await Self.checkIns(fixture, samAtHome.id, as: "sam")
        #expect(sam.nests == [homeToSam])
        #expect(sam.sessions == [sessionToSam])
        #expect(sam.checkIns.map(\.id) == [samsPhoto.id, samsWalk.id])
        #expect(sam.checkIns == listedToSam)
        #expect(sam.checkIns.map(\.hasPhoto_p) == [true, false])
        #expect(sam.templates.isEmpty)
        #expect(!sam.nests.contains { $0.id == cabin.id })

        // Uma: her studio, Vic's session in it, his check-in, her captions (the defaults).
        let uma = try await Self.export(fixture, "uma")
        #expect(uma.nests.map(\.id) == [studio.id])
        #expect(uma.sessions.map(\.id) == [vicAtStudio.id])
        #expect(uma.checkIns.map(\.id) == [vics.id])
        #expect(uma.templates.map(\.text) == CheckinRules.defaultTemplates)

        // Someone with nothing here: an empty export.
        #expect(try await Self.export(fixture, "nobody") == Hearth_Checkins_V1_UserExport())
    }

    @Test(
        "ExportUser keeps a sitting long over, which GetNest and ListMyNests no longer show, and names a nest sat twice once"
    )
    func pastSitting() async throws {
        let fixture = try Fixture()
        // Olivia sits Nora's cabin for two hours, posts a check-in, and again an hour later for
        // three days.
        let (cabin, first) = try await fixture.nestAndSession(owner: "nora", sitter: "olivia", hours: 2)
        let catFed = try await fixture.checkIn(first, caption: "Cat fed", as: "olivia")
        fixture.clock.advance(by: 3600)
        let second = try await ErasureTests.session(fixture, in: cabin, sitter: "olivia")
        // Both ended more than a day ago.
        fixture.clock.advance(by: 5 * 86_400)
        await expectCode(.notFound) { _ = try await Self.nest(fixture, cabin.id, as: "olivia") }
        #expect(try await fixture.service.listMyNests(.init(), fixture.context("olivia")).nests.isEmpty)

        let olivia = try await Self.export(fixture, "olivia")
        let cabinToNora = try await Self.nest(fixture, cabin.id, as: "nora")
        let firstToOlivia = try await Self.session(fixture, first.id, as: "olivia")
        let secondToOlivia = try await Self.session(fixture, second.id, as: "olivia")
        let listed = try await Self.checkIns(fixture, first.id, as: "olivia")
        #expect(olivia.nests == [cabinToNora], "once, as its owner reads it")
        #expect(olivia.sessions == [firstToOlivia, secondToOlivia])
        #expect(olivia.sessions.allSatisfy { !$0.active })
        #expect(olivia.checkIns == [catFed])
        #expect(olivia.checkIns == listed)
        #expect(olivia.templates.isEmpty, "the cabin's quick captions are Nora's")
    }
}
