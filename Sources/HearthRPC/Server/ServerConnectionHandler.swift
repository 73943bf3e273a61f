import Foundation
import HearthCore
import Logging
import NIOCore
import SwiftProtobuf
import Synchronization

/// A count shared by every connection of a server.
final class CallCounter: Sendable {
    private let value = Atomic<Int>(0)

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
final class ServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct InFlightCall {
        /// Tells this call from a later one that reuses its call_id.
        var generation: UInt64
        var work: Work?
    }

    /// What runs a call: its handler's task, or the call its forwarder sent on.
    private enum Work {
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
    private struct CallKey: Hashable {
        var callID: UInt64
        var generation: UInt64
    }

    private let router: MethodRouter
    /// Told when a call fails because its store is at fault (nil: nobody asks).
    private let health: HealthState?
    private let configuration: ServerConfiguration
    /// Stopped while reads are held back, so that a frame's pace does not count our pause.
    private let readingTime: ReadingTime
    private let logger: Logger
    private var calls: [UInt64: InFlightCall] = [:]
    private var nextGeneration: UInt64 = 0
    /// The calls' deadlines, behind one timer for the connection.
    private var deadlines = DeadlineTimer<CallKey>()
    /// Handler tasks and forwarded calls not finished yet, including those whose call already
    /// ended by deadline or CANCEL but that ignore cancellation: the concurrency limit counts these.
    private var unfinishedCalls = 0
    private var flushes = FlushBatcher()
    private var context: ChannelHandlerContext?
    private var executor: EventLoopTaskExecutor?
    private var peer = "unknown"
    private var draining = false
    /// Draining sent GOAWAY and a PING behind it: a REQUEST the peer sent before it read the
    /// GOAWAY arrives before the PONG, and is answered (UNAVAILABLE) before the connection
    /// closes. Cleared by the PONG, or after the configuration's `drainPongWait`.
    private var awaitingDrainPong = false
    /// When the peer last sent something or a response last went out (read per batch, not per frame).
    private var lastActivity = NIODeadline.now()
    private var idleCheck: Scheduled<Void>?
    /// Set once a protocol error closes the connection: later frames are ignored.
    private var closing = false
    /// The last REQUEST's method and metadata (its payload dropped), when small: the next
    /// frame's decoder reuses its strings where the bytes are the same.
    private var lastRequest: WireFrame?
    /// Made up per connection so that request ids are unique without coordination.
    private let connectionTag = String(UInt64.random(in: 0...UInt64.max), radix: 36)

    /// Counts calls in flight across every connection of the server.
    private let callsInFlight: CallCounter

    init(
        router: MethodRouter,
        configuration: ServerConfiguration,
        callsInFlight: CallCounter,
        readingTime: ReadingTime,
        health: HealthState?,
        logger: Logger
    ) {
        self.callsInFlight = callsInFlight
        self.health = health
        self.router = router
        self.configuration = configuration
        self.readingTime = readingTime
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.executor = EventLoopTaskExecutor(loop: context.eventLoop)
        self.peer = context.channel.remoteAddress?.description ?? "unknown"
        self.scheduleIdleCheck(at: .now() + self.configuration.idleTimeout)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.cancelAll()
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.flushes.readStarted()
        guard !self.closing else { return }
        let buffer = Self.unwrapInboundIn(data)
        let frame: WireFrame
        do {
            frame = try WireFrame(decoding: buffer, reusingStringsOf: self.lastRequest)
        } catch {
            self.goAway(.invalidArgument, "undecodable frame: \(error)", close: true)
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
            if frame.callID == 0, self.awaitingDrainPong {
                self.awaitingDrainPong = false
                self.closeIfDrained()
            }
        case .goaway:
            // The client will send no new calls: finish what is in flight, then close.
            self.draining = true
            self.closeIfDrained()
        case .response:
            self.goAway(.invalidArgument, "a server accepts no RESPONSE frames", close: true)
        case .unspecified, .UNRECOGNIZED:
            self.goAway(.invalidArgument, "unknown frame kind \(frame.kind.rawValue)", close: true)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.lastActivity = .now()
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
            guard !self.draining else { return }
            self.draining = true
            self.awaitingDrainPong = true
            self.goAway(.unavailable, "server is shutting down", close: false)
            var ping = WireFrame()
            ping.kind = .ping
            self.write(ping)
            if self.flushes.takeUnflushed() { context.flush() }
            let this = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: self.configuration.drainPongWait) {
                this.value.awaitingDrainPong = false
                this.value.closeIfDrained()
            }
        case is DrainTimeoutEvent:
            // Each REQUEST still gets its one RESPONSE: a call cut off is answered, not dropped
            // with the connection, so its client learns why. Not marked as not run: it may have
            // done part of its work.
            guard !self.closing else { return }
            self.closing = true
            let unfinished = self.calls.keys
            self.cancelAll()
            for callID in unfinished {
                self.respond(callID, .failure(RPCError(.unavailable, "the server stopped before the call finished")))
            }
            _ = self.flushes.takeUnflushed()
            self.closeAfterFlush(context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case is FrameTooLargeError, is PartialFramesOverBudgetError:
            self.goAway(.resourceExhausted, "\(error)", close: true)
        case is FrameTooSlowError:
            self.goAway(.deadlineExceeded, "\(error)", close: true)
        case is ByteToMessageDecoderError:
            self.goAway(.invalidArgument, "undecodable frame: \(error)", close: true)
        default:
            // Connection reset and the like: nothing to tell the peer.
            self.logger.debug("connection error", metadata: ["peer": "\(self.peer)", "error": "\(error)"])
            context.close(promise: nil)
        }
    }

