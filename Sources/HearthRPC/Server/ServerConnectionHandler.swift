import Foundation
import HearthCore
import Logging
import NIOCore
import SwiftProtobuf
import Synchronization

/// A count shared by every connection of a server.
final class CallCounter: Sendable {
    let value = Atomic<Int>(0)

    func add(_ delta: Int) {
        self.value.wrappingAdd(delta, ordering: .relaxed)
    }

    var current: Int { self.value.load(ordering: .relaxed) }
}

/// Tells a connection to drain: send GOAWAY, refuse new calls, close once in-flight calls end.
struct DrainEvent: Sendable {}

/// The drain's time ran out: calls still running are answered UNAVAILABLE, then the
/// connection closes.
struct DrainTimeoutEvent: Sendable {}

/// One server connection: decodes frames, runs each call's handler in its own task on the
/// connection's event loop (or has the forwarder send it on, without a task), and answers
/// every REQUEST exactly once (unless cancelled).
///
/// All state lives on the channel's event loop; calls touch it only through `NIOLoopBound`.
/// Its members are internal, not private, only so that its extensions (the calls, what it
/// sends) in files of their own reach them.
final class ServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct InFlightCall {
        /// Tells this call from a later one that reuses its call_id.
        var generation: UInt64
        var work: Work?
        /// Whether its completion would prove who is calling, while the connection has no call
        /// that did (a health check proves nothing): that ends its authentication window and
        /// lifts its frame limit until authenticated.
        var mayAuthenticate = false
    }

    /// What runs a call: its handler's task, or the call its forwarder sent on.
    enum Work {
        case task(Task<Void, Never>)
        case forwarded(StartedCall)

        func cancel() {
            switch self {
            case .task(let task): task.cancel()
            case .forwarded(let call): call.cancel()
            }
        }
    }

    /// A call as its deadline entry names it: the id may be reused by a later call.
    struct CallKey: Hashable {
        var callID: UInt64
        var generation: UInt64
    }

    let router: MethodRouter
    /// Told when a call fails because its store is at fault (nil: nobody asks).
    let health: HealthState?
    let configuration: ServerConfiguration
    /// Stopped while reads are held back, so that a frame's pace does not count our pause.
    let readingTime: ReadingTime
    /// Lifted once a call has passed authentication; nil: the server's limit from the start.
    let frameLimitUntilAuthenticated: FrameLimitUntilAuthenticated?
    let logger: Logger
    var calls: [UInt64: InFlightCall] = [:]
    var nextGeneration: UInt64 = 0
    /// The calls' deadlines, behind one timer for the connection.
    var deadlines = DeadlineTimer<CallKey>()
    /// Handler tasks and forwarded calls not finished yet, including those whose call already
    /// ended by deadline or CANCEL but that ignore cancellation: the concurrency limit counts these.
    var unfinishedCalls = 0
    var flushes = FlushBatcher()
    var context: ChannelHandlerContext?
    var executor: EventLoopTaskExecutor?
    var peer = "unknown"
    /// Serving, draining, closing: the connection's lifecycle, whose actions ``perform(_:)``
    /// carries out.
    var lifecycle = ServerConnectionState()
    /// When the peer last sent something or a response last went out (read per batch, not per
    /// frame), on the loop's clock.
    var lastActivity = NIODeadline.uptimeNanoseconds(0)
    var idleCheck: Scheduled<Void>?
    /// The end of the authentication window, cancelled once a call authenticated (or the
    /// connection went), so that it does not hold the handler for the rest of the window.
    var authenticationCheck: Scheduled<Void>?
    /// Bytes read and dropped since the connection began to close (``lingeringClose(context:)``).
    var droppedWhileClosing = 0
    /// Whether the connection closes on a frame refused as it arrives (too large, past the
    /// budget), whose sender is still sending: it lingers so that the GOAWAY is read. Other
    /// closes (the authentication window, a frame that stalled, an undecodable one) are at
    /// once: thousands of them a second under attack must not each hold a connection open.
    var closesMidFrame = false
    /// The last REQUEST's method and metadata (its payload dropped), when small: the next
    /// frame's decoder reuses its strings where the bytes are the same.
    var lastRequest: WireFrame?
    /// Made up per connection so that request ids are unique without coordination.
    let connectionTag = String(UInt64.random(in: 0...UInt64.max), radix: 36)

    /// Counts calls in flight across every connection of the server.
    let callsInFlight: CallCounter

    init(
        router: MethodRouter,
        configuration: ServerConfiguration,
        callsInFlight: CallCounter,
        readingTime: ReadingTime,
        frameLimitUntilAuthenticated: FrameLimitUntilAuthenticated? = nil,
        health: HealthState?,
        logger: Logger
    ) {
        self.callsInFlight = callsInFlight
        self.health = health
        self.router = router
        self.configuration = configuration
        self.readingTime = readingTime
        self.frameLimitUntilAuthenticated = frameLimitUntilAuthenticated
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.executor = EventLoopTaskExecutor(loop: context.eventLoop)
        self.peer = context.channel.remoteAddress?.description ?? "unknown"
        self.lastActivity = context.eventLoop.now
        self.scheduleIdleCheck(at: self.lastActivity + self.configuration.idleTimeout)
        if let window = self.configuration.authenticationWindow {
            let this = NIOLoopBound(self, eventLoop: context.eventLoop)
            self.authenticationCheck = context.eventLoop.scheduleTask(in: window) {
                this.value.perform(
                    this.value.lifecycle.authenticationWindowEnded(window, callsInFlight: this.value.calls.count)
                )
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.authenticationCheck?.cancel()
        self.cancelAll()
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.flushes.readStarted()
        guard self.lifecycle.readsFrames else {
            self.drop(Self.unwrapInboundIn(data), context: context)
            return
        }
        let buffer = Self.unwrapInboundIn(data)
        let frame: WireFrame
        do {
            frame = try WireFrame(decoding: buffer, reusingStringsOf: self.lastRequest)
        } catch {
            self.perform(self.lifecycle.protocolError(.invalidArgument, "undecodable frame: \(error)"))
            return
        }
        switch frame.kind {
        case .request:
            self.lastRequest = frame.isWorthReusing(bodyBytes: buffer.readableBytes) ? frame : nil
            self.lastRequest?.payload = Data()
            self.startCall(frame)
        case .cancel:
            self.cancelCall(frame.callID)
        case .ping:
            var pong = WireFrame()
            pong.callID = frame.callID
            pong.kind = .pong
            self.write(pong)
        case .pong:
            self.perform(
                self.lifecycle.pongReceived(connectionPing: frame.callID == 0, callsInFlight: self.calls.count)
            )
        case .goaway:
            // The client will send no new calls: finish what is in flight, then close.
            self.perform(self.lifecycle.peerWentAway(callsInFlight: self.calls.count))
        case .response:
            self.perform(self.lifecycle.protocolError(.invalidArgument, "a server accepts no RESPONSE frames"))
        case .unspecified, .UNRECOGNIZED:
            self.perform(self.lifecycle.protocolError(.invalidArgument, "unknown frame kind \(frame.kind.rawValue)"))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.lastActivity = context.eventLoop.now
        if self.flushes.readEnded() { context.flush() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.cancelAll()
        context.fireChannelInactive()
    }

    /// Backpressure: a peer that sends faster than it reads our answers is not read from
    /// until the answers queued for it drain (NIO's write-buffer water marks).
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        _ = context.channel.setOption(.autoRead, value: writable)
        if writable {
            self.readingTime.resume()
            context.read()
        } else {
            self.readingTime.pause()
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is DrainEvent:
            self.perform(self.lifecycle.drainRequested())
        case is DrainTimeoutEvent:
            self.perform(self.lifecycle.drainTimedOut())
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case is FrameTooLargeError, is FrameTooLargeBeforeAuthenticationError, is PartialFramesOverBudgetError:
            // Refused while the peer sends it: the rest of it is on its way.
            self.closesMidFrame = true
            self.perform(self.lifecycle.protocolError(.resourceExhausted, "\(error)"))
        case is FrameTooSlowError:
            self.perform(self.lifecycle.protocolError(.deadlineExceeded, "\(error)"))
        case is ByteToMessageDecoderError:
            self.perform(self.lifecycle.protocolError(.invalidArgument, "undecodable frame: \(error)"))
        default:
            // Connection reset and the like: nothing to tell the peer.
            self.logger.debug("connection error", metadata: ["peer": "\(self.peer)", "error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let loop = self.context?.eventLoop else { return }
        let this = NIOLoopBound(self, eventLoop: loop)
        self.idleCheck = loop.scheduleTask(deadline: deadline) { this.value.checkIdle() }
    }

    func checkIdle() {
        guard let loop = self.context?.eventLoop else { return }
        self.perform(
            self.lifecycle.idleCheckDue(
                now: loop.now,
                lastActivity: self.lastActivity,
                idleTimeout: self.configuration.idleTimeout,
                callsInFlight: self.calls.count
            )
        )
    }

    /// How long a connection that was sent GOAWAY for idleness still serves late requests.
    static let idleGoAwayGrace = TimeAmount.seconds(1)

    // MARK: Lifecycle

    /// Carries out what the lifecycle decided.
    func perform(_ action: ServerConnectionState.Action) {
        guard let context = self.context else { return }
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        switch action {
        case .none:
            return
        case .sendDrainGoAway:
            self.sendGoAway(.unavailable, "server is shutting down")
            var ping = WireFrame()
            ping.kind = .ping
            self.write(ping)
            if self.flushes.takeUnflushed() { context.flush() }
            context.eventLoop.scheduleTask(in: self.configuration.drainPongWait) {
                this.value.perform(this.value.lifecycle.drainPongWaitEnded(callsInFlight: this.value.calls.count))
            }
        case .sendIdleGoAway:
            // The client sends no new calls here; a request that crossed the GOAWAY on the wire
            // is still served, and after a short grace the connection drains.
            self.sendGoAway(.unavailable, "connection idle for \(self.configuration.idleTimeout)")
            context.eventLoop.scheduleTask(in: Self.idleGoAwayGrace) {
                this.value.perform(this.value.lifecycle.idleGraceEnded(callsInFlight: this.value.calls.count))
            }
        case .checkIdle(let deadline):
            self.scheduleIdleCheck(at: deadline)
        case .sendGoAway(let code, let reason):
            self.sendGoAway(code, reason)
        case .close(.drained):
            _ = self.flushes.takeUnflushed()
            self.closeAfterFlush(context: context)
        case .close(.protocolError(let code, let reason)):
            self.logger.debug("closing connection", metadata: ["peer": "\(self.peer)", "reason": "\(reason)"])
            self.cancelAll()
            var frame = WireFrame()
            frame.kind = .goaway
            frame.status = RPCError(code, reason).wireStatus
            self.write(frame)
            _ = self.flushes.takeUnflushed()
            if self.closesMidFrame {
                self.lingeringClose(context: context)
            } else {
                self.closeAfterFlush(context: context)
            }
        case .close(.drainTimedOut):
            // Each REQUEST still gets its one RESPONSE: a call cut off is answered, not dropped
            // with the connection, so its client learns why. Not marked as not run: it may have
            // done part of its work.
            let unfinished = self.calls.keys
            self.cancelAll()
            for callID in unfinished {
                self.respond(callID, .failure(RPCError(.unavailable, "the server stopped before the call finished")))
            }
            _ = self.flushes.takeUnflushed()
            self.closeAfterFlush(context: context)
        }
    }
}

@available(*, unavailable)
extension ServerConnectionHandler: Sendable {}

extension ChannelPipeline.SynchronousOperations {
    /// The handlers of one server connection: frames cut by their length prefix, then the
    /// calls they carry. The server and the fuzzer build connections with it alike.
    func addServerConnectionHandlers(
        router: MethodRouter,
        configuration: ServerConfiguration,
        callsInFlight: CallCounter,
        partialFrames: PartialFrameBudget,
        peerAddress: String? = nil,
        readingTime: ReadingTime = ReadingTime(),
        health: HealthState? = nil,
        logger: Logger
    ) throws {
        let untilAuthenticated = configuration.maxFrameSizeBeforeAuthentication.map {
            FrameLimitUntilAuthenticated(limit: $0)
        }
        try self.addHandler(
            ByteToMessageHandler(
                LengthPrefixedFrameDecoder(
                    maxFrameSize: configuration.maxFrameSize,
                    budget: partialFrames,
                    peerAddress: peerAddress,
                    pace: configuration.framePace,
                    readingTime: readingTime,
                    untilAuthenticated: untilAuthenticated
                )
            ),
            name: ServerConnectionHandler.frameDecoderName
        )
        try self.addHandler(
            ServerConnectionHandler(
                router: router,
                configuration: configuration,
                callsInFlight: callsInFlight,
                readingTime: readingTime,
                frameLimitUntilAuthenticated: untilAuthenticated,
                health: health,
                logger: logger
            )
        )
    }
}
