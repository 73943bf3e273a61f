import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Where and how to send email.
public struct SMTPConfiguration: Sendable {
    public enum Security: String, Sendable, CaseIterable {
        /// Plain SMTP (a local relay).
        case none
        /// Upgrade with STARTTLS; refuse to send if the server does not offer it.
        case startTLS = "starttls"
    }

    public var host: String
    public var port: Int
    public var security: Security
    /// Log in (AUTH PLAIN) when given; only over TLS unless `security` is `.none`.
    public var username: String?
    public var password: String?
    /// Trust these roots (PEM file) instead of the system's, e.g. for a self-signed relay.
    public var trustRootsFile: String?
    /// The name this client gives in EHLO.
    public var heloName: String
    /// How long any one reply may take, but the one to a message's content.
    public var timeout: TimeAmount
    /// How long the reply to a message's content may take (RFC 5321 4.5.3.2.6 gives the
    /// server 10 minutes: content filters run then). A message whose reply never came may
    /// have arrived, and is sent again: waiting less sends duplicates.
    public var contentReplyTimeout: TimeAmount

    public init(
        host: String,
        port: Int,
        security: Security = .startTLS,
        username: String? = nil,
        password: String? = nil,
        trustRootsFile: String? = nil,
        heloName: String = "hearth.local",
        timeout: TimeAmount = .seconds(30),
        contentReplyTimeout: TimeAmount = .minutes(10)
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
        self.trustRootsFile = trustRootsFile
        self.heloName = heloName
        self.timeout = timeout
        self.contentReplyTimeout = contentReplyTimeout
    }
}

/// Sends messages over SMTP on SwiftNIO. A session (EHLO, STARTTLS, AUTH) is kept open after a
/// message and reused for the next ones (MAIL, RCPT, DATA again), up to `maxMessagesPerSession`;
/// `send` returns as soon as the server accepted its message.
public final class SMTPClient: Sendable {
    public let configuration: SMTPConfiguration
    private let group: any EventLoopGroup
    private let idle = Mutex<[SMTPSession]>([])
    /// Idle sessions kept open at most.
    static let maxIdleSessions = 64
    static let maxMessagesPerSession = 100
    /// A session idle longer than this is not reused (servers drop idle clients).
    static let maxIdleTime: TimeAmount = .seconds(20)

    public init(configuration: SMTPConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
    }

    /// Delivers `message` to the server; returns once the server accepted it (250 after DATA).
    /// - Throws: ``SMTPError``.
    public func send(_ message: MailMessage) async throws {
        while let session = self.takeIdle() {
            do {
                try await self.transact(session, message)
                self.release(session)
                return
            } catch let error as SMTPError where error.code == 0 && !session.dataSent {
                // The kept session had gone away before the message was sent: try a new one.
                session.close()
            } catch {
                session.close()
                throw error
            }
        }
        let session = try await self.open()
        do {
            try await self.transact(session, message)
            self.release(session)
        } catch {
            session.close()
            throw error
        }
    }

    /// Says goodbye to every idle session.
    public func close() {
        for session in self.idle.withLock({ sessions in
            defer { sessions = [] }
            return sessions
        }) {
            session.conversation.quit()
        }
    }

    private func takeIdle() -> SMTPSession? {
        let now = NIODeadline.now()
        while let session = self.idle.withLock({ $0.popLast() }) {
            if now - session.lastUsed < Self.maxIdleTime { return session }
            session.conversation.quit()
        }
        return nil
    }

    private func release(_ session: SMTPSession) {
        session.lastUsed = .now()
        session.dataSent = false
        let kept =
            session.messages < Self.maxMessagesPerSession
            && self.idle.withLock { sessions in
                guard sessions.count < Self.maxIdleSessions else { return false }
                sessions.append(session)
                return true
            }
        if !kept { session.conversation.quit() }
    }

