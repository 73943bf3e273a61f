import Foundation
import NIOCore
import NIOPosix
import NIOSSL

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
    /// How long any one reply may take.
    public var timeout: TimeAmount

    public init(
        host: String,
        port: Int,
        security: Security = .startTLS,
        username: String? = nil,
        password: String? = nil,
        trustRootsFile: String? = nil,
        heloName: String = "hearth.local",
        timeout: TimeAmount = .seconds(30)
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
        self.trustRootsFile = trustRootsFile
        self.heloName = heloName
        self.timeout = timeout
    }
}

/// What went wrong sending: the server's reply, or the connection.
public struct SMTPError: Error, Sendable, CustomStringConvertible {
    /// The reply code; 0 when the connection failed before an answer.
    public var code: Int
    public var message: String
    /// A 5xx answer: sending the same message again will fail the same way.
    public var isPermanent: Bool { self.code >= 500 }

    public var description: String { self.code == 0 ? self.message : "\(self.code) \(self.message)" }
}

/// Sends each message over its own SMTP conversation (EHLO, STARTTLS, AUTH, MAIL, RCPT, DATA,
/// QUIT) on SwiftNIO; `send` returns as soon as the server accepted the message.
public struct SMTPClient: Sendable {
    public let configuration: SMTPConfiguration
    private let group: any EventLoopGroup

    public init(configuration: SMTPConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
    }

    /// Delivers `message` to the server; returns once the server accepted it (250 after DATA).
    /// - Throws: ``SMTPError``.
    public func send(_ message: MailMessage) async throws {
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
        let conversation = SMTPConversation(channel: channel, replies: replies, timeout: self.configuration.timeout)
        do {
            try await self.converse(conversation, message)
        } catch {
            try? await channel.close()
            throw error
        }
    }

    private func converse(_ smtp: SMTPConversation, _ message: MailMessage) async throws {
        try await smtp.expect(220, after: nil)
        var capabilities = try await smtp.expect(250, after: "EHLO \(self.configuration.heloName)").lines
        if self.configuration.security == .startTLS {
            guard capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) else {
                throw SMTPError(code: 0, message: "the server does not offer STARTTLS")
            }
            try await smtp.expect(220, after: "STARTTLS")
            try await smtp.startTLS(trustRootsFile: self.configuration.trustRootsFile, host: self.configuration.host)
            capabilities = try await smtp.expect(250, after: "EHLO \(self.configuration.heloName)").lines
        }
        if let username = self.configuration.username {
            let token = Data("\u{0}\(username)\u{0}\(self.configuration.password ?? "")".utf8).base64EncodedString()
            try await smtp.expect(235, after: "AUTH PLAIN \(token)", redacted: "AUTH PLAIN ***")
        }
        _ = capabilities
        try await smtp.expect(250, after: "MAIL FROM:<\(message.from.address)>")
        try await smtp.expect([250, 251], after: "RCPT TO:<\(message.to.address)>")
        try await smtp.expect(354, after: "DATA")
        try await smtp.expect(250, after: Self.dotStuffed(message.rendered) + ".")
        // Accepted: return now, so the caller records it at once (a crash between the server's
        // 250 and that record is the one moment a message can be sent twice). QUIT and close
        // go on without us.
        smtp.quit()
    }

    /// A line that begins with a dot gets another, so that the server does not read it as the end.
    static func dotStuffed(_ text: String) -> String {
        text.split(separator: "\r\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") ? "." + $0 : String($0) }
            .joined(separator: "\r\n")
    }
}

/// One SMTP reply: its code and its lines (without the code).
struct SMTPReply: Sendable {
    var code: Int
    var lines: [String]
}

/// Sends commands and waits for replies on one connection.
private struct SMTPConversation {
    let channel: any Channel
    let replies: SMTPReplyReader
    let timeout: TimeAmount

    @discardableResult
    func expect(_ code: Int, after command: String?, redacted: String? = nil) async throws -> SMTPReply {
        try await self.expect([code], after: command, redacted: redacted)
    }

