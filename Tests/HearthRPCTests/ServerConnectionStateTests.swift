import NIOCore
import Testing

@testable import HearthRPC

/// A server connection's lifecycle as a table: events in, one action out, no channel.
@Suite("Server connection lifecycle")
struct ServerConnectionStateTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    let timeout = TimeAmount.seconds(300)

    @Test("a drain sends GOAWAY and PING once, refuses new calls, and closes after the PONG and the last call")
    func drain() {
        var state = ServerConnectionState()
        #expect(state.admit() == .take)
        #expect(state.drainRequested() == .sendDrainGoAway)
        #expect(state.drainRequested() == .none, "once")
        #expect(state.admit() == .refuse && state.readsFrames)
        #expect(
            state.pongReceived(connectionPing: false, callsInFlight: 0) == .none,
            "a call's PONG is not the drain's"
        )
        #expect(state.pongReceived(connectionPing: true, callsInFlight: 2) == .none, "calls still in flight")
        #expect(state.callEnded(callsInFlight: 1) == .none)
        #expect(state.callEnded(callsInFlight: 0) == .close(.drained))
        #expect(!state.readsFrames)
    }

    @Test("with no PONG, the drain closes once its wait passes; with no call in flight, at once")
    func drainWithoutPong() {
        var state = ServerConnectionState()
        _ = state.drainRequested()
        #expect(state.callEnded(callsInFlight: 0) == .none, "a REQUEST may still be on its way before the PONG")
        #expect(state.drainPongWaitEnded(callsInFlight: 0) == .close(.drained))
        var answered = ServerConnectionState()
        _ = answered.drainRequested()
        #expect(answered.pongReceived(connectionPing: true, callsInFlight: 0) == .close(.drained))
    }

    @Test("a peer's GOAWAY: calls in flight finish, then the connection closes; no new call is taken")
    func peerGoAway() {
        var state = ServerConnectionState()
        #expect(state.peerWentAway(callsInFlight: 1) == .none)
        #expect(state.admit() == .refuse)
        #expect(state.callEnded(callsInFlight: 0) == .close(.drained))
        var idle = ServerConnectionState()
        #expect(idle.peerWentAway(callsInFlight: 0) == .close(.drained))
    }

    @Test("the drain's time running out closes, answering the calls in flight; once")
    func drainTimeout() {
        var state = ServerConnectionState()
        _ = state.drainRequested()
        #expect(state.drainTimedOut() == .close(.drainTimedOut))
        #expect(state.drainTimedOut() == .none)
        #expect(state.protocolError(.invalidArgument, "late") == .none, "closing already")
    }

    @Test("idle: checked again at the idle time, or a timeout later while calls run; then GOAWAY, grace, close")
    func idle() {
        var state = ServerConnectionState()
        let lastActivity = self.start
        let early = self.start + .seconds(100)
        #expect(
            state.idleCheckDue(now: early, lastActivity: lastActivity, idleTimeout: self.timeout, callsInFlight: 0)
                == .checkIdle(at: self.start + self.timeout)
        )
        let due = self.start + self.timeout
        #expect(
            state.idleCheckDue(now: due, lastActivity: lastActivity, idleTimeout: self.timeout, callsInFlight: 1)
                == .checkIdle(at: due + self.timeout),
            "a call in flight is no idleness"
        )
        #expect(
            state.idleCheckDue(now: due, lastActivity: lastActivity, idleTimeout: self.timeout, callsInFlight: 0)
                == .sendIdleGoAway
        )
        #expect(state.state == .serving(idleGoAwaySent: true))
        #expect(state.admit() == .take, "a request that crossed the GOAWAY is served during the grace")
        #expect(
            state.idleCheckDue(now: due, lastActivity: lastActivity, idleTimeout: self.timeout, callsInFlight: 0)
                == .none
        )
        #expect(state.idleGraceEnded(callsInFlight: 1) == .none)
        #expect(state.admit() == .refuse)
        #expect(state.callEnded(callsInFlight: 0) == .close(.drained))
    }

    @Test("a drain after an idle GOAWAY still sends its own GOAWAY and PING; a drained connection checks no idleness")
    func drainAfterIdle() {
        var state = ServerConnectionState()
        let due = self.start + self.timeout
        _ = state.idleCheckDue(now: due, lastActivity: self.start, idleTimeout: self.timeout, callsInFlight: 0)
        #expect(state.drainRequested() == .sendDrainGoAway)
        #expect(state.idleGraceEnded(callsInFlight: 0) == .none, "the drain's PONG is still awaited")
        #expect(
            state.idleCheckDue(
                now: due + self.timeout,
                lastActivity: self.start,
                idleTimeout: self.timeout,
                callsInFlight: 0
            )
                == .none
        )
    }

    @Test("a protocol error closes at once, with its reason, and stops reading frames; later events do nothing")
    func protocolError() {
        var state = ServerConnectionState()
        #expect(state.protocolError(.invalidArgument, "bad") == .close(.protocolError(.invalidArgument, "bad")))
        #expect(!state.readsFrames)
        #expect(state.drainRequested() == .none)
        #expect(state.peerWentAway(callsInFlight: 0) == .none)
        #expect(state.callEnded(callsInFlight: 0) == .none)
        #expect(state.protocolError(.resourceExhausted, "again") == .none)
    }

    @Test(
        "the authentication window closes a connection no call has authenticated on; with a call in flight, after its answer"
    )
    func authenticationWindow() {
        let reason = "no authenticated call within \(TimeAmount.seconds(10)) of connecting"
        var silent = ServerConnectionState()
        #expect(
            silent.authenticationWindowEnded(.seconds(10), callsInFlight: 0)
                == .close(.protocolError(.unauthenticated, reason))
        )
        #expect(!silent.readsFrames)
        var slow = ServerConnectionState()
        #expect(slow.authenticationWindowEnded(.seconds(10), callsInFlight: 1) == .sendGoAway(.unauthenticated, reason))
        #expect(slow.admit() == .refuse, "no new call once the window has passed")
        #expect(slow.callEnded(callsInFlight: 0) == .close(.drained))
        var authenticated = ServerConnectionState()
        authenticated.callAuthenticated()
        #expect(authenticated.authenticationWindowEnded(.seconds(10), callsInFlight: 0) == .none)
        #expect(authenticated.admit() == .take)
        var draining = ServerConnectionState()
        _ = draining.drainRequested()
        #expect(
            draining.authenticationWindowEnded(.seconds(10), callsInFlight: 0) == .none,
            "the drain goes on as it was"
        )
        var closed = ServerConnectionState()
        _ = closed.protocolError(.invalidArgument, "bad")
        #expect(closed.authenticationWindowEnded(.seconds(10), callsInFlight: 0) == .none, "closing already")
    }
}

/// What a peer's connections are counted under for the per-address cap.
@Suite("Peer address keys")
struct PeerAddressKeyTests {
    @Test("IPv4 by address, IPv4-mapped IPv6 folded into it, IPv6 by its /64")
    func keys() throws {
        #expect(PeerAddressKey.of(try SocketAddress(ipAddress: "203.0.113.7", port: 1)) == "203.0.113.7")
        #expect(PeerAddressKey.of(try SocketAddress(ipAddress: "::ffff:203.0.113.7", port: 1)) == "203.0.113.7")
        #expect(PeerAddressKey.of(try SocketAddress(ipAddress: "2001:db8:1:2:3:4:5:6", port: 1)) == "2001:db8:1:2::/64")
        #expect(PeerAddressKey.of(try SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 1)) == "2001:db8:1:2::/64")
        #expect(PeerAddressKey.of(nil) == "unknown")
    }
}
