import Foundation
import HearthCore
import NIOCore
import NIOPosix
import Synchronization

/// One pooled connection and how to get it back when it is lost.
final class ConnectionSlot: Sendable {
    private enum State {
        case idle(failures: Int)
        /// `calls`: calls that were started waiting for it (those cancelled or timed out while
        /// it connects still count: at worst a call goes to another connection needlessly).
        case connecting(EventLoopFuture<RPCConnection>, failures: Int, calls: Int)
        /// `failures`: connections in a row before this one that the server refused at once.
        case ready(RPCConnection, failures: Int, since: NIODeadline)
        /// `unseen`: a connection the server closed unanswered, which no caller has heard of yet.
        case backingOff(until: NIODeadline, failures: Int, error: any Error, unseen: Bool = false)
        case closed
    }

    private let configuration: RPCClient.Configuration
    private let group: any EventLoopGroup
    private let state = Mutex(State.idle(failures: 0))

    init(configuration: RPCClient.Configuration, group: any EventLoopGroup) {
        self.configuration = configuration
        self.group = group
    }

    /// Starts a call on this slot's connection: at once on a connection that takes calls;
    /// otherwise as soon as one is made, from the connect's own completion on its event loop,
    /// so no task has to be scheduled between the connection coming up and the request going
    /// out. `timeout` covers connecting and the call. The response completes on the
    /// connection's loop, or on `loop` when the call had to wait (nil: the connection's loop).
    func start(
        _ method: String,
        payload: Data,
        metadata: Metadata,
        timeout: Duration?,
        on loop: (any EventLoop)?
    ) -> StartedCall {
        let waitFor: EventLoopFuture<RPCConnection>
        switch self.nextStep(forCall: true).step {
        case .use(let connection):
            return connection.start(method: method, payload: payload, metadata: metadata, timeout: timeout)
        case .fail(let error):
            return .answered(.failure(error), on: loop ?? self.group.next())
        case .wait(let future):
            waitFor = future
        case .connect(let promise, let failures):
            self.connect(fulfilling: promise, failures: failures)
            waitFor = promise.futureResult
        }
        let target = self.target
        return .afterConnecting(waitFor, on: loop ?? waitFor.eventLoop, timeout: timeout) { connection, remaining in
            connection.start(method: method, payload: payload, metadata: metadata, timeout: remaining)
        } connectFailed: { error in
            error as? RPCError ?? Self.cannotConnect(to: target, error, retryAfter: nil)
        } deadlinePassed: {
            RPCError(.deadlineExceeded, "deadline exceeded while connecting to \(target)", cause: CallNotSent())
        }
    }

    /// Whether the connection a call started now would use has had a call pass the server's
    /// authentication (false while there is none, or it takes no more calls).
    var hasAuthenticatedConnection: Bool { self.authenticatedConnection != nil }

    private var authenticatedConnection: RPCConnection? {
        self.state.withLock { state in
            guard case .ready(let connection, _, _) = state, connection.isAcceptingCalls, connection.hasAuthenticated
            else { return nil }
            return connection
        }
    }

    /// Starts a call only on a connection that a call has authenticated (see
    /// ``hasAuthenticatedConnection``): one whose server takes no large frame until then. When
    /// it was lost since, the call fails as never sent (UNAVAILABLE), so it may be tried again
    /// at once on a new one, authenticated first.
    func startOnAuthenticatedConnection(
        _ method: String,
        payload: Data,
        metadata: Metadata,
        timeout: Duration?
    ) -> StartedCall {
        guard let connection = self.authenticatedConnection else {
            let lost = RPCError(
                .unavailable,
                "the connection to \(self.target) closed after it authenticated",
                cause: CallNotSent()
            )
            return .answered(.failure(lost), on: self.group.next())
        }
        return connection.start(method: method, payload: payload, metadata: metadata, timeout: timeout)
    }

    /// Whether a call started now goes out at once. When it would have to wait, the connection
    /// is started (unless it is backing off after a failure) with no call waiting for it: the
    /// connect started, if this started one. `refused`: a connection the server closed (or
    /// refused new calls on) within the configuration's `refusalWindow` and before answering
    /// anything, found now; each such connection is found once (by this or by a call).
    func prepare() -> (ready: Bool, connectStarted: EventLoopFuture<RPCConnection>?, refused: RPCError?) {
        let (step, refused) = self.nextStep(forCall: false)
        switch step {
        case .use:
            return (true, nil, refused)
        case .wait, .fail:
            return (false, nil, refused)
        case .connect(let promise, let failures):
            self.connect(fulfilling: promise, failures: failures)
            return (false, promise.futureResult, refused)
        }
    }

    private enum Step {
        case use(RPCConnection)
        case wait(EventLoopFuture<RPCConnection>)
        case fail(RPCError)
        case connect(EventLoopPromise<RPCConnection>, failures: Int)
    }

