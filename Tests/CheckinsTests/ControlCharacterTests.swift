import HearthContracts
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService

/// Names a user gives a nest or a quick caption are quoted in pushes to others: no control
/// characters.
@Suite("Checkins: control characters")
struct CheckinsControlCharacterTests {
    @Test(
        "a nest name, a caption or a template text with a control character is refused; the same text without it is taken"
    )
    func refused() async throws {
        let fixture = try Fixture()
        let nestFields = await violatedFields {
            _ = try await fixture.service.createNest(.with { $0.name = "Home\u{1B}[2J" }, fixture.context("olivia"))
        }
        #expect(nestFields == ["name"])
        let nest = try await fixture.service.createNest(.with { $0.name = "Home" }, fixture.context("olivia"))
        #expect(nest.name == "Home")
        // The model's own checks, without a store: a caption is quoted in the owner's push.
        #expect((try? CheckinRules.caption("Walked\nthe dog", hasPhoto: false).get()) == nil)
        #expect((try? CheckinRules.caption("Walked the dog", hasPhoto: false).get()) == "Walked the dog")
        #expect((try? CheckinRules.templateText("Fed\u{0}").get()) == nil)
    }
}
