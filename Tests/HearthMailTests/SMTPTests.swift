import Foundation
import HearthCore
import HearthTestSupport
import NIOCore
import Testing

@testable import HearthMail

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

    /// The test server's arguments: offering PIPELINING (as mail relays do) or not.
    static func sinkArguments(pipelining: Bool) -> [String] {
        pipelining ? [] : ["--no-pipelining"]
    }

    @Test(
        "a message in Chinese arrives with its subject and body decoded, UTF-8, Date and Message-ID",
        arguments: [true, false]
    )
    func plainDelivery(pipelining: Bool) async throws {
        let sink = try await SMTPSink(arguments: Self.sinkArguments(pipelining: pipelining))
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
        let (certificate, key) = try await selfSignedCertificate(in: folder)
        let sink = try await SMTPSink(arguments: ["--tls", certificate, key, "--auth", "hearth:s3cret"])
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

    @Test("one client sends many messages over a kept session, several at a time", arguments: [true, false])
    func sessionReuse(pipelining: Bool) async throws {
        let sink = try await SMTPSink(arguments: Self.sinkArguments(pipelining: pipelining))
        let client = SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .none))
        for round in 0..<3 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await client.send(
                            Self.message(subject: "Round \(round)", body: "Message \(index)", id: "m-\(round)-\(index)")
                        )
                    }
                }
                try await group.waitForAll()
            }
        }
        client.close()
        let ids = Set(try sink.messages().map { $0["message_id"] as? String ?? "" })
        #expect(ids.count == 12)
    }

    @Test("STARTTLS required but not offered, or nobody listening: an error, nothing sent")
    func failures() async throws {
        let sink = try await SMTPSink()
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
            #expect(error.code == 0 && !error.isPermanent && !error.mayHaveDelivered)
        }
    }

    @Test("a failed send may have delivered only when the answer to its content never came", arguments: [true, false])
    func mayHaveDelivered(pipelining: Bool) async throws {
        let refusing = try await SMTPSink(arguments: ["--reject-rcpt"] + Self.sinkArguments(pipelining: pipelining))
        let refused = try #require(await Self.failure(sendingTo: refusing.port), "sent to a refused recipient")
        #expect(refused.code == 550 && refused.isPermanent && !refused.mayHaveDelivered, "\(refused)")
        #expect(try refusing.messages().isEmpty)

        let hangingUp = try await SMTPSink(
            arguments: ["--hang-up-after-data"] + Self.sinkArguments(pipelining: pipelining)
        )
        let lost = try #require(
            await Self.failure(sendingTo: hangingUp.port),
            "no answer to the content, yet the send succeeded"
        )
        #expect(lost.code == 0 && !lost.isPermanent && lost.mayHaveDelivered, "\(lost)")
        #expect(try hangingUp.messages().count == 1, "the server did take it")
    }

    @Test("the answer to a message's content is waited for as long as RFC 5321 says (10 min), not 30 s like the rest")
    func slowContentReply() async throws {
        // A content filter takes 8 s; every other reply may take 5 s here. (Margins of seconds
        // either way: a loaded machine may keep either side from a CPU for a while.)
        let filtering = try await SMTPSink(arguments: ["--content-reply-delay", "8"])
        var configuration = SMTPConfiguration(
            host: "127.0.0.1",
            port: filtering.port,
            security: .none,
            timeout: .seconds(5)
        )
        #expect(configuration.contentReplyTimeout == .minutes(10))
        #expect(await Self.failure(sendingTo: filtering.port, configuration: configuration) == nil)
        #expect(try filtering.messages().count == 1)
        // Waiting less gives up on a message that arrives all the same: sent twice.
        configuration.contentReplyTimeout = .seconds(1)
        let impatient = try #require(await Self.failure(sendingTo: filtering.port, configuration: configuration))
        #expect(impatient.mayHaveDelivered && impatient.message.contains("no reply within"), "\(impatient)")
        try await eventually("the server took it all the same") { try filtering.messages().count == 2 }
    }

    @Test("replies sent along with the STARTTLS reply, in the clear, are refused, not read as the first over TLS")
    func startTLSInjection() async throws {
        let server = try await ScriptedSMTPServer(replies: [
            "EHLO": "250-hearth.test\r\n250 STARTTLS\r\n",
            // Someone in between adds the answers to what the client will send over TLS.
            "STARTTLS": "220 go ahead\r\n250 injected EHLO\r\n250 injected MAIL\r\n",
        ])
        let configuration = SMTPConfiguration(host: "127.0.0.1", port: server.port, security: .startTLS)
        let refusal = try #require(await Self.failure(sendingTo: server.port, configuration: configuration))
        #expect(refusal.message.contains("sent more after its STARTTLS reply"), "\(refusal)")
        #expect(!refusal.mayHaveDelivered)
        try await server.close()
    }

    @Test("offered PIPELINING, the envelope goes out together; not offered, one command at a time")
    func pipelining() async throws {
        let envelope = ["MAIL": "250 ok\r\n", "RCPT": "250 ok\r\n", "DATA": "354 go on\r\n"]
        // This one answers MAIL and RCPT only once DATA came: a client waiting for each reply
        // would wait out its timeout.
        let pipelined = try await ScriptedSMTPServer(
            replies: envelope.merging(["EHLO": "250-scripted\r\n250-8BITMIME\r\n250 PIPELINING\r\n"]) { $1 },
            holding: ["MAIL", "RCPT"]
        )
        let quick = { (port: Int) in
            SMTPConfiguration(host: "127.0.0.1", port: port, security: .none, timeout: .seconds(3))
        }
        let client = SMTPClient(configuration: quick(pipelined.port))
        for index in 0..<3 {
            try await client.send(Self.message(subject: "x", body: "y", id: "p-\(index)"))
        }
        client.close()
        try await pipelined.close()
        // This one offers no PIPELINING and refuses commands sent before their turn.
        let strict = try await ScriptedSMTPServer(
            replies: envelope.merging(["EHLO": "250-scripted\r\n250 8BITMIME\r\n"]) { $1 },
            oneAtATime: true
        )
        #expect(await Self.failure(sendingTo: strict.port, configuration: quick(strict.port)) == nil)
        try await strict.close()
        // A refused sender is the error, not the refusals that follow from it.
        let refusingSender = try await ScriptedSMTPServer(
            replies: [
                "EHLO": "250-scripted\r\n250 PIPELINING\r\n", "MAIL": "553 5.1.8 sender refused\r\n",
                "RCPT": "503 5.5.1 need MAIL first\r\n", "DATA": "503 5.5.1 need RCPT first\r\n",
            ]
        )
        let refused = try #require(
            await Self.failure(sendingTo: refusingSender.port, configuration: quick(refusingSender.port))
        )
        #expect(refused.code == 553 && refused.message.contains("after MAIL FROM") && !refused.mayHaveDelivered)
        #expect(!refused.refusedRecipient)
        try await refusingSender.close()
        // A server that refuses a pipelined recipient and hangs up: the refusal is the answer
        // (an unknown mailbox, for good), not the close.
        let refusingAndClosing = try await ScriptedSMTPServer(
            replies: envelope.merging([
                "EHLO": "250-scripted\r\n250 PIPELINING\r\n",
                "RCPT": "550 5.1.1 <mei@example.com>: Recipient address rejected: User unknown\r\n",
            ]) { $1 },
            closingAfter: ["RCPT"]
        )
        let unknown = try #require(
            await Self.failure(sendingTo: refusingAndClosing.port, configuration: quick(refusingAndClosing.port))
        )
        #expect(unknown.code == 550 && unknown.isPermanent && unknown.refusedRecipient, "\(unknown)")
        #expect(!unknown.mayHaveDelivered)
        try await refusingAndClosing.close()
    }

    /// How one send to the server on `port` (plain, unless `configuration` says otherwise)
    /// failed; nil if it succeeded.
    private static func failure(sendingTo port: Int, configuration: SMTPConfiguration? = nil) async -> SMTPError? {
        do {
            try await SMTPClient(
                configuration: configuration ?? SMTPConfiguration(host: "127.0.0.1", port: port, security: .none)
            )
            .send(Self.message(subject: "x", body: "y"))
            return nil
        } catch {
            return error as? SMTPError
        }
    }

    @Test("the Date field by hand is what the formatter writes, for any second of years 1 to 9999")
    func dateField() {
        let formatted = { (date: Date) in
            DateFormats.string(date, pattern: "EEE, dd MMM yyyy HH:mm:ss Z", locale: "en_US_POSIX", zone: .gmt)
        }
        var generator = SplitMix64(seed: 20_261_129)
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1), Date(timeIntervalSince1970: 1_773_144_000),
            Date(timeIntervalSince1970: 1_773_143_999.999), Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29
            Date(timeIntervalSince1970: 253_402_300_799), Date(timeIntervalSince1970: -62_135_596_800),
            Date(timeIntervalSince1970: -12_219_292_800),  // 1582-10-15
        ]
        for _ in 0..<2_000 {
            let seconds = Double(generator.next() % 315_537_897_600) - 62_135_596_800
            dates.append(Date(timeIntervalSince1970: seconds + Double(generator.next() % 1000) / 1000))
        }
        for date in dates where date.timeIntervalSince1970 >= -12_219_292_800 {
            #expect(MailMessage.rfc5322Date(date) == formatted(date), "\(date.timeIntervalSince1970)")
        }
        #expect(
            MailMessage.rfc5322Date(Date(timeIntervalSince1970: 1_773_144_000)) == "Tue, 10 Mar 2026 12:00:00 +0000"
        )
        #expect(MailMessage.rfc5322Date(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 +0000")
        // Before the Gregorian calendar the formatter counts Julian days: by hand, proleptic
        // Gregorian, as RFC 5322 means (the two agree from 1582-10-15 on).
        #expect(
            MailMessage.rfc5322Date(Date(timeIntervalSince1970: -62_135_596_800)) == "Mon, 01 Jan 0001 00:00:00 +0000"
        )
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
        #expect(SMTPClient.dotStuffed(".first\r\n.\r\n") == "..first\r\n..\r\n")
        #expect(SMTPClient.dotStuffed("a\n.b\r.c") == "a\n.b\r.c", "a lone LF or CR ends no line")
        #expect(SMTPClient.dotStuffed("報平安\r\n.點") == "報平安\r\n..點")
        #expect(SMTPClient.dotStuffed("") == "")
        #expect(SMTPClient.dotStuffed("a.b\r\nc.\r\n\n.d") == "a.b\r\nc.\r\n\n.d", "no line begins with a dot")
        #expect(MailAddress("mei@example.com").isValid)
        let controls = [
            "mei@example.com\nX", "mei\r@example.com", "mei@example.com\r\nRCPT TO:<x@y.z>", "m\tei@example.com",
            "mei@exam\u{7F}ple.com", "mei\u{0}@example.com",
        ]
        for bad in [
            "mei", "mei@", "@example.com", "mei@example", "mei @example.com", "mei@exa>mple.com", "a@b@c.com",
            "méi@example.com",
        ] + controls {
            #expect(!MailAddress(bad).isValid, "\(bad)")
        }
    }
}
