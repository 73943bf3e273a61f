import Foundation
import HearthTestSupport
import Testing

@testable import HearthMail

/// Debian's aiosmtpd (smtp_sink.py) in a child process: every message it accepts lands in a
/// folder as JSON, decoded by Python's email package.
final class SMTPSink {
    let port: Int
    let folder: URL
    private let process: Process
    /// The sink's standard input: it exits when this closes, even if the test process dies.
    private let lifeline = Pipe()

    init(arguments: [String] = []) throws {
        self.folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-smtp-\(UUID())")
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("smtp_sink.py")
        self.process = Process()
        self.process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        self.process.arguments = [script.path, self.folder.path] + arguments
        let output = Pipe()
        self.process.standardOutput = output
        // Not the test's own stderr: a child holding it open would keep `swift test` waiting.
        self.process.standardError = FileHandle.nullDevice
        self.process.standardInput = self.lifeline
        try self.process.run()
        // The first line is "PORT n" once it listens (or nothing, if it failed to start).
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            self.process.terminate()
            throw SMTPError(
                code: 0,
                message: "the SMTP sink did not start (scripts/bootstrap installs python3-aiosmtpd)"
            )
        }
        self.port = port
    }

    deinit {
        // Not waitUntilExit: it spins a run loop that a test's thread does not have.
        try? self.lifeline.fileHandleForWriting.close()
        self.process.terminate()
        try? FileManager.default.removeItem(at: self.folder)
    }

    /// The messages received so far, oldest first.
    func messages() throws -> [[String: Any]] {
        let files = try FileManager.default.contentsOfDirectory(atPath: self.folder.path)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        return try files.map { name in
            let data = try Data(contentsOf: self.folder.appendingPathComponent(name))
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
    }
}

@Suite("SMTP", .timeLimit(.minutes(1)))
struct SMTPTests {
    static func message(subject: String, body: String, id: String = UUID().uuidString) -> MailMessage {
        MailMessage(
            from: MailAddress("alerts@hearth.example", name: "Hearth 安全"),
            to: MailAddress("mei@example.com", name: "Mei"),
            subject: subject,
            body: body,
            date: Date(timeIntervalSince1970: 1_773_144_000),
            messageID: "\(id)@hearth.example"
        )
    }

    @Test("a message in Chinese arrives with its subject and body decoded, UTF-8, Date and Message-ID")
    func plainDelivery() async throws {
        let sink = try SMTPSink()
        let subject = "緊急：陳小明已超過 48 小時沒有報平安，請盡快聯絡他確認安全 (Hearth)"
        let body = "陳小明最後一次報平安是 2026年1月12日 晚上10:00 [太平洋標準時間]。\n.a line that starts with a dot\n請致電確認。"
        let client = SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .none))
        try await client.send(Self.message(subject: subject, body: body, id: "alert-1"))
        let messages = try sink.messages()
        try #require(messages.count == 1)
        let received = messages[0]
        #expect(received["subject"] as? String == subject)
        #expect((received["body"] as? String)?.trimmingCharacters(in: .newlines) == body)
        #expect(received["charset"] as? String == "utf-8")
        #expect(received["message_id"] as? String == "<alert-1@hearth.example>")
        #expect(received["date"] as? String == "Tue, 10 Mar 2026 12:00:00 +0000")
        #expect(received["rcpt_tos"] as? [String] == ["mei@example.com"])
        #expect(received["from"] as? String == "Hearth 安全 <alerts@hearth.example>")
        let raw = try #require(received["raw"] as? String)
        let ascii = raw.unicodeScalars.allSatisfy(\.isASCII)
        #expect(ascii, "headers are RFC 2047 encoded, the body base64")
        let longest = raw.components(separatedBy: "\r\n").map(\.count).max() ?? 0
        #expect(longest <= 78, "no line over 78 characters")
    }

    @Test("STARTTLS and AUTH PLAIN against a server that requires both; a wrong password is a permanent 535")
    func startTLSAndAuth() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-smtp-tls-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (certificate, key) = try selfSignedCertificate(in: folder)
        let sink = try SMTPSink(arguments: ["--tls", certificate, key, "--auth", "hearth:s3cret"])
        var configuration = SMTPConfiguration(
            host: "localhost",
            port: sink.port,
            security: .startTLS,
            username: "hearth",
            password: "s3cret",
            trustRootsFile: certificate
        )
        try await SMTPClient(configuration: configuration).send(Self.message(subject: "Test", body: "Hello"))
        let received = try #require(try sink.messages().first)
        #expect(received["tls"] as? Bool == true)
        #expect(received["authenticated"] as? Bool == true)

        configuration.password = "wrong"
        do {
            try await SMTPClient(configuration: configuration).send(Self.message(subject: "Test", body: "Hello"))
            Issue.record("sent with a wrong password")
        } catch let error as SMTPError {
            #expect(error.code == 535 && error.isPermanent, "\(error)")
        }
        // Without TLS this server refuses to go on: a plain client cannot send.
        configuration.security = .none
        configuration.password = "s3cret"
        await #expect(throws: SMTPError.self) {
            try await SMTPClient(configuration: configuration).send(Self.message(subject: "Test", body: "Hello"))
        }
        #expect(try sink.messages().count == 1)
    }

    @Test("STARTTLS required but not offered, or nobody listening: an error, nothing sent")
    func failures() async throws {
        let sink = try SMTPSink()
        let plain = SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .startTLS)
        await #expect(throws: SMTPError.self) {
            try await SMTPClient(configuration: plain).send(Self.message(subject: "x", body: "y"))
        }
        #expect(try sink.messages().isEmpty)
        let closedPort = try await withServer(services: []) { _, port in port }
        do {
            try await SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: closedPort, security: .none))
                .send(Self.message(subject: "x", body: "y"))
            Issue.record("sent to nobody")
        } catch let error as SMTPError {
            #expect(error.code == 0 && !error.isPermanent)
        }
    }

    @Test("encoded words: long subjects split under 76 characters without cutting a character; dots stuffed")
    func encoding() {
        let subject = String(repeating: "安全確認👩‍👩‍👧 ", count: 12)
        let encoded = EncodedWords.encode(subject)
        for word in encoded.split(separator: "\r\n ") {
            #expect(word.count <= 75)
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let payload = word.dropFirst(10).dropLast(2)
            #expect(Data(base64Encoded: String(payload)).flatMap { String(data: $0, encoding: .utf8) } != nil)
        }
        #expect(EncodedWords.encode("Plain subject") == "Plain subject")
        #expect(SMTPClient.dotStuffed("a\r\n.b\r\n..c") == "a\r\n..b\r\n...c")
        #expect(MailAddress("mei@example.com").isValid)
        for bad in ["mei", "mei@", "@example.com", "mei@example", "mei @example.com", "mei@exa>mple.com", "a@b@c.com"] {
            #expect(!MailAddress(bad).isValid, "\(bad)")
        }
    }
}
