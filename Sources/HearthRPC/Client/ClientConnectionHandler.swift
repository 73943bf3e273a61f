import Foundation
import NIOCore
import SwiftProtobuf
import Synchronization

/// One call waiting for its response payload. Touched only on its connection's event loop.
final class PendingCall: @unchecked Sendable {
    let promise: EventLoopPromise<Data>
    /// Whether an OK answer proves who is calling: any call but a health check. (The server
    /// counts more answers than OK, but not every refusal: OK is the one the client can be
    /// sure of.)
    let provesIdentity: Bool
    var callID: UInt64 = 0
    var cancelled = false

    init(promise: EventLoopPromise<Data>, method: String) {
        self.promise = promise
        self.provesIdentity = !method.hasPrefix(Hearth_Health_V1_Health.name + "/")
    }
}

/// The cause of an ``RPCError`` for a call that certainly never left this process (no
/// connection could be had, or it had already stopped taking calls), or that a server answered
/// it ran none of (``TrustedMetadata/notRun``): safe to try elsewhere.
public struct CallNotSent: Error {
    /// What kept it from being sent (a connect error), if anything more than a refusal.
    public var underlying: (any Error)?
}

extension RPCError {
    /// Whether the call certainly never reached a server, so that retrying cannot run it twice.
    public var wasNeverSent: Bool { self.cause is CallNotSent }

    /// Whether the call was refused before it was sent, with no backoff asked for: the
    /// connection stopped taking calls (GOAWAY) or a connect failed just now. One more try at
    /// once, on a fresh connection, cannot run it twice.
    public var mayRetryAtOnce: Bool { self.wasNeverSent && self.code == .unavailable && self.retryAfter == nil }

    /// Whether the server refused the call, running none of it, because its connection already
    /// carried as many calls as it takes: another connection may take it.
    public var refusedForConnectionLimit: Bool { (self.cause as? CallNotSent)?.underlying is ConnectionFull }
}

/// Why a server refused a call it ran none of with RESOURCE_EXHAUSTED: its connection was full.
public struct ConnectionFull: Error {}

/// Whether a connection takes new calls, and how many it carries; read from any thread,
/// written on its loop.
final class ConnectionAvailability: Sendable {
    private let accepting = Atomic<Bool>(true)
    private let answered = Atomic<Bool>(false)
    private let authenticated = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)
    private let refusedAsFull = Atomic<Bool>(false)

    /// Calls sent and not yet answered, cancelled or failed.
    var callsInFlight: Int {
        get { self.inFlight.load(ordering: .relaxed) }
        set { self.inFlight.store(newValue, ordering: .relaxed) }
    }

    /// Whether the server's last answer here refused a call because the connection was full. It
    /// can be full with fewer calls than its limit in flight here: the server counts a handler
    /// until it returns, and one whose call was cancelled or ran out of time may run on.
    var wasRefusedAsFull: Bool {
        get { self.refusedAsFull.load(ordering: .relaxed) }
        set { if self.wasRefusedAsFull != newValue { self.refusedAsFull.store(newValue, ordering: .relaxed) } }
    }

    var isAcceptingCalls: Bool { self.accepting.load(ordering: .relaxed) }

    /// Whether the server ever answered a call here: a connection it refuses at once (at its
    /// connection limit, shutting down) counts as a failed connection attempt.
    var hasAnswered: Bool { self.answered.load(ordering: .relaxed) }

    func noteAnswer() {
        if !self.hasAnswered { self.answered.store(true, ordering: .relaxed) }
    }

    /// Whether a call here (not a health check) was answered OK, so that it passed the
    /// server's authentication: the server then takes frames up to its full limit.
    var hasAuthenticated: Bool { self.authenticated.load(ordering: .relaxed) }

    func noteAuthenticated() {
        if !self.hasAuthenticated { self.authenticated.store(true, ordering: .relaxed) }
    }

    func stopAcceptingCalls() {
        self.accepting.store(false, ordering: .relaxed)
    }
}

