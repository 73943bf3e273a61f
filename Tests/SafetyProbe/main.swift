// A child process for the kill -9 test of the safety switch (Tests/SafetyTests).
//
//   hearth-safety-probe seed PATH COUNT    COUNT armed users whose deadline passed an hour ago
//   hearth-safety-probe run PATH SMTP_PORT  the switch's schedulers, sending to that SMTP server
//   hearth-safety-probe bulk PATH COUNT LEAD WINDOW   for the alert benchmark: COUNT armed
//       users (their warnings already sent) whose deadlines fall evenly between LEAD and
//       LEAD + WINDOW seconds from now, written straight into the tables in large batches
//
// `seed` goes through the service's real RPC methods (an in-process server on a free port),
// on a clock set 25 hours back. `run` is what `hearth serve safety` runs beside its server:
// on start it decides what fell due while it was down and sends it. The test kills it at
// random moments and starts it again.
import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import Logging
import NIOCore
import SafetyService
import SwiftProtobuf
import Synchronization

MemoryTuning.apply()  // as every `hearth` process does
let arguments = CommandLine.arguments
guard arguments.count >= 4, let number = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: hearth-safety-probe seed PATH COUNT | run PATH SMTP_PORT\n".utf8))
    exit(2)
}
let path = arguments[2]
// The data keys of the file: beside it, made by the first mode run on it.
let keyFile = URL(fileURLWithPath: path + ".key")
if !FileManager.default.fileExists(atPath: keyFile.path) {
    try DataKeyRing.generate().text.write(to: keyFile, atomically: true, encoding: .utf8)
}
let keys = try DataKeys(file: keyFile)
var logger = Logger(label: "safety-probe")
logger.logLevel = .error

switch arguments[1] {
case "seed":
    // Contacts agree as they would: the service's senders run, the invitations land in `mail`,
    // and each is confirmed from its link through the service's RPC.
    let clock = ManualClock(Date().addingTimeInterval(-25 * 3600))
    let mail = CapturedMail()
    let channels = AlertChannels(
        mail: mail,
        from: MailAddress("alerts@hearth.example"),
        push: LogPushSender(logger: logger)
    )
    let service = try SafetyService(
        location: .file(path),
        keys: keys,
        channels: channels,
        clock: clock,
        logger: logger
    )
    let server = RPCServer(configuration: ServerConfiguration(), services: [service], logger: logger)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        let senders = Task { try await service.schedulers.runAll() }
        let port = try await server.localAddress.port!
        let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
        let safety = Hearth_Safety_V1_Safety.Client(client)
        for index in 0..<number {
            let options = CallOptions(timeout: .seconds(10), metadata: [TrustedMetadata.user: "user-\(index)"])
            var profile = Hearth_Safety_V1_UpsertProfileRequest()
            profile.name = "User \(index)"
            profile.email = "user\(index)@example.com"
            profile.thresholdHours = 24
            profile.preferredLanguage = "en"
            profile.timeZone = "UTC"
            _ = try await safety.upsertProfile(profile, options: options)
            var contact = Hearth_Safety_V1_AddContactRequest()
            contact.email = "contact\(index)@example.com"
            _ = try await safety.addContact(contact, options: options)
        }
        var confirmed = 0
        let deadline = Date().addingTimeInterval(60)
        while confirmed < number {
            guard Date() < deadline else { throw CapturedMail.Missing(count: number - confirmed) }
            let tokens = mail.takeConfirmTokens()
            if tokens.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            for token in tokens {
                _ = try await safety.answerContactLink(
                    .with {
                        $0.token = token
                        $0.action = .confirm
                    },
                    options: CallOptions(timeout: .seconds(10))
                )
                confirmed += 1
            }
        }
        senders.cancel()
        _ = try? await senders.value
        await client.close()
        server.beginShutdown()
        try await group.waitForAll()
    }
    print("seeded \(number)")