    @discardableResult
    func expect(_ codes: Set<Int>, after command: String?, redacted: String? = nil) async throws -> SMTPReply {
        let reply = self.replies.next(on: self.channel.eventLoop, timeout: self.timeout)
        if let command {
            var buffer = self.channel.allocator.buffer(capacity: command.utf8.count + 2)
            buffer.writeString(command)
            buffer.writeString("\r\n")
            self.channel.writeAndFlush(buffer, promise: nil)
        }
        let answer: SMTPReply
        do {
            answer = try await reply.get()
        } catch let error as SMTPError {
            throw error
        } catch {
            throw SMTPError(code: 0, message: "connection lost: \(error)")
        }
        guard codes.contains(answer.code) else {
            let what = redacted ?? command.map { String($0.prefix(40)) } ?? "greeting"
            throw SMTPError(code: answer.code, message: "\(answer.lines.joined(separator: " ")) (after \(what))")
        }
        return answer
    }

    /// Says goodbye and closes once that is written, without waiting for the reply.
    func quit() {
        var buffer = self.channel.allocator.buffer(capacity: 6)
        buffer.writeString("QUIT\r\n")
        let channel = self.channel
        channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
    }

    func startTLS(trustRootsFile: String?, host: String) async throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let trustRootsFile { configuration.trustRoots = .file(trustRootsFile) }
        let context = try NIOSSLContext(configuration: configuration)
        let hostname = host.first?.isNumber == true || host.contains(":") ? nil : host
        try await self.channel.eventLoop.submit {
            let handler = try NIOSSLClientHandler(context: context, serverHostname: hostname)
            try self.channel.pipeline.syncOperations.addHandler(handler, position: .first)
        }.get()
    }
}

/// Collects reply lines (`250-...` continues, `250 ...` ends) into replies and hands each to
/// the next waiter. Touched only on its channel's event loop.
private final class SMTPReplyReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private var pending = ByteBuffer()
    private var lines: [String] = []
    private var ready: [SMTPReply] = []
    private var waiters: [EventLoopPromise<SMTPReply>] = []
    private var failure: SMTPError?

    /// The next reply (arriving after this call, or already read and not yet taken).
    func next(on loop: any EventLoop, timeout: TimeAmount) -> EventLoopFuture<SMTPReply> {
        loop.flatSubmit {
            if !self.ready.isEmpty { return loop.makeSucceededFuture(self.ready.removeFirst()) }
            if let failure = self.failure { return loop.makeFailedFuture(failure) }
            let promise = loop.makePromise(of: SMTPReply.self)
            self.waiters.append(promise)
            let timer = loop.scheduleTask(in: timeout) {
                promise.fail(SMTPError(code: 0, message: "no reply within \(timeout)"))
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            return promise.futureResult
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = self.unwrapInboundIn(data)
        self.pending.writeBuffer(&bytes)
        while case let view = self.pending.readableBytesView, let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
            let length = view.distance(from: view.startIndex, to: newline) + 1
            var bytes = self.pending.readBytes(length: length) ?? []
            bytes.removeLast()  // LF
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            self.take(String(decoding: bytes, as: UTF8.self))
        }
        if self.pending.readableBytes > 64 * 1024 {
            self.fail(SMTPError(code: 0, message: "reply line too long"))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(SMTPError(code: 0, message: "the server closed the connection"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(SMTPError(code: 0, message: "\(error)"))
        context.close(promise: nil)
    }

    private func take(_ line: String) {
        let code = Int(line.prefix(3)) ?? 0
        let separator = line.dropFirst(3).first
        self.lines.append(String(line.dropFirst(4)))
        guard separator != "-" else { return }
        let reply = SMTPReply(code: code, lines: self.lines)
        self.lines = []
        if self.waiters.isEmpty {
            self.ready.append(reply)
        } else {
            self.waiters.removeFirst().succeed(reply)
        }
    }

    private func fail(_ error: SMTPError) {
        if self.failure == nil { self.failure = error }
        let waiters = self.waiters
        self.waiters = []
        for waiter in waiters { waiter.fail(error) }
    }
}
