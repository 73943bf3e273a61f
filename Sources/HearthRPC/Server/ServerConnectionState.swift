import NIOCore

/// The lifecycle of one server connection: serving, told to go for idleness, draining (behind
/// a GOAWAY and its PING), closing. Events in, one action out; no channel and no clock (times
/// come with the events). ``ServerConnectionHandler`` carries the actions out and keeps the
/// calls; it asks here whether a frame is read, whether a call is taken, and when to close.
struct ServerConnectionState {
    enum State: Equatable {
        /// Taking calls. `idleGoAwaySent`: the peer was told to go for idleness; requests that
        /// crossed that GOAWAY are still served for a grace period.
        case serving(idleGoAwaySent: Bool)
        /// Taking no new call; closes once none is in flight and, when the drain sent a PING
        /// behind its GOAWAY (`awaitingPong`), that PING was answered or its wait passed (a
        /// REQUEST the peer sent before it read the GOAWAY arrives before the PONG).
        case draining(awaitingPong: Bool)
        /// Closing: every later frame is ignored.
        case closing
    }

    enum Action: Equatable {
        case none
        /// Send GOAWAY UNAVAILABLE ("server is shutting down") and a PING behind it, flush, and
        /// report ``drainPongWaitEnded(callsInFlight:)`` after the configured wait.
        case sendDrainGoAway
        /// Send GOAWAY UNAVAILABLE for idleness and report ``idleGraceEnded(callsInFlight:)``
        /// after the grace.
        case sendIdleGoAway
        /// Report ``idleCheckDue(now:lastActivity:idleTimeout:callsInFlight:)`` at this time.
        case checkIdle(at: NIODeadline)
        /// Send GOAWAY with this reason; the connection drains (its calls in flight are answered).
        case sendGoAway(StatusCode, String)
        /// Close the connection once what is queued is written.
        case close(CloseReason)
    }

    enum CloseReason: Equatable {
        /// Drained: nothing is in flight.
        case drained
        /// The peer broke the protocol: cancel the calls in flight, and say why in a GOAWAY.
        case protocolError(StatusCode, String)
        /// The drain's time ran out: answer each call still in flight UNAVAILABLE (it may
        /// have done part of its work), so that no REQUEST goes unanswered.
        case drainTimedOut
    }

    /// What becomes of a REQUEST that arrives.
    enum Admission: Equatable {
        case take
        /// It crossed our GOAWAY: answered UNAVAILABLE, marked as never run.
        case refuse
    }

    private(set) var state = State.serving(idleGoAwaySent: false)
    /// Whether a call that proves who is calling (not a health check) has completed.
    private(set) var authenticated = false

    /// Whether frames that arrive are read at all.
    var readsFrames: Bool { self.state != .closing }

    /// A REQUEST arrived (frames are read: ``readsFrames``).
    func admit() -> Admission {
        if case .serving = self.state { return .take }
        return .refuse
    }

    // MARK: Draining

    /// The server is shutting down.
    mutating func drainRequested() -> Action {
        guard case .serving = self.state else { return .none }
        self.state = .draining(awaitingPong: true)
        return .sendDrainGoAway
    }

    /// A PONG arrived; `connectionPing`: to a PING of the connection's own (call id 0).
    mutating func pongReceived(connectionPing: Bool, callsInFlight: Int) -> Action {
        guard connectionPing, self.state == .draining(awaitingPong: true) else { return .none }
        self.state = .draining(awaitingPong: false)
        return self.closeIfDrained(callsInFlight: callsInFlight)
    }

    /// The drain's PING went unanswered for the configured wait.
    mutating func drainPongWaitEnded(callsInFlight: Int) -> Action {
        if self.state == .draining(awaitingPong: true) { self.state = .draining(awaitingPong: false) }
        return self.closeIfDrained(callsInFlight: callsInFlight)
    }

    /// The peer sent GOAWAY: it sends no new call; what is in flight finishes, then it closes.
    mutating func peerWentAway(callsInFlight: Int) -> Action {
        self.stopTakingCalls()
        return self.closeIfDrained(callsInFlight: callsInFlight)
    }

    /// The drain's time ran out.
    mutating func drainTimedOut() -> Action {
        guard self.state != .closing else { return .none }
        self.state = .closing
        return .close(.drainTimedOut)
    }

    /// A call ended (answered, cancelled or past its deadline).
    mutating func callEnded(callsInFlight: Int) -> Action {
        self.closeIfDrained(callsInFlight: callsInFlight)
    }

    // MARK: Idleness

    /// The idle timer fired: idle means no call in flight and nothing read or answered for
    /// `idleTimeout`. One timer per connection, moved forward lazily, instead of a clock read
    /// on every read and write.
    mutating func idleCheckDue(
        now: NIODeadline,
        lastActivity: NIODeadline,
        idleTimeout: TimeAmount,
        callsInFlight: Int
    ) -> Action {
        guard self.state == .serving(idleGoAwaySent: false) else { return .none }
        let idleAt = lastActivity + idleTimeout
        guard callsInFlight == 0, idleAt <= now else {
            return .checkIdle(at: callsInFlight == 0 ? idleAt : now + idleTimeout)
        }
        self.state = .serving(idleGoAwaySent: true)
        return .sendIdleGoAway
    }

    /// The grace after an idle GOAWAY passed: the connection drains.
    mutating func idleGraceEnded(callsInFlight: Int) -> Action {
        self.stopTakingCalls()
        return self.closeIfDrained(callsInFlight: callsInFlight)
    }

    // MARK: Authentication

    /// A call that proves who is calling completed: it passed authentication (whatever its
    /// answer then was).
    mutating func callAuthenticated() {
        self.authenticated = true
    }

    /// The connection has been open for the configured window: it goes unless a call proved who
    /// is calling (a host must not hold slots with connections that never authenticate). With
    /// calls still in flight (a slow first call), it takes no new one, answers those, then closes.
    mutating func authenticationWindowEnded(_ window: TimeAmount, callsInFlight: Int) -> Action {
        guard !self.authenticated, case .serving = self.state else { return .none }
        let reason = "no authenticated call within \(window) of connecting"
        guard callsInFlight > 0 else {
            self.state = .closing
            return .close(.protocolError(.unauthenticated, reason))
        }
        self.state = .draining(awaitingPong: false)
        return .sendGoAway(.unauthenticated, reason)
    }

    // MARK: Errors

    /// The peer broke the protocol (or sent frames too big, too many or too slow).
    mutating func protocolError(_ code: StatusCode, _ reason: String) -> Action {
        guard self.state != .closing else { return .none }
        self.state = .closing
        return .close(.protocolError(code, reason))
    }

    private mutating func stopTakingCalls() {
        if case .serving = self.state { self.state = .draining(awaitingPong: false) }
    }

    private mutating func closeIfDrained(callsInFlight: Int) -> Action {
        guard self.state == .draining(awaitingPong: false), callsInFlight == 0 else { return .none }
        self.state = .closing
        return .close(.drained)
    }
}
