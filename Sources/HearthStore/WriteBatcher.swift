public import GRDB
import Synchronization

/// Group commit: many small write transactions run as one. Callers that write at the same time
/// queue their closures; the first one queues a drain on the writer, which runs everything
/// queued in a single transaction, commits once, answers every caller, and then takes what
/// queued meanwhile, batch after batch with no hop between them. A closure that throws fails
/// only its caller (unless its error made SQLite roll the transaction back itself: then the whole
/// batch fails with it). The batch first runs without savepoints (two statements a closure
/// saved); if a closure throws, the batch is rolled back and run again with each closure in a
/// savepoint of its own. So a closure may run twice, and must change nothing but the database.
/// A commit that fails fails the whole batch, and nothing of it is kept; so does the second
/// run's BEGIN when another process takes the write lock between the two (a store is one
/// process's). A caller's answer comes only after the commit, so an acknowledged write is as
/// durable as with ``DatabaseWriter/write(_:)``.
///
/// Worth it on a hot write path with many calls in flight: the hops to the writer's queue, the
/// BEGIN/COMMIT and the WAL frames of a commit are paid once per batch instead of once per call.
public final class WriteBatcher: Sendable {
    private struct Pending: Sendable {
        /// Runs the caller's closure inside the batch's transaction, in a savepoint or not;
        /// returns how to answer it once the batch has committed, and the closure's error if it
        /// threw.
        let run: @Sendable (Database, _ inSavepoint: Bool) -> (answer: @Sendable () -> Void, error: (any Error)?)
        /// Answers the caller with the batch's failure (the commit failed).
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var queue: [Pending] = []
        var leading = false
    }

    private let writer: any DatabaseWriter
    private let maxBatch: Int
    private let batchesPerTurn: Int
    private let state = Mutex(State())

    /// - Parameters:
    ///   - maxBatch: the most closures one transaction runs.
    ///   - batchesPerTurn: how many batches run back to back on the writer before the writes
    ///     that waited meanwhile get their turn.
    public init(writer: any DatabaseWriter, maxBatch: Int = 64, batchesPerTurn: Int = 8) {
        precondition(maxBatch > 0 && batchesPerTurn > 0, "a batch and a turn take at least one")
        self.writer = writer
        self.maxBatch = maxBatch
        self.batchesPerTurn = batchesPerTurn
    }

    /// How many calls wait for a batch (for tests).
    var queued: Int { self.state.withLock { $0.queue.count } }

