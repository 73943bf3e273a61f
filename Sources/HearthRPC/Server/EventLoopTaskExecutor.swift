public import NIOCore

/// Runs Swift concurrency jobs on a NIO event loop, so a call's handler starts and finishes
/// on its connection's loop: no thread hop to begin the call, none to write its response.
/// Handlers that await other executors (a database pool, a sleep) still run those parts there.
/// A client's callers can prefer it too (`withTaskExecutorPreference`): on their connection's
/// loop a call is written, and its answer resumes them, without a thread hop.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let loop: any EventLoop

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
