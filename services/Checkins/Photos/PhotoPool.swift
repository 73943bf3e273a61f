import Foundation
import HearthRPC
import NIOCore
import NIOPosix
import Synchronization

/// Normalizes photos on threads of its own, a bounded number at a time: `workers` run, at most
/// `queueLimit` more wait, and an upload past that is answered RESOURCE_EXHAUSTED with when to
/// retry, before anything of it is decoded. A call cancelled or out of time gives up its place:
/// one still waiting is never decoded, one running stops at its next step.
///
/// Without it, every upload took a thread of the global queue at once (as many as arrived) and
/// could not be stopped.
final class PhotoPool: Sendable {
    /// One worker per core, twice as many waiting: what a checkins process uses.
    static let shared = PhotoPool(
        workers: System.coreCount,
        queueLimit: 2 * System.coreCount
    )

    let workers: Int
    let queueLimit: Int
    private let threads: NIOThreadPool
    private let state = Mutex(State())

    private struct State {
        /// Uploads running or waiting.
        var admitted = 0
        /// A moving average of how long one takes, for `retry_after_ms`.
        var typicalSeconds = 0.25
    }

    init(workers: Int, queueLimit: Int) {
        precondition(workers >= 1 && queueLimit >= 0)
        self.workers = workers
        self.queueLimit = queueLimit
        self.threads = NIOThreadPool(numberOfThreads: workers)
        self.threads.start()
    }

    /// Uploads running or waiting now.
    var admitted: Int { self.state.withLock { $0.admitted } }

    /// Stops the threads once the work given them is done (the shared pool lives as long as
    /// its process).
    func shutdown() async throws {
        try await self.threads.shutdownGracefully()
    }

    /// `upload` normalized on one of the pool's threads.
    /// - Throws: ``RPCError`` RESOURCE_EXHAUSTED (with `retryAfter`) when the pool is full,
    ///   INVALID_ARGUMENT for an upload that is not a photo it can keep, CANCELLED when the call
    ///   was cancelled or ran out of time first.
    func normalize(_ upload: Data) async throws -> NormalizedPhoto {
        // The caller's decode count, if it keeps one (tests), follows the work to the thread.
        let count = PhotoNormalizer.decodeCount
        return try await self.run { shouldStop throws(PhotoNormalizer.NormalizeFailure) in
            let outcome = PhotoNormalizer.$decodeCount.withValue(count) {
                Result { () throws(PhotoNormalizer.NormalizeFailure) in
                    try PhotoNormalizer.normalize(upload, stoppingWhen: shouldStop)
                }
            }
            return try outcome.get()
        }
    }

    /// Runs `work` on one of the pool's threads once a place is free; `work` asks the function
    /// it is given between its steps whether to stop. Work whose call was cancelled before it
    /// began never begins.
    func run<Result: Sendable>(
        _ work:
            @escaping @Sendable (_ shouldStop: @escaping @Sendable () -> Bool) throws(PhotoNormalizer.NormalizeFailure)
            -> Result
    ) async throws -> Result {
        try self.admit()
        defer { self.state.withLock { $0.admitted -= 1 } }
        let stop = StopFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                self.threads.submit { state in
                    guard case .active = state else {
                        continuation.resume(throwing: RPCError(.unavailable, "the server is stopping"))
                        return
                    }
                    let start = ContinuousClock.now
                    do throws(PhotoNormalizer.NormalizeFailure) {
                        guard !stop.isSet() else { throw .stopped }
                        let result = try work(stop.isSet)
                        self.took(ContinuousClock.now - start)
                        continuation.resume(returning: result)
                    } catch {
                        switch error {
                        case .invalid(let violation):
                            continuation.resume(throwing: RPCError.invalidArgument([violation]))
                        case .stopped:
                            continuation.resume(
                                throwing: RPCError(.cancelled, "the call ended before its photo was processed")
                            )
                        }
                    }
                }
            }
        } onCancel: {
            stop.set()
        }
    }

    /// Takes a place, or throws RESOURCE_EXHAUSTED saying when one should be free.
    private func admit() throws {
        let wait: Double? = self.state.withLock { state in
            guard state.admitted < self.workers + self.queueLimit else {
                // Those ahead of the next one, shared by the workers, at the usual time each.
                let rounds = Double(state.admitted - self.workers) / Double(self.workers) + 1
                return max(0.1, rounds * state.typicalSeconds)
            }
            state.admitted += 1
            return nil
        }
        if let wait {
            throw RPCError(
                .resourceExhausted,
                "the server is processing as many photos as it can (\(self.workers) at a time, "
                    + "\(self.queueLimit) waiting); retry later",
                retryAfter: .milliseconds(Int64((wait * 1000).rounded(.up)))
            )
        }
    }

    private func took(_ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        self.state.withLock { $0.typicalSeconds = 0.8 * $0.typicalSeconds + 0.2 * seconds }
    }
}

/// Set when a call is cancelled, read by the work done for it on another thread.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { self.value.store(true, ordering: .relaxed) }

    @Sendable func isSet() -> Bool { self.value.load(ordering: .relaxed) }
}
