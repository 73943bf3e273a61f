import Foundation
import HearthContracts
import HearthCore
import Synchronization
import Testing

@testable import RoutinesService

/// The role cache and an erasure: the roles remembered in erased nests are forgotten, and an
/// answer asked before the erasure is not kept after it.
@Suite("Routines: nest roles forgotten at an erasure")
struct NestRoleCacheTests {
    /// Checkins as the cache sees it: a role per nest, each question counted.
    final class Source: NestRoleSource {
        let roles = Mutex<[String: Hearth_Checkins_V1_NestRole]>([:])
        let asked = Atomic<Int>(0)

        func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
            self.asked.add(1, ordering: .relaxed)
            return self.roles.withLock { $0[nestID] ?? .none }
        }
    }

    @Test("after forget(nests:) the next role in an erased nest is asked anew; other nests stay remembered")
    func forgetsErasedNests() async throws {
        let source = Source()
        source.roles.withLock { $0 = ["home": .owner, "cabin": .owner] }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let cache = CachedNestRoles(source: source, clock: clock)
        #expect(try await cache.role(nestID: "home", userID: "olivia") == .owner)
        #expect(try await cache.role(nestID: "cabin", userID: "olivia") == .owner)
        #expect(try await cache.role(nestID: "home", userID: "olivia") == .owner)
        #expect(source.asked.load(ordering: .relaxed) == 2, "remembered")

        // Checkins erased "home"; routines' part forgets it.
        source.roles.withLock { $0["home"] = nil }
        cache.forget(nests: ["home"])
        #expect(try await cache.role(nestID: "home", userID: "olivia") == .none, "asked anew: the nest is gone")
        #expect(try await cache.role(nestID: "cabin", userID: "olivia") == .owner)
        #expect(source.asked.load(ordering: .relaxed) == 3, "cabin still remembered")
    }

    @Test(
        "an answer about a forgotten nest is not kept for the cache's lifetime after it: one asked before the erasure cannot outlive it"
    )
    func answersNotKeptAfterForget() async throws {
        let source = Source()
        source.roles.withLock { $0 = ["home": .owner] }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let cache = CachedNestRoles(source: source, clock: clock, lifetime: .seconds(30))
        cache.forget(nests: ["home"])
        // A lookup begun before the erasure that answers after it (checkins still said OWNER).
        _ = try await cache.role(nestID: "home", userID: "olivia")
        _ = try await cache.role(nestID: "home", userID: "olivia")
        #expect(source.asked.load(ordering: .relaxed) == 2, "not remembered")
        clock.advance(by: 30)
        _ = try await cache.role(nestID: "home", userID: "olivia")
        _ = try await cache.role(nestID: "home", userID: "olivia")
        #expect(source.asked.load(ordering: .relaxed) == 3, "remembered again once the window is over")
    }
}
