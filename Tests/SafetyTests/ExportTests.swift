import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Safety's part of an account export (ExportUser), through the service with a real SMTP server:
/// what it answers is what GetProfile, ListContacts and GetStatus answer, with the check-ins kept
/// and every message of the switch, earlier periods' too.
@Suite("Safety's part of an export", .timeLimit(.minutes(2)), .serialized)
struct ExportTests {
    let hour: TimeInterval = 3600

    @Test(
        "the export holds the profile, contacts and status as their calls answer them, the check-ins oldest first with their sources, and every message of every period; never another user's"
    )
    func exportHoldsWhatTheCallsAnswer() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            try await system.profile(contacts: [], countActivity: true)
            // Another user, with a confirmed contact and a check-in of their own.
            try await system.profile("wen", name: "Wen Li", contacts: ["w@example.com"])
            try await system.addConfirmedContact("a@example.com", name: "Ann")
            system.clock.set(t0 + 60)
            try await system.inviteContact("b@example.com", name: "Bo")

            // From the app; forwarded by tasks; from the app with a zone and a device; a retry
            // 2 s later, kept without counting.
            system.clock.set(t0 + self.hour)
            try await system.checkIn(id: "c1")
            try await system.checkIn("wen", id: "w1")
            system.clock.set(t0 + 2 * self.hour)
            #expect(try await system.forwardTaskAnswer("e1", at: t0 + 2 * self.hour))
            system.clock.set(t0 + 3 * self.hour)
            _ = try await system.service.recordHeartbeat(
                .with {
                    $0.clientRequestID = "c3"
                    $0.timeZone = "Europe/Paris"
                    $0.deviceInfo = "tablet"
                },
                callContext("mei")
            )
            system.clock.set(t0 + 3 * self.hour + 2)
            try await system.checkIn(id: "c4")

            // The deadline passes: the period's messages include the alarm to Ann.
            try await system.advance(to: t0 + 27 * self.hour)
            try await eventually("the alarm to Ann") { try system.emails().contains { $0.to == "a@example.com" } }
            try await system.settle()