    /// Runs `body` in a write transaction shared with other callers' and returns its value once
    /// that transaction has committed. `body` may run twice (only the last run counts, see
    /// above): it must change nothing outside the database. A write whose task is cancelled
    /// before its batch reaches it does not run: it throws `CancellationError` (a call past its
    /// deadline writes nothing); once it has run, it commits with its batch.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let turn = WriteTurn()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let pending = Pending(
                    run: { db, inSavepoint in
                        // Decided once: the savepoint run repeats what the first run did.
                        guard turn.takes() else { return ({ continuation.resume(throwing: CancellationError()) }, nil) }
                        do {
                            let result = try inSavepoint ? Self.inSavepoint(db, body) : body(db)
                            return ({ continuation.resume(returning: result) }, nil)
                        } catch {
                            return ({ continuation.resume(throwing: error) }, error)
                        }
                    },
                    fail: { error in continuation.resume(throwing: error) }
                )
                self.state.withLock { state in
                    state.queue.append(pending)
                    guard !state.leading else { return }
                    state.leading = true
                    // Queued on the writer before the lock is let go (it only enqueues): whatever
                    // queues on the writer after this call is seen to run after the first batch.
                    self.writer.asyncWriteWithoutTransaction { db in self.drain(db) }
                }
            }
        } onCancel: {
            turn.cancel()
        }
    }

    /// Runs `body` in a savepoint inside the batch's transaction, with statements prepared once
    /// per connection (GRDB's `inSavepoint` parses its SQL on every call: 5% of the heartbeat's
    /// writer). A throwing `body` rolls back only its own writes.
    private static func inSavepoint<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        // Outside a transaction SAVEPOINT would open a deferred one of its own. A batch stops
        // at the closure whose failure rolled its transaction back (`commit`), so none runs after.
        precondition(db.isInsideTransaction, "a batched write runs inside the batch's transaction")
        try db.cachedStatement(sql: "SAVEPOINT batched_write").execute()
        do {
            let value = try body(db)
            try db.cachedStatement(sql: "RELEASE SAVEPOINT batched_write").execute()
            return value
        } catch {
            // Its writes are undone whether the body or the release failed. When SQLite has
            // already rolled back the whole transaction (a full disk and the like) there is no
            // savepoint left to undo, and the batch's commit fails instead.
            try? db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT batched_write").execute()
            try? db.cachedStatement(sql: "RELEASE SAVEPOINT batched_write").execute()
            throw error
        }
    }

    /// Runs `batch` in one transaction and commits it. Returns how to answer each caller, or nil
    /// when, without `savepoints`, a closure threw (the transaction is rolled back: run the
    /// batch again with them). Throws what fails the whole batch.
    private static func commit(_ batch: [Pending], in db: Database, savepoints: Bool) throws
        -> [@Sendable () -> Void]?
    {
        var answers: [@Sendable () -> Void] = []
        answers.reserveCapacity(batch.count)
        // BEGIN and COMMIT prepared once per connection (GRDB's `inTransaction` parses both on
        // every transaction: 2% of a batched write's CPU).
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            for pending in batch {
                let (answer, error) = pending.run(db, savepoints)
                // SQLite rolled the whole transaction back (a full disk, an I/O error): every
                // caller fails with that cause, not with "transaction aborted"; and so it does when
                // a closure caught that error and went on (what followed ran outside the batch).
                if !db.isInsideTransaction { throw error ?? TransactionRolledBack() }
                if error != nil, !savepoints {
                    try db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute()
                    return nil
                }
                answers.append(answer)
            }
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
        } catch {
            // A failed COMMIT (or ROLLBACK) may leave the transaction open: nothing of it is kept.
            if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute() }
            throw error
        }
        return answers
    }

    /// Runs batches on the writer's own queue, one after the other with no hop between them,
    /// until the queue is empty. After `batchesPerTurn` batches it queues itself behind the
    /// writes that waited meanwhile, so a steady stream of batched calls never starves them.
    private func drain(_ db: Database) {
        for _ in 0..<self.batchesPerTurn {
            let batch = self.state.withLock { state -> [Pending] in
                let batch = Array(state.queue.prefix(self.maxBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.leading = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                // Nil when a closure threw without savepoints: all of it was rolled back.
                let answers =
                    try Self.commit(batch, in: db, savepoints: false)
                    ?? Self.commit(batch, in: db, savepoints: true)!
                for answer in answers { answer() }
            } catch {
                for pending in batch { pending.fail(error) }
            }
        }
        self.writer.asyncWriteWithoutTransaction { db in self.drain(db) }
    }
}

/// Whether a batched write runs: once its batch reaches it, unless its task was cancelled first.
private final class WriteTurn: Sendable {
    private enum State { case waiting, cancelled, running, skipped }
    private let state = Mutex(State.waiting)

    func cancel() {
        self.state.withLock { if $0 == .waiting { $0 = .cancelled } }
    }

    /// Whether the write runs; the first answer holds for the batch's second run.
    func takes() -> Bool {
        self.state.withLock { state in
            switch state {
            case .waiting, .running:
                state = .running
                return true
            case .cancelled, .skipped:
                state = .skipped
                return false
            }
        }
    }
}

/// SQLite ended a batch's transaction by itself, and no write's error says why.
struct TransactionRolledBack: Error, CustomStringConvertible {
    var description: String { "the write transaction was rolled back by SQLite" }
}
