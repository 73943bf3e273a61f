import Foundation
import HearthTestSupport
import Testing

@testable import SafetyService

/// The switch's process killed with SIGKILL at random moments while it sends: a real process
/// (`hearth-safety-probe`), a real SQLite file, a real SMTP server.
@Suite("Safety under kill -9", .timeLimit(.minutes(3)))
struct SafetyKillTests {
    static let users = 60
    static let kills = 6

    @Test("killed at random moments while sending alerts: none is lost; only a message in flight can repeat")
    func killDuringSend() async throws {
        let sink = try await SMTPSink()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-safety-kill-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("safety.sqlite").path
        let probe = try builtProduct(named: "hearth-safety-probe")
        let seeded = try await runProcess(probe, ["seed", path, "\(Self.users)"])
        try #require(seeded.status == 0, "\(seeded.stderr)")

        func start() throws -> ChildProcess {
            try ChildProcess(probe, ["run", path, "\(sink.port)"])
        }
        for _ in 0..<Self.kills {
            let process = try start()
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...400)))
            process.send(SIGKILL)
            try await eventually("the probe is gone") { !process.isRunning }
        }
        let last = try start()
        try await eventually("every alert arrived", within: .seconds(60)) {
            Set(try sink.messages().map { $0["message_id"] as? String ?? "" }).count >= Self.users
        }
        last.send(SIGKILL)

        let messages = try sink.messages()
        let ids = messages.map { $0["message_id"] as? String ?? "" }
        #expect(Set(ids).count == Self.users, "one alert per contact, none lost")
        let recipients = Set(messages.flatMap { $0["rcpt_tos"] as? [String] ?? [] })
        #expect(recipients == Set((0..<Self.users).map { "contact\($0)@example.com" }))
        // A kill after the server accepted a message but before it was marked sent resends it
        // on restart, with the same Message-ID; at most the messages in flight at each kill
        // (the email sender claims and sends up to `sendersAtOnce` at a time).
        let inFlight = min(Self.users, AlertSender.sendersAtOnce)
        #expect(ids.count - Set(ids).count <= Self.kills * inFlight, "\(ids.count - Set(ids).count) repeats")
    }
}
