import Foundation
import HearthCore
import Logging
import NIOCore
import SwiftProtobuf
import Synchronization

// The calls of a server connection: starting each, its deadline, CANCEL, and its end.
extension ServerConnectionHandler {
    func startCall(_ frame: WireFrame) {
        let callID = frame.callID
        guard callID != 0 else {
            self.perform(
                self.lifecycle.protocolError(
                    .invalidArgument,
                    "REQUEST with call_id 0 (reserved for connection frames)"
                )
            )
            return
        }
        guard !frame.method.isEmpty else {
            self.perform(self.lifecycle.protocolError(.invalidArgument, "REQUEST without method"))
            return
        }
        guard self.calls[callID] == nil else {
            self.perform(self.lifecycle.protocolError(.invalidArgument, "call_id \(callID) is already in flight"))
            return
        }
        if self.lifecycle.admit() == .refuse {
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

        let deadline: NIODeadline? =
            frame.timeoutMs > 0 ? context.eventLoop.now + .milliseconds(Int64(frame.timeoutMs)) : nil
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
        self.calls[callID] = InFlightCall(
            generation: generation,
            mayAuthenticate: !self.lifecycle.authenticated && !self.router.isPublic(frame.method)
        )
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

    func finishCall(_ callID: UInt64, generation: UInt64, _ result: Result<Data, any Error>) {
        self.unfinishedCalls -= 1
        // Gone when the deadline passed or the caller cancelled (the id may even be in use by
        // a newer call): no second answer.
        guard let call = self.removeCall(callID, generation: generation) else { return }
        if call.mayAuthenticate, !Self.failedAuthentication(result) {
            self.lifecycle.callAuthenticated()
            self.frameLimitUntilAuthenticated?.lift()
            self.authenticationCheck?.cancel()
            self.authenticationCheck = nil
        }
        self.respond(callID, result)
        self.perform(self.lifecycle.callEnded(callsInFlight: self.calls.count))
    }

    /// Whether a call was refused for who is calling. Any other answer proves they are who
    /// they say (the gateway checks the token before anything else; a service's router checks
    /// the caller's credential before a call starts), PERMISSION_DENIED included.
    static func failedAuthentication(_ result: Result<Data, any Error>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return RPCError(answering: error).code == .unauthenticated
    }

    func addDeadline(_ deadline: NIODeadline, for key: CallKey) {
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

    func deadlinesDue() {
        for key in self.deadlines.takeDue() {
            self.deadlinePassed(key.callID, generation: key.generation)
        }
    }

    func deadlinePassed(_ callID: UInt64, generation: UInt64) {
        guard let call = self.removeCall(callID, generation: generation) else { return }
        call.work?.cancel()
        self.respond(callID, .failure(RPCError(.deadlineExceeded, "deadline exceeded")))
        self.perform(self.lifecycle.callEnded(callsInFlight: self.calls.count))
    }

    func cancelCall(_ callID: UInt64) {
        guard let call = self.calls.removeValue(forKey: callID) else { return }
        self.callsInFlight.add(-1)
        call.work?.cancel()
        self.perform(self.lifecycle.callEnded(callsInFlight: self.calls.count))
    }

    func removeCall(_ callID: UInt64, generation: UInt64) -> InFlightCall? {
        guard let call = self.calls[callID], call.generation == generation else { return nil }
        self.calls.removeValue(forKey: callID)
        self.callsInFlight.add(-1)
        return call
    }

    func cancelAll() {
        // Emptied first: cancelling runs cancellation handlers, which must find no call left.
        let calls = self.calls
        self.calls.removeAll()
        self.callsInFlight.add(-calls.count)
        self.deadlines.cancelAll()
        for call in calls.values {
            call.work?.cancel()
        }
    }
}