case "run":
    let channels = AlertChannels(
        mail: SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: number, security: .none)),
        from: MailAddress("alerts@hearth.example"),
        push: LogPushSender(logger: logger)
    )
    let service = try SafetyService(location: .file(path), keys: keys, channels: channels, logger: logger)
    print("running")
    try await service.schedulers.runAll()
case "bulk":
    guard arguments.count == 6, let lead = Double(arguments[4]), let window = Double(arguments[5]) else {
        FileHandle.standardError.write(Data("usage: hearth-safety-probe bulk PATH COUNT LEAD WINDOW\n".utf8))
        exit(2)
    }
    // Creates the file with the service's own migrations, then fills the tables directly.
    let channels = AlertChannels(
        mail: LogMailTransport(logger: logger),
        from: MailAddress("alerts@hearth.example"),
        push: LogPushSender(logger: logger)
    )
    _ = try SafetyService(location: .file(path), keys: keys, channels: channels, logger: logger)
    // The tables filled directly, past the store (which opens only with the service's migrator).
    let database = try DatabaseQueue(path: path)
    let now = Date()
    let batch = 20_000
    for first in stride(from: 0, to: number, by: batch) {
        try database.write { db in
            let profile = try db.makeStatement(
                sql: """
                    INSERT INTO profile (user_id, name, email, threshold_hours, language, time_zone, reminder_enabled,
                      reminder_hour, reminder_minute, push_token, count_activity, period_start, last_check_in_at,
                      snoozes, paused_until, epoch, check_in_epoch, next_due_at, created_at, updated_at)
                    VALUES (?, ?, ?, 24, 'en', 'UTC', 0, 9, 0, 'token', 0, ?, ?, 0, NULL, 1, 1, ?, ?, ?)
                    """
            )
            let contact = try db.makeStatement(
                sql: """
                    INSERT INTO contact (id, user_id, email, email_key, name, created_at, state, invitations_sent,
                      answered_at)
                    VALUES (?, ?, ?, ?, ?, ?, 'confirmed', 1, ?)
                    """
            )
            let warning = try db.makeStatement(
                sql: """
                    INSERT INTO alert (id, user_id, epoch, kind, channel, contact_id, address, subject, body, state,
                      attempts, last_error, next_attempt_at, sent_at, created_at)
                    VALUES (?, ?, 1, ?, 'push', '', x'', x'', x'', 'sent', 1, '', NULL, ?, ?)
                    """
            )
            for index in first..<min(first + batch, number) {
                let user = "user-\(index)"
                let deadline = now.addingTimeInterval(lead + window * Double(index) / Double(max(number, 1)))
                let start = deadline.addingTimeInterval(-24 * 3600)
                try profile.execute(arguments: [
                    user, keys.seal("User \(index)", .profileName, row: user),
                    keys.seal("\(user)@example.com", .profileEmail, row: user), start, start, deadline, start, start,
                ])
                let email = "contact\(index)@example.com"
                let id = "c-\(index)"
                try contact.execute(arguments: [
                    id, user, keys.seal(email, .contactEmail, row: id), keys.addressKey(email),
                    keys.seal("", .contactName, row: id), start, start,
                ])
                for minutes in [180, 60, 10] {
                    try warning.execute(arguments: ["w\(minutes)-\(index)", user, "warning_\(minutes)", start, start])
                }
            }
        }
    }
    print("bulk \(number)")
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
    exit(2)
}

/// Keeps the emails sent, for the Confirm links of invitations.
final class CapturedMail: MailTransport {
    struct Missing: Error {
        var count: Int
    }

    private let tokens = Mutex<[String]>([])

    func send(_ message: MailMessage) async throws {
        guard let start = message.body.range(of: "/contact/confirm?t=")?.upperBound else { return }
        let token = String(message.body[start...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        self.tokens.withLock { $0.append(token) }
    }

    /// The tokens of the invitations received since the last call.
    func takeConfirmTokens() -> [String] {
        self.tokens.withLock { tokens in
            defer { tokens = [] }
            return tokens
        }
    }
}
