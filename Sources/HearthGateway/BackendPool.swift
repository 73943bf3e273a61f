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
    /// A client per event loop, its connections on that loop: a call goes out on the thread it
    /// came in on, so forwarding it wakes no other thread.
    private let clients: [(loop: any EventLoop, client: RPCClient)]
    private let policy: EjectionPolicy
    private let standing = Mutex(Standing())

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
        self.address = "\(host):\(port)"
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

/// What a forwarded call sends to whichever replica takes it.
struct ForwardedRequest: Sendable {
    var method: String
    var payload: Data
    var metadata: Metadata
    /// One deadline for every attempt, however many replicas it takes.
    var deadline: NIODeadline
}

/// The attempt of a forwarded call in flight now, so that cancelling the call stops whichever
/// replica has it.
final class CurrentAttempt: Sendable {
    private let state = Mutex<(call: StartedCall?, cancelled: Bool)>((nil, false))

    /// Makes `call` the one in flight, or cancels it at once when the forwarded call was.
    func replace(with call: StartedCall) {
        let cancelled = self.state.withLock { state in
            if !state.cancelled { state.call = call }
            return state.cancelled
        }
        if cancelled { call.cancel() }
    }

    var isCancelled: Bool { self.state.withLock { $0.cancelled } }

    func cancel() {
        let call = self.state.withLock { state in
            state.cancelled = true
            return state.call
        }
        call?.cancel()
    }
}

/// The replicas of one service, used round-robin. A call that certainly never reached a
/// replica (no connection) is tried once more on another; one that may have reached it is
/// never retried.
final class BackendPool: Sendable {
    /// The method prefix this pool serves, e.g. `hearth.echo.`.
    let prefix: String
    /// What its replicas require in `x-hearth-internal`.
    let credential: String
    let replicas: [Replica]
    private let turn = Atomic<Int>(0)
    private let logger: Logger

    init(prefix: String, credential: String, replicas: [Replica], logger: Logger) {
        self.prefix = prefix
        self.credential = credential
        self.replicas = replicas
        self.logger = logger
    }

    /// Sends a call to a replica: without a task when the replica's connection is ready.
    func startOnReplica(_ request: ForwardedRequest, on loop: any EventLoop) -> StartedCall {
        let answer = loop.makePromise(of: Data.self)
        let current = CurrentAttempt()
        self.attempt(request, tried: [], answer: answer, current: current)
        return StartedCall(response: answer.futureResult, cancel: current.cancel)
    }

    /// Tries the next replica in turn that is not in `tried` (or `again`, once more); a call it
    /// certainly never got is tried once more on another.
    private func attempt(
        _ request: ForwardedRequest,
        tried: [Int],
        again: Int? = nil,
        answer: EventLoopPromise<Data>,
        current: CurrentAttempt
    ) {
        guard !current.isCancelled else {
            answer.fail(RPCError(.cancelled, "the call was cancelled"))
            return
        }
        let startedAt = NIODeadline.now()
        let left = request.deadline - startedAt
        guard left > .zero else {
            answer.fail(RPCError(.deadlineExceeded, "deadline exceeded"))
            return
        }
        let loop = answer.futureResult.eventLoop
        guard let index = again ?? (tried.count < 2 ? self.pick(excluding: tried, on: loop) : nil) else {
            answer.fail(
                RPCError(
                    .unavailable,
                    "\(self.prefix.dropLast()) is unavailable; try again shortly",
                    retryAfter: .milliseconds(200)
                )
            )
            return
        }
        let replica = self.replicas[index]
        let call = replica.client(on: loop).start(
            request.method,
            payload: request.payload,
            metadata: request.metadata,
            timeout: .nanoseconds(left.nanoseconds),
            on: loop
        )
        current.replace(with: call)
        call.response.whenComplete { result in
            switch result {
            case .success(let payload):
                replica.recordSuccess()
                answer.succeed(payload)
            case .failure(let error as RPCError) where error.refusedForConnectionLimit:
                // It answered, running none of it: its connection was full. Once more, on another
                // of its connections (the client now passes that one over); then the refusal.
                replica.recordSuccess()
                if again == nil {
                    self.attempt(request, tried: tried, again: index, answer: answer, current: current)
                    return
                }
                answer.fail(error)
            case .failure(let error as RPCError) where error.wasNeverSent && error.code == .unavailable:
                if again == nil, error.mayRetryAtOnce {
                    // One more try on this replica's next connection, as RPCClient's own calls
                    // do; a replica really down answers with its backoff.
                    self.attempt(request, tried: tried, again: index, answer: answer, current: current)
                    return
                }
                self.countFailure(of: replica)
                self.logger.debug(
                    "backend unreachable",
                    metadata: ["backend": "\(replica.address)", "error": "\(error)"]
                )
                self.attempt(request, tried: tried + [index], answer: answer, current: current)
            case .failure(let error as RPCError) where error.answeredByServer:
                replica.recordSuccess()  // it answered: the connection works
                answer.fail(error)
            case .failure(let error):
                // No answer: the call's deadline passed or it was cancelled (while connecting,
                // or after it was sent), or the connection closed under it. The deadline is the
                // caller's budget, not the replica's fault; a replica whose connections hang is
                // ejected by its connect timeouts. One that got the call and let its deadline
                // pass is asked whether it still serves: a hung process answers nothing.
                // A caller whose own deadline passed first cancels the call a moment before the
                // gateway's wait ends (a loop running late reads the CANCEL before its timer):
                // that too is a call the replica left unanswered, if it had a while to answer.
                let now = NIODeadline.now()
                if let error = error as? RPCError, !error.wasNeverSent, error.code == .cancelled,
                    now + Self.callerDeadlineSlack >= request.deadline, now - startedAt >= Self.callerDeadlineSlack
                {
                    self.checkHealth(afterUnansweredCallTo: replica)
                }
                if let error = error as? RPCError, error.code == .deadlineExceeded {
                    if !error.wasNeverSent { self.checkHealth(afterUnansweredCallTo: replica) }
                    // Said plainly: the client's error names no backend address.
                    answer.fail(RPCError(.deadlineExceeded, "deadline exceeded", cause: error))
                    return
                }
                answer.fail(error)
            }
        }
    }

