import Foundation
import HearthCore
import HearthRPC
import Logging
import NIOCore
import Synchronization

/// When a replica that keeps failing is taken out of rotation, and for how long. Failures are
/// connections it refused or let time out, and health checks it left unanswered.
public struct EjectionPolicy: Sendable {
    /// Consecutive failures that eject a replica.
    public var consecutiveFailures: Int
    /// How long an ejected replica stays out before a health check may readmit it.
    public var duration: Duration
    /// How long a health check waits for SERVING. A replica that let a call's deadline pass
    /// unanswered is checked, at most once per this long.
    public var healthCheckTimeout: Duration

    public init(
        consecutiveFailures: Int = 5,
        duration: Duration = .seconds(30),
        healthCheckTimeout: Duration = .seconds(1)
    ) {
        self.consecutiveFailures = consecutiveFailures
        self.duration = duration
        self.healthCheckTimeout = healthCheckTimeout
    }
}

/// One backend replica: its connections, and its standing with the gateway.
final class Replica: Sendable {
    private struct Standing {
        var consecutiveFailures = 0
        var ejectedUntil: ContinuousClock.Instant?
        var lastCheckAfterUnansweredCall: ContinuousClock.Instant?
        var finishedChecksAfterUnansweredCalls = 0
    }

    let address: String
    /// The host it was configured by: a host name it is one address of, or that address.
    let origin: String
    /// A client per event loop, its connections on that loop: a call goes out on the thread it
    /// came in on, so forwarding it wakes no other thread.
    private let clients: [(loop: any EventLoop, client: RPCClient)]
    private let policy: EjectionPolicy
    private let standing = Mutex(Standing())
    /// Calls sent to it that have not ended; below zero once it is closing (it takes no more).
    /// One that leaves the pool is closed once none is in flight.
    private let inFlight = Atomic<Int>(0)
    private static let closing = Int.min / 2

    /// - Parameters:
    ///   - connections: connections to the replica from each of `loops`.
    ///   - extraConnections: further connections from each loop, opened when those hold
    ///     `callsPerConnection` calls each.
    ///   - connectTimeout: how long a connection may take before it counts as failed.
    ///   - maxRequestFrameSize: the largest request sent (DESIGN's 4 MiB unless the route's
    ///     service takes more); answers are taken up to `maxFrameSize`.
    init(
        host: String,
        port: Int,
        origin: String? = nil,
        connections: Int,
        extraConnections: Int = 0,
        callsPerConnection: Int = ServerConfiguration.defaultMaxConcurrentCallsPerConnection,
        connectTimeout: Duration,
        maxFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
        maxRequestFrameSize: Int = ServerConfiguration.defaultMaxFrameSize,
        policy: EjectionPolicy,
        loops: [any EventLoop]
    ) {
        precondition(!loops.isEmpty, "a replica needs an event loop")
        self.address = Self.address(host: host, port: port)
        self.origin = origin ?? host
        self.clients = loops.map { loop in
            // Short backoff: a restarted backend should be used again within about a second.
            let client = RPCClient(
                configuration: .init(
                    host: host,
                    port: port,
                    connections: connections,
                    extraConnections: extraConnections,
                    maxCallsPerConnection: callsPerConnection,
                    maxFrameSize: maxFrameSize,
                    maxRequestFrameSize: maxRequestFrameSize,
                    connectTimeout: .nanoseconds(connectTimeout.nanoseconds),
                    backoff: Backoff(initial: .milliseconds(50), maximum: .seconds(1))
                ),
                group: loop
            )
            return (loop, client)
        }
        self.policy = policy
    }

    /// The client whose connections live on `loop`; the first one for a loop of another group.
    func client(on loop: any EventLoop) -> RPCClient {
        let id = ObjectIdentifier(loop)
        return self.clients.first { ObjectIdentifier($0.loop) == id }?.client ?? self.clients[0].client
    }

