import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import Testing

@testable import CheckinsService

/// The nests an erasure deleted, which EraseUser answers (for routines' part of the account
/// erasure, which comes after checkins' and erases the routines in them), and forgets 30 days on.
extension ErasureTests {
    /// A nest named `name`, owned by `owner`.
    static func nest(_ fixture: Fixture, _ name: String, owner: String) async throws -> Hearth_Checkins_V1_Nest {
        var request = Hearth_Checkins_V1_CreateNestRequest()
        request.name = name
        return try await fixture.service.createNest(request, fixture.context(owner))
    }

    /// EraseUser's whole answer for `user`.
    static func eraseAnswer(_ fixture: Fixture, _ user: String) async throws -> Hearth_Checkins_V1_EraseUserResponse {
        try await fixture.service.eraseUser(Hearth_Checkins_V1_EraseUserRequest(), fixture.context(user))
    }

    /// The `erased_nest` rows, as "nest owner".
    static func erasedNestRows(_ fixture: Fixture) throws -> Set<String> {
        try fixture.service.store.base.read { db in
            Set(
                try Row.fetchAll(db, sql: "SELECT nest_id, owner_id FROM erased_nest").map {
                    "\($0["nest_id"] as String) \($0["owner_id"] as String)"
                }
            )
        }
    }

    @Test(
        "EraseUser answers every nest it erased for the user, on a retry too; a nest made since goes on the next call, named with the others"
    )
    func answersErasedNests() async throws {
        let fixture = try Fixture()
        let (home, _) = try await fixture.nestAndSession(owner: "olivia", sitter: "sam")
        let cabin = try await Self.nest(fixture, "Cabin", owner: "olivia")
        // Nora's, which Olivia sits: not Olivia's to erase.
        let (norasHome, _) = try await fixture.nestAndSession(owner: "nora", sitter: "olivia")

        let first = try await Self.eraseAnswer(fixture, "olivia")
        #expect(first.deleted > 0)
        #expect(first.erasedNestIds.count == 2 && Set(first.erasedNestIds) == [home.id, cabin.id])
        #expect(try Self.erasedNestRows(fixture) == ["\(home.id) olivia", "\(cabin.id) olivia"])

        // A retry (its first answer lost): nothing left to delete, the same nests named.
        let retry = try await Self.eraseAnswer(fixture, "olivia")
        #expect(retry.deleted == 0)
        #expect(retry.erasedNestIds == first.erasedNestIds)

        // A nest made meanwhile (the erasure runs for a while): the next call erases it too and
        // names it after the others.
        fixture.clock.advance(by: 60)
        let boat = try await Self.nest(fixture, "Boat", owner: "olivia")
        let again = try await Self.eraseAnswer(fixture, "olivia")
        #expect(again.deleted > 0)
        #expect(again.erasedNestIds == first.erasedNestIds + [boat.id])
        var getNest = Hearth_Checkins_V1_GetNestRequest()
        getNest.nestID = boat.id
        await expectCode(.notFound) { _ = try await fixture.service.getNest(getNest, fixture.context("olivia")) }

        // Others: Nora's nest stays and was never erased; someone never erased has none.
        #expect(try await Self.eraseAnswer(fixture, "nobody").erasedNestIds == [])
        getNest.nestID = norasHome.id
        #expect(try await fixture.service.getNest(getNest, fixture.context("nora")).id == norasHome.id)
        #expect(try Self.erasedNestRows(fixture).allSatisfy { $0.hasSuffix(" olivia") })
    }

    @Test("the erased nests are forgotten 30 days after their erasure, by checkins' housekeeping on its clock")
    func erasedNestsForgotten() async throws {
        let fixture = try Fixture()
        let home = try await Self.nest(fixture, "Home", owner: "olivia")
        let erasedAt = fixture.clock.now()
        #expect(try await Self.eraseAnswer(fixture, "olivia").erasedNestIds == [home.id])
        // Nora's erasure a day later.
        fixture.clock.advance(by: 86_400)
        let cabin = try await Self.nest(fixture, "Cabin", owner: "nora")
        #expect(try await Self.eraseAnswer(fixture, "nora").erasedNestIds == [cabin.id])

        var logger = Logger(label: "checkins-housekeeping")
        logger.logLevel = .critical
        let housekeeping = fixture.service.housekeeping(logger: logger)
        let running = Task { try await housekeeping.run() }
        do {
            try await eventually("the housekeeping sleeps") { housekeeping.hasHandled(upTo: fixture.clock.now()) }
            // An hour short of 30 days: a pass, and both are remembered.
            let almost = erasedAt.addingTimeInterval(CheckinStore.erasedNestRetention - 3600)
            fixture.clock.set(almost)
            try await eventually("the housekeeping ran an hour short of 30 days") {
                housekeeping.hasHandled(upTo: almost)
            }
            #expect(try Self.erasedNestRows(fixture) == ["\(home.id) olivia", "\(cabin.id) nora"])

            // 30 days after Olivia's erasure (its next pass, an hour on): hers are forgotten,
            // Nora's are not.
            let due = erasedAt.addingTimeInterval(CheckinStore.erasedNestRetention)
            fixture.clock.set(due)
            try await eventually("the housekeeping ran 30 days after the erasure") {
                housekeeping.hasHandled(upTo: due)
            }
            #expect(try Self.erasedNestRows(fixture) == ["\(cabin.id) nora"])
            let later = try await Self.eraseAnswer(fixture, "olivia")
            #expect(later.erasedNestIds == [] && later.deleted == 0)
            #expect(try await Self.eraseAnswer(fixture, "nora").erasedNestIds == [cabin.id])
        } catch {
            running.cancel()
            _ = await running.result
            throw error
        }
        running.cancel()
        _ = await running.result
    }
}
