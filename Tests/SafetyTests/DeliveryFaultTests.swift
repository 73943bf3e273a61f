import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthScheduler
import HearthTestSupport
import Synchronization
import Testing

@testable import SafetyService

/// Deliveries that go wrong on the way out: a mail server that never answers, an outcome that
/// cannot be written.
@Suite("Safety switch: delivery faults", .timeLimit(.minutes(2)), .serialized)
struct DeliveryFaultTests {
    let hour: TimeInterval = 3600

    @Test("an SMTP server that never answers holds back neither later decisions nor pushes")
    func silentMailServer() async throws {
        let silent = try await SilentListener()
        try await withSafetySystem(smtpPort: silent.port) { system in
            let t0 = system.clock.now()
            try await system.profile("mei", confirmedByEmail: false)
            try await system.settle()
            system.clock.set(t0 + 2 * hour)
            try await system.profile("kai", confirmedByEmail: false)
            for warning in [21 * hour, 23 * hour, 24 * hour - 600] {
                try await system.advance(to: t0 + warning)
            }
            try await eventually("mei's three warnings and kai's first") { try system.pushes().count == 4 }

            // Mei's deadline: her alert email goes to a server that accepted the connection and
            // says nothing (the client waits up to 30 s for each reply).
            system.clock.set(t0 + 24 * hour)
            system.service.decider.wake()
            try await eventually("the alert is under way") {
                try await system.status("mei").emails.map(\.attempts) == [1]
            }
            #expect(try await system.status("mei").state == .expired)
            // An hour later, kai's 1 h warning goes out while that email still waits.
            system.clock.set(t0 + 25 * hour)
            system.service.decider.wake()
            try await eventually("kai's 1 h warning") { try system.pushes().count == 5 }
            let stuck = try await system.status("mei").emails
            #expect(stuck.map(\.state) == [.pending] && stuck.map(\.attempts) == [1], "still under way")

            // The server goes away before it greeted: a failure that surely delivered nothing.
            await silent.close()
            try await eventually("the failure is recorded") {
                try await system.status("mei").emails.first?.lastError.contains("closed the connection") == true
            }
            try await system.checkIn("mei")
            #expect(try await system.status("mei").emails.isEmpty, "no all-clear for an alert that never went out")
        }
    }

    @Test("a send that hangs holds back no other email: an alert that falls due meanwhile goes out")
    func hangingSendHoldsNothingBack() async throws {
        let hanging = try await SMTPSink(arguments: ["--hang-for", "slow@example.com"])
        try await withSafetySystem(smtpPort: hanging.port) { system in
            let t0 = system.clock.now()
            try await system.profile("mei", contacts: ["slow@example.com"], confirmedByEmail: false)
            try await system.settle()
            system.clock.set(t0 + hour)
            try await system.profile("kai", contacts: ["brother@example.com"], confirmedByEmail: false)
            try await system.settle()

            // Mei's deadline: the server keeps her alert's content and never answers it.
            system.clock.set(t0 + 24 * hour)
            system.service.decider.wake()
            try await eventually("mei's alert is with the server") { try hanging.messages().count == 1 }
            // Kai's deadline an hour later (past her claim's lease): his alert goes out while hers
            // still waits (the client waits 30 s for an answer), and hers is not sent again.
            system.clock.set(t0 + 25 * hour)
            system.service.decider.wake()
            try await eventually("kai's alert") { try hanging.messages().count == 2 }
            let kai = try hanging.messages().last?["rcpt_tos"] as? [String]
            #expect(kai == ["brother@example.com"])
            let mei = try await system.status("mei").emails
            #expect(mei.map(\.state) == [.pending] && mei.map(\.attempts) == [1], "still under way, past its lease")
            hanging.stop()
        }
    }

    @Test("a send that hangs holds back no alert that falls due within its lease")
    func hangingSendHoldsBackNoAlertWithinItsLease() async throws {
        let hanging = try await SMTPSink(arguments: ["--hang-for", "slow@example.com"])
        try await withSafetySystem(smtpPort: hanging.port) { system in
            let t0 = system.clock.now()
            try await system.profile("mei", contacts: ["slow@example.com"], confirmedByEmail: false)
            try await system.settle()
            system.clock.set(t0 + 60)
            try await system.profile("kai", contacts: ["brother@example.com"], confirmedByEmail: false)
            try await system.settle()

            system.clock.set(t0 + 24 * hour)
            system.service.decider.wake()
            try await eventually("mei's alert is with the server") { try hanging.messages().count == 1 }
            // Kai's deadline a minute later, well inside her claim's lease: his alert is not
            // counted against hers (hers is under way, not due), and goes out at once.
            system.clock.set(t0 + 24 * hour + 60)
            system.service.decider.wake()
            try await eventually("kai's alert") { try hanging.messages().count == 2 }
            #expect(try hanging.messages().last?["rcpt_tos"] as? [String] == ["brother@example.com"])
            hanging.stop()
        }
    }

    @Test("a delivery whose outcome cannot be written is not sent again; the outcome is written once it can be")
    func outcomeNotWritten() async throws {
        try await withSafetySystem { system in
            let t0 = system.clock.now()
            try await system.profile()
            try await system.settle()
            // The disk is full for outcomes: a trigger refuses to record any message as sent.
            let file = try DatabaseQueue(path: system.storePath)
            try await file.write { db in
                try db.execute(
                    sql: """
                        CREATE TRIGGER disk_full BEFORE UPDATE OF state ON alert WHEN NEW.state = 'sent'
                        BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                        """
                )
            }
            // What the process's health would hear of (the sender's passes fail while it holds one).
            let failures = Mutex<[String]>([])
            for scheduler in system.service.schedulers {
                scheduler.observeFailures { error in failures.withLock { $0.append("\(error)") } }
            }
            try await system.advance(to: t0 + 24 * hour)
            try await eventually("the alert email") { try system.emails().count == 1 }
            try await system.advance(to: t0 + 24 * hour + 60)
            try await system.advance(to: t0 + 24 * hour + AlertSender.lease + 60)
            #expect(try system.emails().count == 1, "not sent again, even after its lease")
            try await eventually("the sender's failing pass is heard of") {
                failures.withLock { $0.contains { $0.contains("database or disk is full") } }
            }
            let unrecorded = try await system.status().emails
            #expect(unrecorded.map(\.state) == [.pending] && unrecorded.map(\.attempts) == [1])

            // Room again: the outcome the sender kept is written.
            try await file.write { db in try db.execute(sql: "DROP TRIGGER disk_full") }
            try await system.advance(to: t0 + 24 * hour + AlertSender.lease + 120)
            let recorded = try await system.status().emails
            #expect(recorded.map(\.state) == [.sent] && recorded.map(\.attempts) == [1])
            try await system.advance(to: t0 + 48 * hour)
            #expect(try system.emails().count == 1)
        }
    }
}