    /// Whether the replica answers SERVING to a health check, asked on one of its clients.
    func isServing() async -> Bool {
        let status = try? await HealthClient(client: self.clients[0].client).check(
            options: CallOptions(timeout: self.policy.healthCheckTimeout)
        )
        return status == .serving
    }

    func close() async {
        for (_, client) in self.clients { await client.close() }
    }

    /// `HOST:PORT`, an IPv6 address in brackets.
    static func address(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Counts a call about to be sent to it; false once it is closing (the call goes elsewhere).
    func callStarted() -> Bool {
        var current = self.inFlight.load(ordering: .acquiring)
        while current >= 0 {
            let (exchanged, found) = self.inFlight.compareExchange(
                expected: current,
                desired: current + 1,
                ordering: .acquiringAndReleasing
            )
            if exchanged { return true }
            current = found
        }
        return false
    }

    func callEnded() { self.inFlight.subtract(1, ordering: .acquiringAndReleasing) }

    /// Marks it closing if no call is in flight, or whatever is in flight when `force`d: no call
    /// starts on it after. Answers whether it was marked now (then close it).
    func markClosing(force: Bool) -> Bool {
        if force {
            return self.inFlight.exchange(Self.closing, ordering: .acquiringAndReleasing) >= 0
        }
        return self.inFlight.compareExchange(expected: 0, desired: Self.closing, ordering: .acquiringAndReleasing)
            .exchanged
    }

    var isEjected: Bool { self.standing.withLock { $0.ejectedUntil != nil } }

    /// Whether a call it got but left unanswered past its deadline should be followed by a
    /// health check now: at most one per `healthCheckTimeout`, so short deadlines that pass
    /// often on a healthy replica cost one check a second, not one per call.
    func startsCheckAfterUnansweredCall(now: ContinuousClock.Instant) -> Bool {
        self.standing.withLock { standing in
            if let last = standing.lastCheckAfterUnansweredCall, now < last + self.policy.healthCheckTimeout {
                return false
            }
            standing.lastCheckAfterUnansweredCall = now
            return true
        }
    }

    /// Health checks after unanswered calls that have finished (for tests).
    var finishedChecksAfterUnansweredCalls: Int { self.standing.withLock { $0.finishedChecksAfterUnansweredCalls } }

    /// Asks whether it still serves after it left a call unanswered; unanswered too, counts a
    /// failure. Returns true when that ejects it.
    func checkAfterUnansweredCall() async -> Bool {
        let serving = await self.isServing()
        return self.standing.withLock { standing in
            standing.finishedChecksAfterUnansweredCalls += 1
            guard serving else { return Self.countFailure(&standing, policy: self.policy, now: .now) }
            // It answered: alive, and slow for that call only.
            standing.consecutiveFailures = 0
            return false
        }
    }

    /// Failures in a row (for tests).
    var consecutiveFailures: Int { self.standing.withLock { $0.consecutiveFailures } }

    /// Whether the ejection is over and a health check may readmit it.
    func isDueForReadmission(now: ContinuousClock.Instant) -> Bool {
        self.standing.withLock { standing in standing.ejectedUntil.map { $0 <= now } ?? false }
    }

    func recordSuccess() {
        self.standing.withLock { $0.consecutiveFailures = 0 }
    }

    /// Counts a failure (to connect, or to answer a health check); returns true when it ejects
    /// the replica.
    func recordFailure(now: ContinuousClock.Instant) -> Bool {
        self.standing.withLock { Self.countFailure(&$0, policy: self.policy, now: now) }
    }

    private static func countFailure(_ standing: inout Standing, policy: EjectionPolicy, now: ContinuousClock.Instant)
        -> Bool
    {
        standing.consecutiveFailures += 1
        guard standing.ejectedUntil == nil, standing.consecutiveFailures >= policy.consecutiveFailures else {
            return false
        }
        standing.ejectedUntil = now + policy.duration
        return true
    }

    func readmit() {
        self.standing.withLock { $0 = Standing() }
    }
}
