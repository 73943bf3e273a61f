import PostgresNIO
import Synchronization

/// Calls under way on the pool's connections, each answered ``PostgresUnavailable`` at once
/// when its connection closes first. PostgresNIO 1.33.2 leaves a query it had not sent when the
/// server ended the session (PostgreSQL stopped, restarted) waiting for good: left alone, such
/// a call would never be answered (measured: 5 of 8 callers in flight when the server stopped).
/// Its body is cancelled and left suspended; it holds no connection (that one is closed).
///
/// One close callback per connection, however many calls it serves: a callback per call would
/// stay on a long-lived connection's close future (it only grows), holding each call's outcome.
final class ClosingConnections: Sendable {
    private struct State {
        /// The calls under way on each watched connection, by their number.
        var calls: [ObjectIdentifier: [Int: @Sendable () -> Void]] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// How many connections are watched and how many calls wait on them (tests read it).
    var watched: (connections: Int, calls: Int) {
        self.state.withLock { state in (state.calls.count, state.calls.values.map(\.count).reduce(0, +)) }
    }

    /// Runs `body` on `connection`, unless the connection closes first.
    func run<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T,
        on connection: PostgresConnection
    ) async throws -> T {
        let outcome = FirstOutcome<T>()
        let work = Task {
            do {
                outcome.settle(.success(try await body(connection)))
            } catch {
                outcome.settle(.failure(error))
            }
        }
        let key = ObjectIdentifier(connection)
        let (number, watchNow) = self.state.withLock { state -> (Int, Bool) in
            state.next += 1
            let watchNow = state.calls[key] == nil
            state.calls[key, default: [:]][state.next] = {
                outcome.settle(.failure(PostgresUnavailable(cause: ConnectionClosed())))
                work.cancel()
            }
            return (state.next, watchNow)
        }
        if watchNow {
            connection.closeFuture.whenComplete { _ in self.closed(key) }
        }
        defer { self.finished(number, on: key) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { outcome.deliver(to: $0) }
        } onCancel: {
            work.cancel()
        }
    }

    private func finished(_ number: Int, on key: ObjectIdentifier) {
        self.state.withLock { state in
            state.calls[key]?[number] = nil
        }
    }

    /// Answers the calls under way on a connection that closed; it is watched no longer.
    private func closed(_ key: ObjectIdentifier) {
        let calls = self.state.withLock { $0.calls.removeValue(forKey: key) }
        for answer in (calls ?? [:]).values { answer() }
    }
}

/// The session ended while a call was under way on it.
struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection to PostgreSQL closed during the call" }
}

/// The first of a call's outcomes (its body's, or its connection's closing) to its one waiter.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var outcome: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
        var delivered = false
    }

    private let state = Mutex(State())

    func settle(_ outcome: Result<T, any Error>) {
        let waiter = self.state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            return state.delivered
                ? nil
                : state.waiter.take().map { waiter in
                    state.delivered = true
                    return waiter
                }
        }
        waiter?.resume(with: outcome)
    }

    func deliver(to waiter: CheckedContinuation<T, any Error>) {
        let ready = self.state.withLock { state -> Result<T, any Error>? in
            guard let outcome = state.outcome else {
                state.waiter = waiter
                return nil
            }
            state.delivered = true
            return outcome
        }
        if let ready { waiter.resume(with: ready) }
    }
}