    /// Connects and greets: EHLO, STARTTLS and EHLO again, AUTH.
    private func open() async throws -> SMTPSession {
        let replies = SMTPReplyReader()
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: self.group)
                .connectTimeout(self.configuration.timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(replies)
                    }
                }
                .connect(host: self.configuration.host, port: self.configuration.port)
                .get()
        } catch {
            throw SMTPError(
                code: 0,
                message: "cannot connect to \(self.configuration.host):\(self.configuration.port): \(error)"
            )
        }
        let smtp = SMTPConversation(channel: channel, replies: replies, timeout: self.configuration.timeout)
        var capabilities: [String] = []
        do {
            try await smtp.expect(220, after: nil)
            capabilities = try await smtp.expect(250, after: "EHLO \(self.configuration.heloName)").lines
            if self.configuration.security == .startTLS {
                guard capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) else {
                    throw SMTPError(code: 0, message: "the server does not offer STARTTLS")
                }
                try await smtp.expect(220, after: "STARTTLS")
                try await smtp.startTLS(
                    trustRootsFile: self.configuration.trustRootsFile,
                    host: self.configuration.host
                )
                // What the server offered in the clear counts no more.
                capabilities = try await smtp.expect(250, after: "EHLO \(self.configuration.heloName)").lines
            }
            if let username = self.configuration.username {
                let token = Data("\u{0}\(username)\u{0}\(self.configuration.password ?? "")".utf8).base64EncodedString()
                try await smtp.expect(235, after: "AUTH PLAIN \(token)", redacted: "AUTH PLAIN ***")
            }
        } catch {
            try? await channel.close()
            // Nothing was sent yet, whatever failed (a TLS setting, say).
            throw error as? SMTPError ?? SMTPError(code: 0, message: "\(error)")
        }
        let pipelining = capabilities.contains { $0.uppercased() == "PIPELINING" }
        return SMTPSession(conversation: smtp, pipelining: pipelining)
    }

    /// One message on an open session. With a server that offers PIPELINING (RFC 2920), MAIL,
    /// RCPT and DATA go out together and their replies are read together: two round trips a
    /// message instead of four.
    private func transact(_ session: SMTPSession, _ message: MailMessage) async throws {
        let smtp = session.conversation
        let envelope = ["MAIL FROM:<\(message.from.address)>", "RCPT TO:<\(message.to.address)>", "DATA"]
        let codes: [Set<Int>] = [[250], [250, 251], [354]]
        if session.pipelining {
            var replies: [SMTPReply]
            var cut: SMTPError?
            do {
                replies = try await smtp.exchange(envelope)
            } catch let interrupted as SMTPRepliesCut {
                (replies, cut) = (interrupted.received, interrupted.error)
            }
            // In order: a refused sender explains the refusals after it, and a refusal the close
            // after it.
            for (index, reply) in replies.enumerated() {
                try Self.check(reply, expecting: codes[index], after: envelope[index])
            }
            if let cut { throw cut }
        } else {
            for (command, expected) in zip(envelope, codes) {
                try Self.check(try await smtp.exchange([command])[0], expecting: expected, after: command)
            }
        }
        session.dataSent = true
        do {
            try await smtp.expect(
                [250],
                after: Self.dotStuffed(message.rendered) + ".",
                redacted: "the message's content",
                timeout: self.configuration.contentReplyTimeout
            )
        } catch var error as SMTPError where error.code == 0 {
            error.mayHaveDelivered = true
            throw error
        }
        session.messages += 1
    }

    /// Throws what `reply` to an envelope's `command` refused; a refused recipient says whether
    /// its mailbox is unknown.
    private static func check(_ reply: SMTPReply, expecting codes: Set<Int>, after command: String) throws {
        do {
            try SMTPConversation.check(reply, expecting: codes, after: command, redacted: nil)
        } catch var error as SMTPError where command.hasPrefix("RCPT") {
            error.refusedRecipient = SMTPError.isUnknownMailbox(code: error.code, message: error.message)
            throw error
        }
    }

    /// A line that begins with a dot gets another, so that the server does not read it as the end.
    /// Walks the UTF-8 bytes (splitting the String by lines was 6% of the alert sender's CPU), and
    /// answers the text itself when no line begins with a dot: a rendered message's body is
    /// base64, which has none (copying it byte by byte was 1.4%).
    static func dotStuffed(_ text: String) -> String {
        let dot = UInt8(ascii: ".")
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        // Whether a line begins with a dot, then the text again, stuffed.
        var atLineStart = true
        var previous: UInt8 = 0
        var stuffs = false
        for byte in text.utf8 {
            if atLineStart && byte == dot {
                stuffs = true
                break
            }
            atLineStart = previous == cr && byte == lf
            previous = byte
        }
        guard stuffs else { return text }
        var stuffed: [UInt8] = []
        stuffed.reserveCapacity(text.utf8.count + 8)
        (atLineStart, previous) = (true, 0)
        for byte in text.utf8 {
            if atLineStart && byte == dot { stuffed.append(dot) }
            stuffed.append(byte)
            atLineStart = previous == cr && byte == lf
            previous = byte
        }
        return String(decoding: stuffed, as: UTF8.self)
    }
}

/// An open, greeted connection; used by one message at a time.
private final class SMTPSession: @unchecked Sendable {
    let conversation: SMTPConversation
    var messages = 0
    var lastUsed = NIODeadline.now()
    /// Whether the current message's content went out (after that, a lost connection may
    /// still have delivered it: never retried).
    var dataSent = false

    /// Whether the server offered PIPELINING (after STARTTLS, over TLS).
    let pipelining: Bool

    init(conversation: SMTPConversation, pipelining: Bool) {
        self.conversation = conversation
        self.pipelining = pipelining
    }

    func close() {
        self.conversation.channel.close(promise: nil)
    }
}
