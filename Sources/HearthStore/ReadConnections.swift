import Dispatch
import GRDB
import GRDBSQLite
import HearthCore
import Synchronization

/// Read-only connections to a WAL store for reads made on the calling thread.
///
/// GRDB's async read hops to a reader's dispatch queue and back, two thread wake-ups a read,
/// and its sync read wraps each read in four statements parsed again every time (a savepoint's
/// BEGIN and COMMIT, `PRAGMA query_only` on and off). Here a read takes an idle connection (or
/// opens one), runs in a transaction whose BEGIN and COMMIT are prepared once per connection,
/// and gives the connection back: about as many connections as threads read at once (an event
/// loop each, a few background tasks), each keeping its prepared statements and schema cache.
///
/// A read on an event loop holds the loop, and with it the deadline timer of every call on
/// that loop. So each connection watches the read it runs (an SQLite progress handler, every
/// ``checkEvery`` virtual-machine steps): it stops the read when the task running it is
/// cancelled (`CancellationError`) or the current call's deadline (``CallDeadline``) has passed
/// (``CallDeadlinePassed``). A short indexed read seldom reaches a check; its COMMIT or
/// ROLLBACK is never stopped (an interrupted ROLLBACK would leave the transaction open).
final class ReadConnections: Sendable {
    /// SQLite virtual-machine steps between two looks at the task and the deadline: tens of
    /// microseconds of work, about 50 ns a look.
    static let checkEvery: CInt = 1_000

    private let path: String
    private let configuration: Configuration
    private let keepIdle: Int
    private let idle = Mutex<[ReadConnection]>([])

    /// - Parameter keepIdle: the most connections kept open between reads; one more is opened
    ///   when all are in use, and closed after its read.
    init(path: String, configuration: Configuration, keepIdle: Int = 8) {
        var configuration = configuration
        configuration.readonly = true
        self.path = path
        self.configuration = configuration
        self.keepIdle = keepIdle
    }

    /// Runs `body` in a read transaction on this thread and returns its value.
    /// - Throws: what `body` throws; `CancellationError` or ``CallDeadlinePassed`` when the read
    ///   was stopped; SQLite's errors.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let connection = try self.idle.withLock { $0.popLast() } ?? ReadConnection(path: self.path, self.configuration)
        defer {
            // One too many is closed as `connection` goes, after the lock is let go.
            self.idle.withLock { idle in
                if idle.count < self.keepIdle { idle.append(connection) }
            }
        }
        return try connection.read(body)
    }

    /// How many connections are open and idle (for tests).
    var idleCount: Int { self.idle.withLock { $0.count } }
}

/// One read-only connection and the watch on the read it runs. Used by one thread at a time:
/// ``ReadConnections`` hands it out to one reader and takes it back after.
private final class ReadConnection: @unchecked Sendable {
    private let queue: DatabaseQueue
    private let watch = ReadWatch()

    init(path: String, _ configuration: Configuration) throws {
        self.queue = try DatabaseQueue(path: path, configuration: configuration)
        let watch = Unmanaged.passUnretained(self.watch).toOpaque()
        self.queue.inDatabase { db in
            sqlite3_progress_handler(db.sqliteConnection, ReadConnections.checkEvery, readShouldStop, watch)
        }
    }

    deinit {
        // The handler's context is `watch`: gone before the connection could call it again.
        self.queue.inDatabase { db in sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil) }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        self.watch.start(deadline: CallDeadline.uptimeNanoseconds)
        return try self.queue.inDatabase { db in
            do {
                try db.cachedStatement(sql: "BEGIN DEFERRED").execute()
                let value = try body(db)
                // Never stopped: SQLite counts a statement's steps across its runs, so a cached
                // COMMIT or ROLLBACK reaches the handler now and then too.
                self.watch.disarm()
                try db.cachedStatement(sql: "COMMIT").execute()
                return value
            } catch {
                // A read has nothing to undo; ending the transaction lets the WAL's read mark go.
                self.watch.disarm()
                if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK").execute() }
                if let error = error as? DatabaseError, error.resultCode == .SQLITE_INTERRUPT,
                    let reason = self.watch.stoppedFor
                {
                    switch reason {
                    case .cancelled: throw CancellationError()
                    case .deadline: throw CallDeadlinePassed()
                    }
                }
                throw error
            }
        }
    }
}

/// What a read's progress handler looks at.
private final class ReadWatch: @unchecked Sendable {
    enum Reason { case cancelled, deadline }

    private var deadline: UInt64?
    private var armed = false
    private(set) var stoppedFor: Reason?

    func start(deadline: UInt64?) {
        self.deadline = deadline
        self.stoppedFor = nil
        self.armed = true
    }

    /// From here on nothing is stopped (ending the read's transaction); `stoppedFor` stays.
    func disarm() {
        self.armed = false
    }

    func shouldStop() -> Bool {
        guard self.armed else { return false }
        if let deadline = self.deadline, DispatchTime.now().uptimeNanoseconds >= deadline {
            self.stoppedFor = .deadline
        } else if withUnsafeCurrentTask(body: { $0?.isCancelled ?? false }) {
            self.stoppedFor = .cancelled
        }
        return self.stoppedFor != nil
    }
}

/// SQLite's progress handler: non-zero stops the statement with SQLITE_INTERRUPT.
private func readShouldStop(_ context: UnsafeMutableRawPointer?) -> CInt {
    guard let context else { return 0 }
    return Unmanaged<ReadWatch>.fromOpaque(context).takeUnretainedValue().shouldStop() ? 1 : 0
}
