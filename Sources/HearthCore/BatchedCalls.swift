import Synchronization

/// Calls that arrive while a batch runs are answered together by the next one: one run of a
/// batch body over all their inputs (a transaction and its round trips paid once for many
/// calls, as ``WriteBatcher`` does on SQLite). The first call starts a drain, which takes up to
/// `maxBatch` calls at a time in the order they came, until none waits; each call's answer is
/// its own element of its batch's results. A call is not cancellable: once made, it runs with
/// its batch (a delivery's outcome is written even while its sender shuts down).
public final class BatchedCalls<Input: Sendable, Output: Sendable>: Sendable {
    /// Runs a batch: one result for each input, in their order.
    public typealias Body = @Sendable ([Input]) async -> [Result<Output, any Error>]

    private struct Waiting: Sendable {
        let input: Input
        let continuation: CheckedContinuation<Output, any Error>
    }

    private struct State: Sendable {
        var queue: [Waiting] = []
        var draining = false
    }

    private let state = Mutex(State())
    private let maxBatch: Int

    public init(maxBatch: Int) {
        precondition(maxBatch > 0, "a batch takes at least one call")
        self.maxBatch = maxBatch
    }

    /// How many calls wait for a batch to take them (for tests).
    public var waiting: Int { self.state.withLock { $0.queue.count } }

    /// `input`'s answer from the batch `body` runs it in (the body of the call that started the
    /// drain: every caller of one instance passes the same).
    public func call(_ input: Input, batchedBy body: @escaping Body) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let starts = self.state.withLock { state in
                state.queue.append(Waiting(input: input, continuation: continuation))
                guard !state.draining else { return false }
                state.draining = true
                return true
            }
            if starts { Task { await self.drain(body) } }
        }
    }

    private func drain(_ body: Body) async {
        while true {
            let batch = self.state.withLock { state -> [Waiting] in
                let batch = Array(state.queue.prefix(self.maxBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.draining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let results = await body(batch.map(\.input))
            precondition(results.count == batch.count, "a batch answers each of its calls")
            for (waiting, result) in zip(batch, results) { waiting.continuation.resume(with: result) }
        }
    }
}
