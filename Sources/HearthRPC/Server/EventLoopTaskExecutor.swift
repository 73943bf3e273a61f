import NIOCore

/// Runs Swift concurrency jobs on a NIO event loop, so a call's handler starts and finishes
/// on its connection's loop: no thread hop to begin the call, none to write its response.
/// Handlers that await other executors (a database pool, a sleep) still run those parts there.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
