import NIOCore
import NIOSSL

/// One SMTP reply: its code and its lines (without the code).
struct SMTPReply: Sendable {
    var code: Int
    var lines: [String]
}

/// The conversation failed (`error`) after some of a group's replies came (`received`, in order):
/// a server may refuse a pipelined command and close, and its refusal is the answer, not the
/// close.
struct SMTPRepliesCut: Error {
    let received: [SMTPReply]
    let error: SMTPError
}

/// Sends commands and waits for replies on one connection.
struct SMTPConversation: Sendable {
    let channel: any Channel
    let replies: SMTPReplyReader
    let timeout: TimeAmount

    @discardableResult
    func expect(_ code: Int, after command: String?, redacted: String? = nil) async throws -> SMTPReply {
        try await self.expect([code], after: command, redacted: redacted)
    }

    @discardableResult
    func expect(
        _ codes: Set<Int>,
        after command: String?,
        redacted: String? = nil,
        timeout: TimeAmount? = nil
    ) async throws -> SMTPReply {
        let reply: SMTPReply
        do {
            reply = try await self.exchange(command.map { [$0] } ?? [], timeout: timeout)[0]
        } catch let cut as SMTPRepliesCut {
            // One reply awaited: none came.
            throw cut.error
        }
        try Self.check(reply, expecting: codes, after: command, redacted: redacted)
        return reply
    }

    /// Writes `commands` in one write and answers their replies, one each (with none, the reply
    /// already due: the greeting), or the first failure (``SMTPRepliesCut`` when some replies came
    /// before it). One turn on the event loop waits for them and writes: the caller's task hops
    /// to it and back once.
    func exchange(_ commands: [String], timeout: TimeAmount? = nil) async throws -> [SMTPReply] {
        let channel = self.channel
        let replies = self.replies
        let timeout = timeout ?? self.timeout
        let future = channel.eventLoop.flatSubmit {
            let answers = replies.next(max(commands.count, 1), on: channel.eventLoop, timeout: timeout)
            if !commands.isEmpty {
                var buffer = channel.allocator.buffer(capacity: commands.reduce(0) { $0 + $1.utf8.count + 2 })
                for command in commands {
                    buffer.writeString(command)
                    buffer.writeString("\r\n")
                }
                channel.writeAndFlush(buffer, promise: nil)
            }
            return answers
        }
        do {
            return try await future.get()
        } catch let error as SMTPError {
            throw error
        } catch let cut as SMTPRepliesCut {
            throw cut
        } catch {
            throw SMTPError(code: 0, message: "connection lost: \(error)")
        }
    }

    /// Throws an ``SMTPError`` unless `reply` has one of `codes`.
    static func check(_ reply: SMTPReply, expecting codes: Set<Int>, after command: String?, redacted: String?) throws {
        guard !codes.contains(reply.code) else { return }
        // The command's verb (`RCPT TO`, `MAIL FROM`, `EHLO host`), never its address: the
        // error is logged and kept.
        let what =
            redacted ?? command.map { String(($0.split(separator: ":", maxSplits: 1).first ?? "").prefix(40)) }
            ?? "greeting"
        throw SMTPError(code: reply.code, message: "\(reply.lines.joined(separator: " ")) (after \(what))")
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
            // Whatever came after the STARTTLS reply came in the clear, maybe from someone in
            // between, and would be read as the first replies over TLS (CVE-2011-0411): refuse.
            // Checked in the same turn as TLS goes in, so no later byte slips between.
            guard !self.replies.hasUnreadInput else {
                throw SMTPError(code: 0, message: "the server sent more after its STARTTLS reply; not going on")
            }
            let handler = try NIOSSLClientHandler(context: context, serverHostname: hostname)
            try self.channel.pipeline.syncOperations.addHandler(handler, position: .first)
        }.get()
    }
}

/// Collects reply lines (`250-...` continues, `250 ...` ends) into replies and hands them to
/// the waiters in order, each the number it waits for. Touched only on its channel's event loop.
final class SMTPReplyReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private var pending = ByteBuffer()
    private var lines: [String] = []
    private var ready: [SMTPReply] = []
    /// Callers waiting, in order, each for its next `count` replies.
    private var waiters: [Waiter] = []
    private var failure: SMTPError?
    private var timedOut = false

    private struct Waiter {
        let count: Int
        var replies: [SMTPReply] = []
        let promise: EventLoopPromise<[SMTPReply]>
    }

    /// The next `count` replies (arriving after this call, or already read and not yet taken),
    /// or the first failure; all of them within `timeout`, else the conversation fails (a late
    /// reply would be taken for the next command's). Called on `loop`, the channel's.
    func next(_ count: Int, on loop: any EventLoop, timeout: TimeAmount) -> EventLoopFuture<[SMTPReply]> {
        loop.preconditionInEventLoop()
        // After a reply failed to come in time, a late one must not pass for the next command's.
        if self.timedOut, let failure = self.failure { return loop.makeFailedFuture(failure) }
        if self.ready.count >= count {
            defer { self.ready.removeFirst(count) }
            return loop.makeSucceededFuture(Array(self.ready.prefix(count)))
        }
        if let failure = self.failure {
            defer { self.ready = [] }
            return loop.makeFailedFuture(
                self.ready.isEmpty ? failure : SMTPRepliesCut(received: self.ready, error: failure)
            )
        }
        let promise = loop.makePromise(of: [SMTPReply].self)
        self.waiters.append(Waiter(count: count, replies: self.ready, promise: promise))
        self.ready = []
        let timer = loop.scheduleTask(in: timeout) {
            self.timedOut = true
            self.fail(SMTPError(code: 0, message: "no reply within \(timeout)"))
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    /// Whether anything has been read that no waiter took: a reply, or part of one.
    var hasUnreadInput: Bool {
        !self.ready.isEmpty || !self.lines.isEmpty || self.pending.readableBytes > 0
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
        guard !self.waiters.isEmpty else {
            self.ready.append(reply)
            return
        }
        self.waiters[0].replies.append(reply)
        if self.waiters[0].replies.count == self.waiters[0].count {
            let waiter = self.waiters.removeFirst()
            waiter.promise.succeed(waiter.replies)
        }
    }

    private func fail(_ error: SMTPError) {
        if self.failure == nil { self.failure = error }
        let waiters = self.waiters
        self.waiters = []
        for waiter in waiters {
            waiter.promise.fail(waiter.replies.isEmpty ? error : SMTPRepliesCut(received: waiter.replies, error: error))
        }
    }
}