/// The client side of one connection: numbers calls, matches responses by call_id, enforces
/// local deadlines, and fails what is in flight with UNAVAILABLE when the connection goes.
final class ClientConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var pending: [UInt64: PendingCall] = [:] {
        didSet { self.availability.callsInFlight = self.pending.count }
    }
    private var pings: [UInt64: EventLoopPromise<Void>] = [:]
    private var nextCallID: UInt64 = 1
    /// Local deadlines by call id (ids are never reused), behind one timer for the connection.
    private var deadlines = DeadlineTimer<UInt64>()
    private var flushes = FlushBatcher()
    private var context: ChannelHandlerContext?
    private let availability: ConnectionAvailability
    /// Why no new calls are taken (GOAWAY's reason, or the connection closed).
    private var refusal: RPCError?
    private var receivedAnyFrame = false

    /// The largest frame the server takes: a bigger request fails alone instead of making the
    /// server close the connection under every other call.
    /// The largest request frame sent (what the server takes).
    private let maxRequestFrameSize: Int

    /// A call id's field: its tag and a varint of at most 10 bytes.
    static let callIDAllowance = 11

    init(availability: ConnectionAvailability, maxRequestFrameSize: Int) {
        self.availability = availability
        self.maxRequestFrameSize = maxRequestFrameSize
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.failAll(RPCError(.unavailable, "connection closed"))
        self.context = nil
    }

    // MARK: Calls, from RPCConnection

    func start(_ call: PendingCall, request: WireFrame, timeout: TimeAmount?) {
        if call.cancelled {
            call.promise.fail(RPCError(.cancelled, "the call was cancelled"))
            return
        }
        if let refusal = self.refusal {
            call.promise.fail(RPCError(refusal.code, refusal.message, cause: CallNotSent()))
            return
        }
        // The whole frame as it will go out, with the call id it is about to get (at most 11
        // bytes): payload, method and metadata.
        let size = request.encodedSize(status: nil) + Self.callIDAllowance
        if size > self.maxRequestFrameSize {
            let message =
                "request of \(size) bytes (payload and metadata) exceeds the frame limit of \(self.maxRequestFrameSize)"
            call.promise.fail(RPCError(.resourceExhausted, message, cause: CallNotSent()))
            return
        }
        var request = request
        call.callID = self.nextCallID
        self.nextCallID &+= 1
        request.callID = call.callID
        self.pending[call.callID] = call
        if let timeout, let loop = self.context?.eventLoop {
            self.deadlines.add(
                call.callID,
                deadline: .now() + timeout,
                liveCalls: self.pending.count,
                isGone: { self.pending[$0] == nil },
                loop: loop,
                fire: { [this = NIOLoopBound(self, eventLoop: loop)] in this.value.deadlinesDue() }
            )
        }
        self.write(request)
    }

    func cancel(_ call: PendingCall) {
        call.cancelled = true
        guard self.remove(call) else { return }
        self.sendCancel(call.callID)
        call.promise.fail(RPCError(.cancelled, "the call was cancelled"))
    }

    func ping(_ promise: EventLoopPromise<Void>) {
        if let refusal = self.refusal {
            promise.fail(refusal)
            return
        }
        let id = self.nextCallID
        self.nextCallID &+= 1
        self.pings[id] = promise
        var frame = WireFrame()
        frame.callID = id
        frame.kind = .ping
        self.write(frame)
    }

    private func deadlinesDue() {
        for callID in self.deadlines.takeDue() {
            if let call = self.pending[callID] { self.deadlinePassed(call) }
        }
    }

    private func deadlinePassed(_ call: PendingCall) {
        guard self.remove(call) else { return }
        self.sendCancel(call.callID)
        call.promise.fail(RPCError(.deadlineExceeded, "deadline exceeded"))
    }

    private func remove(_ call: PendingCall) -> Bool {
        guard let found = self.pending[call.callID], found === call else { return false }
        self.pending.removeValue(forKey: call.callID)
        return true
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.flushes.readStarted()
        self.receivedAnyFrame = true
        let buffer = Self.unwrapInboundIn(data)
        guard let frame = try? WireFrame(decoding: buffer) else {
            self.protocolError("undecodable frame from server", context: context)
            return
        }
        switch frame.kind {
        case .response:
            self.availability.noteAnswer()
            guard let call = self.pending.removeValue(forKey: frame.callID) else { return }
            if call.provesIdentity, !frame.hasStatus || frame.status.code == .ok {
                self.availability.noteAuthenticated()
            }
            if frame.hasStatus, frame.status.code != .ok {
                var error = RPCError(status: frame.status)
                let notRun = Metadata(entries: frame.metadata)[TrustedMetadata.notRun] != nil
                let full = notRun && error.code == .resourceExhausted
                if notRun { error.cause = CallNotSent(underlying: full ? ConnectionFull() as any Error : nil) }
                self.availability.wasRefusedAsFull = full
                call.promise.fail(error)
            } else {
                self.availability.wasRefusedAsFull = false
                call.promise.succeed(frame.payload)
            }
        case .pong:
            self.pings.removeValue(forKey: frame.callID)?.succeed()
        case .ping:
            var pong = WireFrame()
            pong.callID = frame.callID
            pong.kind = .pong
            self.write(pong)
        case .goaway:
            let reason = RPCError(status: frame.status)
            self.refuseNewCalls(RPCError(.unavailable, "server sent GOAWAY: \(reason.code.name): \(reason.message)"))
            if self.pending.isEmpty { context.close(promise: nil) }
        case .request, .cancel, .unspecified, .UNRECOGNIZED:
            self.protocolError("unexpected \(frame.kind) frame from server", context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.flushes.readEnded() { context.flush() }
        if self.refusal != nil, self.pending.isEmpty {
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // After a GOAWAY, its reason is why the calls still in flight end.
        let goAway = self.refusal.map { ": \($0.message)" } ?? ""
        self.failAll(RPCError(.unavailable, "connection closed\(goAway)"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is FrameTooLargeError, !self.receivedAnyFrame {
            // The first bytes back were no frame at all: most often a TLS listener's alert.
            self.failAll(
                RPCError(.unavailable, "the server did not answer in Hearth frames (a TLS listener? try --tls)")
            )
        } else {
            // After a GOAWAY (a server closing on a refused frame resets the connection while
            // the rest of it arrives), its reason is why the calls still in flight end.
            let goAway = self.refusal.map { " (\($0.message))" } ?? ""
            self.failAll(RPCError(.unavailable, "connection failed: \(error)\(goAway)"))
        }
        context.close(promise: nil)
    }

    // MARK: Helpers

    private func refuseNewCalls(_ reason: RPCError) {
        if self.refusal == nil { self.refusal = reason }
        self.availability.stopAcceptingCalls()
    }

    private func failAll(_ error: RPCError) {
        self.refuseNewCalls(error)
        let calls = self.pending.values
        let pings = self.pings.values
        self.pending.removeAll()
        self.pings.removeAll()
        self.deadlines.cancelAll()
        for call in calls {
            call.promise.fail(error)
        }
        for ping in pings { ping.fail(error) }
    }

    private func protocolError(_ message: String, context: ChannelHandlerContext) {
        self.failAll(RPCError(.unavailable, message))
        context.close(promise: nil)
    }

    private func sendCancel(_ callID: UInt64) {
        var frame = WireFrame()
        frame.callID = callID
        frame.kind = .cancel
        self.write(frame)
    }

    private func write(_ frame: WireFrame) {
        guard let context = self.context, context.write(frame: frame) else { return }
        context.carryOut(
            self.flushes.wrote(),
            endOfTick: { [this = NIOLoopBound(self, eventLoop: context.eventLoop)] in this.value.endOfTick() }
        )
    }

    private func endOfTick() {
        if self.flushes.tickEnded() { self.context?.flush() }
    }
}

@available(*, unavailable)
extension ClientConnectionHandler: Sendable {}
