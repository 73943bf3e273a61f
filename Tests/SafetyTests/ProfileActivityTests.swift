import Foundation
import HearthContracts
import HearthCore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

@Suite("An inactive profile: kept, nothing fires", .timeLimit(.minutes(1)))
struct ProfileActivityTests {
    let hour: TimeInterval = 3600

    @Test(
        "inactive: no warning, alarm or reminder, contacts kept; NOT_ARMED, INACTIVE; unset keeps it",
        arguments: StoreKind.allCases
    )
    func inactive(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24, reminder: (6, 0))
            #expect(try await system.service.getProfile(.init(), callContext("mei")).isActive)
            let t0 = system.clock.now()
            try await system.profile(threshold: 24, contacts: [], reminder: (6, 0), active: false)
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .inactive)
            #expect(!status.hasDeadline)
            // A later change that leaves is_active out keeps it off.
            try await system.profile(threshold: 48, contacts: [], reminder: (6, 0))
            #expect(try await !system.service.getProfile(.init(), callContext("mei")).isActive)
            for day in 1...4 { try await system.advance(to: t0 + Double(24 * day) * hour) }
            #expect(try system.pushes().isEmpty && system.emails().isEmpty, "nothing fires in four days")
            let contacts = try await system.service.listContacts(.init(), callContext("mei")).contacts
            #expect(contacts.map(\.email) == ["brother@example.com"] && contacts.first?.state == .confirmed)
        }
    }

    @Test(
        "made inactive in the warning window cancels what is pending; active again, a new period from then",
        arguments: StoreKind.allCases
    )
    func reactivated(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(threshold: 24)
            let t0 = system.clock.now()
            try await system.checkIn()
            try await system.advance(to: t0 + 21 * hour)
            try await eventually("the 3 h warning") { try system.pushes() == ["safety.warning_180"] }
            try await system.profile(threshold: 24, contacts: [], active: false)
            try await system.advance(to: t0 + 30 * hour)
            #expect(try system.pushes() == ["safety.warning_180"] && system.emails().isEmpty)

            let t1 = t0 + 40 * hour
            try await system.advance(to: t1)
            try await system.profile(threshold: 24, contacts: [], active: true)
            let status = try await system.status()
            #expect(status.state == .normal && status.deadline.date == t1 + 24 * hour)
            #expect(status.lastCheckInAt.date == t0, "the last check-in is what it was")
            try await system.advance(to: t1 + 21 * hour - 1)
            #expect(try system.pushes().count == 1, "no warning of the old period")
            try await system.advance(to: t1 + 21 * hour)
            try await eventually("the new period's 3 h warning") { try system.pushes().count == 2 }
            try await system.advance(to: t1 + 24 * hour)
            try await eventually("the alarm at the new deadline") { try system.emails().count == 1 }
        }
    }
}