            let export = try await system.exportUser()
            #expect(export.hasProfile && export.hasStatus)
            #expect(try await export.profile == system.service.getProfile(.init(), callContext("mei")))
            #expect(export.profile.name == "Mei Chen" && export.profile.timeZone == "Europe/Paris")
            #expect(try await export.contacts == system.contacts())
            #expect(export.contacts.map(\.email) == ["a@example.com", "b@example.com"])
            #expect(export.contacts.map(\.name) == ["Ann", "Bo"])
            #expect(export.contacts.map(\.state) == [.confirmed, .invited])
            #expect(try await export.status == system.status(), "at the same clock time")
            #expect(export.status.state == .expired)
            #expect(export.status.emails.map(\.email) == ["a@example.com"], "the address opened")
            let checkIns = export.checkIns
            #expect(
                checkIns.map(\.at.date) == [
                    t0 + self.hour, t0 + 2 * self.hour, t0 + 3 * self.hour, t0 + 3 * self.hour + 2,
                ]
            )
            #expect(checkIns.map(\.source) == ["app", "tasks", "app", "app"])
            let (pacific, paris) = ("America/Los_Angeles", "Europe/Paris")
            #expect(checkIns.map(\.timeZone) == [pacific, pacific, paris, paris])
            #expect(checkIns.map(\.deviceInfo) == ["test phone", "", "tablet", "test phone"])
            #expect(checkIns.map(\.counted) == [true, true, true, false])

            // Wen's export holds only Wen's, and Mei's nothing of Wen's.
            let wen = try await system.exportUser("wen")
            #expect(wen.profile.userID == "wen" && wen.profile.name == "Wen Li")
            #expect(try await wen.profile == system.service.getProfile(.init(), callContext("wen")))
            #expect(wen.contacts.map(\.email) == ["w@example.com"])
            #expect(try await wen.contacts == system.contacts("wen"))
            #expect(try await wen.status == system.status("wen"))
            #expect(wen.status.emails.map(\.email) == ["w@example.com"])
            #expect(wen.checkIns.map(\.at.date) == [t0 + self.hour])
            #expect(wen.checkIns.map(\.source) == ["app"])
            #expect(!export.contacts.contains { $0.email == "w@example.com" })
            #expect(!export.status.emails.contains { $0.email == "w@example.com" })
            #expect(export.messages.contains { $0.kind == .alarm }, "the alarm of this period")

            // Mei checks in: a new period, whose status shows only the all-clear to Ann. The alarm
            // of the period before is in the export still, with every other message of hers.
            system.clock.set(t0 + 28 * self.hour)
            try await system.checkIn(id: "c5")
            try await system.settle()
            try await eventually("the all-clear to Ann") {
                try system.emails().filter { $0.to == "a@example.com" }.count == 2
            }
            try await system.settle()
            let later = try await system.exportUser()
            #expect(try await later.status == system.status())
            #expect(later.status.emails.map(\.kind) == ["ALL_CLEAR"], "the alarm was the period before's")
            let ann = try #require(later.contacts.first { $0.email == "a@example.com" }).id
            let bo = try #require(later.contacts.first { $0.email == "b@example.com" }).id
            let alarms = later.messages.filter { $0.kind == .alarm }
            #expect(alarms.map(\.contactID) == [ann])
            #expect(alarms.map(\.channel) == [.email])
            #expect(alarms.map(\.state) == [.sent])
            #expect(alarms.map(\.attempts) == [1])
            #expect(alarms.allSatisfy { $0.hasSentAt && $0.sentAt.date >= t0 + 27 * self.hour })
            #expect(
                alarms.allSatisfy { (t0 + 27 * self.hour..<t0 + 28 * self.hour).contains($0.createdAt.date) },
                "decided when the deadline passed, in the period before"
            )
            #expect(
                alarms.allSatisfy { $0.address.isEmpty && $0.subject.isEmpty && $0.body.isEmpty },
                "a message forgets its address and words once sent"
            )
            let clears = later.messages.filter { $0.kind == .allClear }
            #expect(clears.map(\.contactID) == [ann] && clears.map(\.state) == [.sent])
            #expect(clears.allSatisfy { $0.createdAt.date == t0 + 28 * self.hour })
            let invitations = later.messages.filter { $0.kind == .invitation }
            #expect(invitations.map(\.contactID) == [ann, bo] && invitations.allSatisfy { $0.channel == .email })
            #expect(
                later.messages.contains { $0.kind == .contactConfirmed && $0.contactID == ann && $0.channel == .push },
                "the news that Ann agreed, about her"
            )
            let warnings = later.messages.filter { $0.kind == .warning }
            #expect(warnings.allSatisfy { [180, 60, 10].contains($0.minutesBefore) && $0.channel == .push })
            let times = later.messages.map(\.createdAt.date)
            #expect(times == times.sorted(), "by when each was decided")
            #expect(
                Set(later.messages.map(\.id)).isSuperset(of: export.messages.map(\.id)),
                "nothing of the period before is gone"
            )
            #expect(!wen.messages.isEmpty && Set(wen.messages.map(\.id)).isDisjoint(with: later.messages.map(\.id)))

            // A message not sent yet (the senders stopped): its address and words as the row
            // holds them, opened with the store's keys, never the sealed bytes.
            try await system.whileStopped { service in
                system.clock.set(t0 + 28 * self.hour + 60)
                _ = try await service.sendTest(.with { $0.channel = .email }, callContext("mei"))
                let stopped = try await service.exportUser(Hearth_Safety_V1_ExportUserRequest(), callContext("mei"))
                let tests = stopped.messages.filter { $0.kind == .test }
                #expect(tests.map(\.state) == [.pending])
                #expect(tests.map(\.channel) == [.email] && tests.map(\.contactID) == [""])
                #expect(tests.map(\.address) == ["mei@example.com"], "opened")
                #expect(tests.allSatisfy { !$0.subject.isEmpty && !$0.body.isEmpty && $0.hasNextAttemptAt })
                #expect(stopped.messages.last?.kind == .test, "the latest decided")
            }
        }
    }

    @Test(
        "a user without a profile gets an export with no profile and nothing else, also once they deleted it",
        arguments: StoreKind.allCases
    )
    func noProfile(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            let nobody = try await system.exportUser("nobody")
            #expect(!nobody.hasProfile && !nobody.hasStatus)
            #expect(nobody.contacts.isEmpty && nobody.checkIns.isEmpty && nobody.messages.isEmpty)
            #expect(nobody == Hearth_Safety_V1_UserExport())

            // Another user's data does not make it any less empty.
            try await system.profile()
            system.clock.advance(by: self.hour)
            try await system.checkIn()
            #expect(try await system.exportUser("nobody") == Hearth_Safety_V1_UserExport())
            #expect(try await system.exportUser().checkIns.count == 1)
            #expect(try await system.exportUser().messages.contains { $0.kind == .invitation })

            _ = try await system.service.deleteAccount(.init(), callContext("mei"))
            #expect(try await system.exportUser() == Hearth_Safety_V1_UserExport())
        }
    }
}

// MARK: Helpers

extension SafetySystem {
    /// `user`'s export as ExportUser answers it.
    func exportUser(_ user: String = "mei") async throws -> Hearth_Safety_V1_UserExport {
        try await self.service.exportUser(Hearth_Safety_V1_ExportUserRequest(), callContext(user))
    }
}
