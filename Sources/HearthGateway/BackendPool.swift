import Foundation
import HearthCore
import HearthRPC
import Logging
import NIOCore
import Synchronization

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
/// never retried. Its replicas may change while it serves (``ReplicaDiscovery``): one that
/// leaves takes no new call and is closed once its calls in flight have ended.
final class BackendPool: Sendable {
    private struct Members {
        var serving: [Replica]
        /// Out of rotation, closed once their calls have ended (or `until` passed).
        var leaving: [(replica: Replica, until: ContinuousClock.Instant)] = []
    }

    /// The method prefix this pool serves, e.g. `hearth.echo.`.
    let prefix: String
    /// What its replicas require in `x-hearth-internal`.
    let credential: String
    private let members: Mutex<Members>
    private let turn = Atomic<Int>(0)
    /// Set when a replica failed to connect: its name may point elsewhere now.
    private let lookUpAgain = Atomic<Bool>(false)
    private let logger: Logger

    init(prefix: String, credential: String, replicas: [Replica], logger: Logger) {
        self.prefix = prefix
        self.credential = credential
        self.members = Mutex(Members(serving: replicas))
        self.logger = logger
    }

    /// The replicas in rotation now.
    var replicas: [Replica] { self.members.withLock { $0.serving } }

    /// Whether a replica failed to connect since the last time this was asked.
    func takeLookUpRequest() -> Bool { self.lookUpAgain.exchange(false, ordering: .relaxed) }

    func admit(_ replica: Replica) {
        self.members.withLock { $0.serving.append(replica) }
    }

    /// Takes `replicas` out of rotation; each is closed once its calls in flight have ended, at
    /// most `drainLimit` from now.
    func retire(_ replicas: [Replica], drainLimit: Duration) {
        let leaving = Set(replicas.map(ObjectIdentifier.init))
        let until = ContinuousClock.now + drainLimit
        self.members.withLock { members in
            members.serving.removeAll { leaving.contains(ObjectIdentifier($0)) }
            members.leaving += replicas.map { ($0, until) }
        }
    }

    /// Closes the retired replicas whose calls have ended, or whose time is up.
    func closeDrained() async {
        let now = ContinuousClock.now
        let done = self.members.withLock { members in
            var done: [Replica] = []
            members.leaving.removeAll { leaving in
                // Marked atomically with the count of its calls: none starts on it after.
                guard leaving.replica.markClosing(force: leaving.until <= now) else { return false }
                done.append(leaving.replica)
                return true
            }
            return done
        }
        for replica in done { await replica.close() }
    }

    /// Replicas retired and not closed yet (for tests).
    var retiring: Int { self.members.withLock { $0.leaving.count } }

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
        tried: [ObjectIdentifier],
        again: Replica? = nil,
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
        guard let replica = again ?? (tried.count < 2 ? self.pick(excluding: tried, on: loop) : nil) else {
            answer.fail(
                RPCError(
                    .unavailable,
                    "\(self.prefix.dropLast()) is unavailable; try again shortly",
                    retryAfter: .milliseconds(200)
                )
            )
            return
        }
        guard replica.callStarted() else {
            // Retired and closed since it was picked: another takes the call.
            self.attempt(request, tried: tried + [ObjectIdentifier(replica)], answer: answer, current: current)
            return
        }
        let call = replica.client(on: loop).start(
            request.method,
            payload: request.payload,
            metadata: request.metadata,
            timeout: .nanoseconds(left.nanoseconds),
            on: loop
        )
        current.replace(with: call)
        call.response.whenComplete { result in
            replica.callEnded()
            switch result {
            case .success(let payload):
                replica.recordSuccess()
                answer.succeed(payload)
            case .failure(let error as RPCError) where error.refusedForConnectionLimit:
                // It answered, running none of it: its connection was full. Once more, on another
                // of its connections (the client now passes that one over); then the refusal.
                replica.recordSuccess()
                if again == nil {
                    self.attempt(request, tried: tried, again: replica, answer: answer, current: current)
                    return
                }
                answer.fail(error)
            case .failure(let error as RPCError) where error.wasNeverSent && error.code == .unavailable:
                if again == nil, error.mayRetryAtOnce {
                    // One more try on this replica's next connection, as RPCClient's own calls
                    // do; a replica really down answers with its backoff.
                    self.attempt(request, tried: tried, again: replica, answer: answer, current: current)
                    return
                }
                self.countFailure(of: replica)
                self.logger.debug(
                    "backend unreachable",
                    metadata: ["backend": "\(replica.address)", "error": "\(error)"]
                )
                self.attempt(request, tried: tried + [ObjectIdentifier(replica)], answer: answer, current: current)
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
        self.lookUpAgain.store(true, ordering: .relaxed)
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
    private func pick(excluding tried: [ObjectIdentifier], on loop: any EventLoop) -> Replica? {
        let replicas = self.replicas
        let count = replicas.count
        let start = self.turn.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        let panic = replicas.allSatisfy(\.isEjected)
        var ready: Int?
        var firstCandidate: Int?
        var connectsStarted: [(replica: Int, connect: EventLoopFuture<RPCConnection>)] = []
        for offset in 0..<count {
            let index = (start + offset) % count
            let replica = replicas[index]
            guard !tried.contains(ObjectIdentifier(replica)), panic || !replica.isEjected else { continue }
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
            connect.whenFailure { _ in self.countFailure(of: replicas[index]) }
        }
        return chosen.map { replicas[$0] }
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
        let all = self.members.withLock { members in
            let all = members.serving + members.leaving.map(\.replica)
            members = Members(serving: [])
            return all
        }
        for replica in all { await replica.close() }
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