    /// Idle means no call in flight and nothing read or answered for `idleTimeout`. One timer
    /// per connection, moved forward lazily, instead of a clock read on every read and write.
    private func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let loop = self.context?.eventLoop else { return }
        let this = NIOLoopBound(self, eventLoop: loop)
        self.idleCheck = loop.scheduleTask(deadline: deadline) { this.value.checkIdle() }
    }

    private func checkIdle() {
        guard !self.draining, !self.closing else { return }
        let idleAt = self.lastActivity + self.configuration.idleTimeout
        let now = NIODeadline.now()
        guard self.calls.isEmpty, idleAt <= now else {
            self.scheduleIdleCheck(at: self.calls.isEmpty ? idleAt : now + self.configuration.idleTimeout)
            return
        }
        self.idleTimedOut()
    }

    /// GOAWAY, so the client sends no new calls here. A request that crossed the GOAWAY on the
    /// wire is still served; after a short grace the connection closes once no call is in flight.
    private func idleTimedOut() {
        guard let context = self.context else { return }
        self.goAway(.unavailable, "connection idle for \(self.configuration.idleTimeout)", close: false)
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: Self.idleGoAwayGrace) {
            this.value.draining = true
            this.value.closeIfDrained()
        }
    }

    /// How long a connection that was sent GOAWAY for idleness still serves late requests.
    static let idleGoAwayGrace = TimeAmount.seconds(1)

    // MARK: Calls

    private func startCall(_ frame: WireFrame) {
        let callID = frame.callID
        guard callID != 0 else {
            self.goAway(.invalidArgument, "REQUEST with call_id 0 (reserved for connection frames)", close: true)
            return
        }
        guard !frame.method.isEmpty else {
            self.goAway(.invalidArgument, "REQUEST without method", close: true)
            return
        }
        guard self.calls[callID] == nil else {
            self.goAway(.invalidArgument, "call_id \(callID) is already in flight", close: true)
            return
        }
        if self.draining {
            // It crossed our GOAWAY: the caller may send it to another server.
            self.refuseUnrun(callID, RPCError(.unavailable, "server is shutting down; call another"))
            return
        }
        guard self.unfinishedCalls < self.configuration.maxConcurrentCallsPerConnection else {
            // A client with another connection may send it there.
            let limit = self.configuration.maxConcurrentCallsPerConnection
            self.refuseUnrun(
                callID,
                RPCError(.resourceExhausted, "more than \(limit) calls in flight on this connection")
            )
            return
        }
        guard frame.metadata.count <= Metadata.maxEntries else {
            self.respond(
                callID,
                .failure(RPCError(.invalidArgument, "more than \(Metadata.maxEntries) metadata entries"))
            )
            return
        }
        let route: Route
        let metadata = Metadata(entries: frame.metadata)
        switch self.router.route(for: frame.method, metadata: metadata) {
        case .success(let found):
            route = found
        case .failure(let error):
            self.respond(callID, .failure(error))
            return
        }
        guard let context = self.context, let executor = self.executor else { return }

        let deadline: NIODeadline? = frame.timeoutMs > 0 ? .now() + .milliseconds(Int64(frame.timeoutMs)) : nil
        let callContext = RPCContext(
            method: frame.method,
            metadata: metadata,
            deadline: deadline,
            peer: self.peer,
            callID: callID,
            connectionTag: self.connectionTag,
            logger: self.logger
        )

        let loop = context.eventLoop
        let generation = self.nextGeneration
        self.nextGeneration &+= 1
        self.calls[callID] = InFlightCall(generation: generation)
        if let deadline {
            self.addDeadline(deadline, for: CallKey(callID: callID, generation: generation))
        }
        self.callsInFlight.add(1)
        self.unfinishedCalls += 1
        let finish: @Sendable (Result<Data, any Error>) -> Void = {
            [this = NIOLoopBound(self, eventLoop: loop)] result in
            if loop.inEventLoop {
                this.value.finishCall(callID, generation: generation, result)
            } else {
                loop.execute { this.value.finishCall(callID, generation: generation, result) }
            }
        }
        let work: Work
        switch route {
        case .handler(let handler):
            let payload = frame.payload
            work = .task(
                Task.immediate(executorPreference: executor) {
                    do {
                        // Reads on this loop hold its deadline timer: they look at the deadline.
                        let answer = try await CallDeadline.during(deadline?.uptimeNanoseconds) {
                            try await handler(payload, callContext)
                        }
                        finish(.success(answer))
                    } catch {
                        finish(.failure(error))
                    }
                }
            )
        case .forwarder(let forwarder):
            let forwarded = forwarder.forward(frame.payload, context: callContext, on: loop)
            forwarded.response.whenComplete(finish)
            work = .forwarded(forwarded)
        }
        // Started at once, on this loop: a call that never suspends has already been answered,
        // one that waits goes on from this loop.
        if self.calls[callID]?.generation == generation {
            self.calls[callID]?.work = work
        } else {
            // Answered already (stopping it does nothing), or its connection closed while it
            // started (a failed flush): stop it, so that a forwarded call is cancelled upstream.
            work.cancel()
        }
    }

    private func finishCall(_ callID: UInt64, generation: UInt64, _ result: Result<Data, any Error>) {
        self.unfinishedCalls -= 1
        // Gone when the deadline passed or the caller cancelled (the id may even be in use by
        // a newer call): no second answer.
        guard self.removeCall(callID, generation: generation) != nil else { return }
        self.respond(callID, result)
        self.closeIfDrained()
    }

    private func addDeadline(_ deadline: NIODeadline, for key: CallKey) {
        guard let loop = self.context?.eventLoop else { return }
        self.deadlines.add(
            key,
            deadline: deadline,
            liveCalls: self.calls.count,
            isGone: { self.calls[$0.callID]?.generation != $0.generation },
            loop: loop,
            fire: { [this = NIOLoopBound(self, eventLoop: loop)] in this.value.deadlinesDue() }
        )
    }

    private func deadlinesDue() {
        for key in self.deadlines.takeDue() {
            self.deadlinePassed(key.callID, generation: key.generation)
        }
    }

    private func deadlinePassed(_ callID: UInt64, generation: UInt64) {
        guard let call = self.removeCall(callID, generation: generation) else { return }
        call.work?.cancel()
        self.respond(callID, .failure(RPCError(.deadlineExceeded, "deadline exceeded")))
        self.closeIfDrained()
    }

    private func cancelCall(_ callID: UInt64) {
        guard let call = self.calls.removeValue(forKey: callID) else { return }
        self.callsInFlight.add(-1)
        call.work?.cancel()
        self.closeIfDrained()
    }

    private func removeCall(_ callID: UInt64, generation: UInt64) -> InFlightCall? {
        guard let call = self.calls[callID], call.generation == generation else { return nil }
        self.calls.removeValue(forKey: callID)
        self.callsInFlight.add(-1)
        return call
    }

    private func cancelAll() {
        // Emptied first: cancelling runs cancellation handlers, which must find no call left.
        let calls = self.calls
        self.calls.removeAll()
        self.callsInFlight.add(-calls.count)
        self.deadlines.cancelAll()
        for call in calls.values {
            call.work?.cancel()
        }
    }

    // MARK: Outbound

    /// Answers a call it ran none of with `error`, marked ``TrustedMetadata/notRun``: safe for
    /// the caller to send again, elsewhere.
    private func refuseUnrun(_ callID: UInt64, _ error: RPCError) {
        self.respond(callID, .failure(error), metadata: [TrustedMetadata.notRun: "1"])
    }

    private func respond(_ callID: UInt64, _ result: Result<Data, any Error>, metadata: Metadata? = nil) {
        var frame = WireFrame()
        frame.callID = callID
        frame.kind = .response
        if let metadata { frame.metadata = metadata.entries }
        switch result {
        case .success(let payload) where payload.count > self.configuration.maxFrameSize - Self.envelopeAllowance:
            let limit = self.configuration.maxFrameSize
            frame.status =
                RPCError(.resourceExhausted, "response of \(payload.count) bytes exceeds the frame limit of \(limit)")
                .wireStatus
        case .success(let payload):
            frame.payload = payload
        case .failure(let error):
            let rpcError = RPCError(answering: error)
            if let cause = rpcError.cause, rpcError.code == .internal || cause is any StorageFailure {
                self.logger.error(
                    "call failed",
                    metadata: ["call-id": "\(callID)", "peer": "\(self.peer)", "error": "\(String(reflecting: cause))"]
                )
                self.health?.noteFailure(cause, logger: self.logger)
            }
            frame.status = rpcError.wireStatus
        }
        self.write(frame)
    }

    /// Room left in a frame for everything but the payload of a response: its call id, kind
    /// and status come to well under 64 bytes (a request, which carries metadata, is measured
    /// whole: `WireFrame.encodedSize`).
    static let envelopeAllowance = 64

    private func write(_ frame: WireFrame) {
        guard let context = self.context, context.write(frame: frame) else { return }
        let flushed = context.carryOut(
            self.flushes.wrote(),
            endOfTick: { [this = NIOLoopBound(self, eventLoop: context.eventLoop)] in this.value.endOfTick() }
        )
        if flushed { self.lastActivity = .now() }
    }

    private func endOfTick() {
        guard self.flushes.tickEnded() else { return }
        self.lastActivity = .now()
        self.context?.flush()
    }

    /// Sends GOAWAY with its reason; with `close`, closes the connection once it is written
    /// (in-flight calls are cancelled), otherwise leaves draining to ``closeIfDrained()``.
    private func goAway(_ code: StatusCode, _ reason: String, close: Bool) {
        guard let context = self.context else { return }
        var frame = WireFrame()
        frame.kind = .goaway
        frame.status = RPCError(code, reason).wireStatus
        guard close else {
            self.write(frame)
            if self.flushes.takeUnflushed() { context.flush() }
            return
        }
        guard !self.closing else { return }
        self.closing = true
        self.logger.debug("closing connection", metadata: ["peer": "\(self.peer)", "reason": "\(reason)"])
        self.cancelAll()
        self.write(frame)
        _ = self.flushes.takeUnflushed()
        self.closeAfterFlush(context: context)
    }

    /// Flushes what is queued and closes once it is written, or after `closeWriteBound` if the
    /// peer does not read it (a full send buffer must not keep the connection open forever).
    private func closeAfterFlush(context: ChannelHandlerContext) {
        let channel = context.channel
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(ByteBuffer()), promise: flushed)
        flushed.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: Self.closeWriteBound) { channel.close(promise: nil) }
    }

    /// How long a closing connection may take to write its last frames.
    static let closeWriteBound = TimeAmount.seconds(5)

    private func closeIfDrained() {
        guard self.draining, !self.awaitingDrainPong, self.calls.isEmpty, !self.closing, let context = self.context
        else { return }
        self.closing = true
        _ = self.flushes.takeUnflushed()
        self.closeAfterFlush(context: context)
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
        readingTime: ReadingTime = ReadingTime(),
        health: HealthState? = nil,
        logger: Logger
    ) throws {
        try self.addHandler(
            ByteToMessageHandler(
                LengthPrefixedFrameDecoder(
                    maxFrameSize: configuration.maxFrameSize,
                    budget: partialFrames,
                    pace: configuration.framePace,
                    readingTime: readingTime
                )
            )
        )
        try self.addHandler(
            ServerConnectionHandler(
                router: router,
                configuration: configuration,
                callsInFlight: callsInFlight,
                readingTime: readingTime,
                health: health,
                logger: logger
            )
        )
    }
}