    /// How close to its wait's end a caller's cancel counts as its deadline passing (for a call
    /// sent at least this long before).
    static let callerDeadlineSlack = TimeAmount.milliseconds(50)

    private func countFailure(of replica: Replica) {
        if replica.recordFailure(now: .now) {
            self.logger.warning("ejecting backend", metadata: ["backend": "\(replica.address)"])
        }
    }

    /// A health check after a call the replica left unanswered; unanswered too, it counts as a
    /// failure. A replica that answers it is slow for some calls, not gone, and stays.
    private func checkHealth(afterUnansweredCallTo replica: Replica) {
        guard replica.startsCheckAfterUnansweredCall(now: .now) else { return }
        Task {
            if await replica.checkAfterUnansweredCall() {
                self.logger.warning(
                    "ejecting backend: it leaves calls and health checks unanswered",
                    metadata: ["backend": "\(replica.address)"]
                )
            }
        }
    }

    /// The next replica in rotation that is not ejected and not tried yet, preferring one whose
    /// connection on `loop` takes calls now. One being connected to (restarted, or whose
    /// connects hang) is connected to in the background meanwhile, each failed connect (and each
    /// connection it closed at once, unanswered) counting against it, and gets calls once it is
    /// up. With none ready, the first candidate (its call waits for the connection). When every replica is ejected, ejection is ignored (as
    /// Envoy's panic threshold does): trying them is no worse than refusing every call, and it
    /// finds a restarted backend at once.
    private func pick(excluding tried: [Int], on loop: any EventLoop) -> Int? {
        let count = self.replicas.count
        let start = self.turn.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        let panic = self.replicas.allSatisfy(\.isEjected)
        var ready: Int?
        var firstCandidate: Int?
        var connectsStarted: [(replica: Int, connect: EventLoopFuture<RPCConnection>)] = []
        for offset in 0..<count {
            let index = (start + offset) % count
            let replica = self.replicas[index]
            guard !tried.contains(index), panic || !replica.isEjected else { continue }
            if firstCandidate == nil { firstCandidate = index }
            // With one replica there is nothing to prefer: its call connects if it must.
            if count == 1
                || replica.client(on: loop).prepareForCalls(
                    connectStarted: { connectsStarted.append((index, $0)) },
                    refused: { _ in self.countFailure(of: replica) }
                )
            {
                ready = index
                break
            }
        }
        let chosen = ready ?? firstCandidate
        // A call waiting on its replica's connect counts that connect's failure itself; the
        // connects of replicas it did not go to count here.
        for (index, connect) in connectsStarted where index != chosen {
            connect.whenFailure { _ in self.countFailure(of: self.replicas[index]) }
        }
        return chosen
    }

    /// Health-checks each ejected replica whose ejection is over; readmits those SERVING.
    func probeEjected() async {
        let now = ContinuousClock.now
        for replica in self.replicas where replica.isDueForReadmission(now: now) {
            if await replica.isServing() {
                replica.readmit()
                self.logger.notice("readmitted backend", metadata: ["backend": "\(replica.address)"])
            }
        }
    }

    func close() async {
        for replica in self.replicas { await replica.close() }
    }
}

extension RPCError {
    /// Whether this is the replica's own answer: a status the client side never makes up (it
    /// fails calls itself with DEADLINE_EXCEEDED, UNAVAILABLE and CANCELLED, and marks what it
    /// never sent).
    fileprivate var answeredByServer: Bool {
        !self.wasNeverSent && ![.deadlineExceeded, .unavailable, .cancelled].contains(self.code)
    }
}