    /// What a new call does: use the connection, wait for the one being made, fail fast while
    /// backing off, or make one; and the refusal it is the first to find, if any. The decision
    /// and the state change it implies happen under one lock, so two callers never both connect
    /// and a refusal is found once. `forCall`: a call goes out with this step (counted while it
    /// waits for a connection).
    private func nextStep(forCall: Bool) -> (step: Step, refused: RPCError?) {
        self.state.withLock { state -> (step: Step, refused: RPCError?) in
            let failures: Int
            var refused: RPCError?
            switch state {
            case .ready(let connection, _, _) where connection.isAcceptingCalls:
                return (.use(connection), nil)
            case .connecting(let future, let failures, let calls):
                if forCall { state = .connecting(future, failures: failures, calls: calls + 1) }
                return (.wait(future), nil)
            case .closed:
                return (.fail(RPCError(.unavailable, "client is closed", cause: CallNotSent())), nil)
            case .backingOff(let until, let count, let error, let unseen):
                if unseen {
                    refused = error as? RPCError ?? Self.cannotConnect(to: self.target, error, retryAfter: nil)
                    state = .backingOff(until: until, failures: count, error: error)
                }
                let now = self.configuration.now()
                guard now >= until else {
                    return (.fail(Self.cannotConnect(to: self.target, error, retryAfter: until - now)), refused)
                }
                failures = count
            case .idle(let count):
                failures = count
            case .ready(let connection, let count, let since):
                // It stopped taking calls (GOAWAY): replace it, after a backoff if the server
                // refused it (soon, before answering anything), at once if it was let go idle.
                guard !connection.hasAnswered, self.configuration.now() - since < self.configuration.refusalWindow
                else {
                    failures = 0
                    break
                }
                let delay = self.configuration.backoff.delay(afterFailures: count + 1)
                let error = RPCError(
                    .unavailable,
                    "\(self.target) refuses new calls",
                    retryAfter: .nanoseconds(delay.nanoseconds),
                    cause: CallNotSent()
                )
                state = .backingOff(until: self.configuration.now() + delay, failures: count + 1, error: error)
                return (.fail(error), error)
            }
            let promise = self.group.next().makePromise(of: RPCConnection.self)
            state = .connecting(promise.futureResult, failures: failures, calls: forCall ? 1 : 0)
            return (.connect(promise, failures: failures), refused)
        }
    }

    private var target: String { "\(self.configuration.host):\(self.configuration.port)" }

    /// UNAVAILABLE, never sent: `target` could not be connected to (and is not tried again for
    /// `retryAfter`, when backing off).
    private static func cannotConnect(to target: String, _ error: any Error, retryAfter: TimeAmount?) -> RPCError {
        RPCError(
            .unavailable,
            "cannot connect to \(target): \(describe(connectError: error))",
            retryAfter: retryAfter.map { .nanoseconds($0.nanoseconds) },
            cause: CallNotSent(underlying: error)
        )
    }

    private func connect(fulfilling promise: EventLoopPromise<RPCConnection>, failures: Int) {
        RPCConnection.connect(
            host: self.configuration.host,
            port: self.configuration.port,
            // The loop whose callbacks send the calls waiting for it: no hop between the two.
            group: promise.futureResult.eventLoop,
            maxFrameSize: self.configuration.maxFrameSize,
            maxRequestFrameSize: self.configuration.maxRequestFrameSize,
            connectTimeout: self.configuration.connectTimeout,
            connectionSetup: self.configuration.connectionSetup
        ).whenComplete { result in
            switch result {
            case .success(let connection):
                let kept = self.state.withLock { state -> Bool in
                    if case .closed = state { return false }
                    state = .ready(connection, failures: failures, since: self.configuration.now())
                    return true
                }
                guard kept else {
                    connection.channel.close(promise: nil)
                    promise.fail(RPCError(.unavailable, "client is closed", cause: CallNotSent()))
                    return
                }
                connection.channel.closeFuture.whenComplete { _ in
                    self.state.withLock { state in
                        guard case .ready(let current, let count, let since) = state, current === connection else {
                            return
                        }
                        if current.hasAnswered || self.configuration.now() - since >= self.configuration.refusalWindow {
                            state = .idle(failures: 0)
                        } else {
                            // Closed before answering anything: count it as a failed attempt.
                            let delay = self.configuration.backoff.delay(afterFailures: count + 1)
                            let error = RPCError(.unavailable, "\(self.target) closed the connection at once")
                            state = .backingOff(
                                until: self.configuration.now() + delay,
                                failures: count + 1,
                                error: error,
                                unseen: true
                            )
                        }
                    }
                }
                promise.succeed(connection)
            case .failure(let error):
                let attempts = failures + 1
                let delay = self.configuration.backoff.delay(afterFailures: attempts)
                self.state.withLock { state in
                    if case .closed = state { return }
                    state = .backingOff(until: self.configuration.now() + delay, failures: attempts, error: error)
                }
                promise.fail(error)
            }
        }
    }

    /// The current connection when it takes calls, without waiting; nil when one must be
    /// made, or waited for, first.
    var readyConnection: RPCConnection? {
        self.state.withLock { state in
            if case .ready(let connection, _, _) = state, connection.isAcceptingCalls { return connection }
            return nil
        }
    }

    /// Whether a call started now would go out with fewer than `limit` calls beside it.
    enum Room {
        /// Yes: on a connection that takes calls, the one being made, or one it would make.
        case free
        /// No: `limit` calls are in flight on its connection or waiting for the one being made,
        /// or the server's last answer said the connection was full.
        case full
        /// It would fail at once: backing off after a failed connect, or closed.
        case none
    }

    func room(at limit: Int) -> Room {
        self.state.withLock { state in
            switch state {
            case .ready(let connection, _, _) where connection.isAcceptingCalls:
                connection.isFull(at: limit) ? .full : .free
            case .ready(let connection, _, let since):
                // No longer taking calls: as `nextStep` decides, replaced at once, or after a
                // backoff when the server refused it before answering anything.
                !connection.hasAnswered && self.configuration.now() - since < self.configuration.refusalWindow
                    ? .none : .free
            case .connecting(_, _, let calls):
                calls >= limit ? .full : .free
            case .idle:
                .free
            case .backingOff(let until, _, _, _):
                self.configuration.now() >= until ? .free : .none
            case .closed:
                .none
            }
        }
    }

    /// Whether its connection takes calls now and holds fewer than `limit`.
    func isReady(withRoomAt limit: Int) -> Bool {
        self.readyConnection.map { !$0.isFull(at: limit) } ?? false
    }

    func close() async {
        let previous = self.state.withLock { state -> State in
            let previous = state
            state = .closed
            return previous
        }
        switch previous {
        case .ready(let connection, _, _):
            await connection.close()
        case .connecting(let future, _, _):
            if let connection = try? await future.get() { await connection.close() }
        default:
            break
        }
    }
}

/// A connect error in a few words: NIO's own description lists every address it tried.
func describe(connectError error: any Error) -> String {
    if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
        return "\(first.error)"
    }
    return "\(error)"
}

extension StartedCall {
    /// A call that goes out on `connecting`'s connection once it is made. Its state lives on
    /// `loop`, where the connection's arrival, the deadline and a cancel are each handled in
    /// whichever order they come; until the request goes out, the call ends by failing with
    /// `connectFailed`'s error, `deadlinePassed`'s, or CANCELLED, each marked as not sent.
    fileprivate static func afterConnecting(
        _ connecting: EventLoopFuture<RPCConnection>,
        on loop: any EventLoop,
        timeout: Duration?,
        send: @escaping @Sendable (RPCConnection, _ remaining: Duration?) -> StartedCall,
        connectFailed: @escaping @Sendable (any Error) -> RPCError,
        deadlinePassed: @escaping @Sendable () -> RPCError
    ) -> StartedCall {
        // `send` (and the payload it holds) lives in the state, not in the connect's callback:
        // a call that ended while the connect goes on for others lets go of it at once.
        enum State {
            case waiting(deadlineTimer: Scheduled<Void>?, send: @Sendable (RPCConnection, Duration?) -> StartedCall)
            case sent(StartedCall)
            case ended
        }
        let promise = loop.makePromise(of: Data.self)
        let state = NIOLoopBoundBox.makeBoxSendingValue(State.waiting(deadlineTimer: nil, send: send), eventLoop: loop)
        let deadline = timeout.map { NIODeadline.now() + .nanoseconds($0.nanoseconds) }
        @Sendable func end(_ error: RPCError) {
            guard case .waiting(let timer, _) = state.value else { return }
            timer?.cancel()
            state.value = .ended
            promise.fail(error)
        }
        if let deadline {
            loop.execute {
                guard case .waiting(_, let send) = state.value else { return }
                let timer = loop.scheduleTask(deadline: deadline) { end(deadlinePassed()) }
                state.value = .waiting(deadlineTimer: timer, send: send)
            }
        }
        connecting.hop(to: loop).whenComplete { result in
            guard case .waiting(let timer, let send) = state.value else { return }
            switch result {
            case .failure(let error):
                end(connectFailed(error))
            case .success(let connection):
                let remaining = deadline.map { Duration.nanoseconds(($0 - .now()).nanoseconds) }
                if let remaining, remaining <= .zero {
                    end(deadlinePassed())
                    return
                }
                timer?.cancel()
                let call = send(connection, remaining)
                state.value = .sent(call)
                call.response.cascade(to: promise)
            }
        }
        return StartedCall(response: promise.futureResult) {
            loop.execute {
                switch state.value {
                case .waiting: end(RPCError(.cancelled, "the call was cancelled", cause: CallNotSent()))
                case .sent(let call): call.cancel()
                case .ended: break
                }
            }
        }
    }
}
