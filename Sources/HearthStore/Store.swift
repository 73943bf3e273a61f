public import Foundation
public import GRDB
public import HearthCore

/// Where a service keeps its SQLite database.
public enum StoreLocation: Sendable, Equatable {
    /// A file (created if missing, with its folder): a WAL-mode `DatabasePool`.
    case file(String)
    /// A private in-memory database, for unit tests.
    case inMemory
}

/// The base every service store stands on: one SQLite database, migrated on open, plus the
/// clock the service reads time from.
///
/// A file store is one process's (a second gets ``StoreLocked``), in WAL mode with
/// `synchronous = NORMAL`: a committed transaction is in the WAL before the write returns, so
/// an acknowledged write survives `kill -9` of the process (not necessarily a power cut).
/// Readers run in parallel with the one writer.
///
/// Reads run on the calling thread (``read(_:)``): a handler on its event loop reads without
/// leaving it. Writes (``write(_:)``) that arrive together share one transaction and one commit
/// (group commit, ``WriteBatcher``).
public struct Store: Sendable {
    public let writer: any DatabaseWriter
    /// Every ``write(_:)`` goes through it.
    private let writes: WriteBatcher
    public let clock: any WallClock
    /// Nil for an in-memory store, which has one connection: its reads go to the writer.
    private let readers: ReadConnections?

    /// Opens (creating if needed) and migrates the database.
    /// - Parameters:
    ///   - migrator: the service's named, append-only migrations.
    ///   - lockWait: how long to wait for another process that has the file to stop (the one
    ///     this process replaces may still be draining: 30 s at most).
    /// - Throws: ``StoreLocked`` when another process has the file, ``StoreFromNewerVersion``,
    ///   ``StoreOpenFailed`` (naming the file) when SQLite cannot open or migrate it.
    public init(
        location: StoreLocation,
        migrator: DatabaseMigrator,
        clock: any WallClock = SystemClock(),
        busyTimeout: TimeInterval = 5,
        lockWait: TimeInterval = 35
    ) throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            // Deleted and overwritten content is zeroed, not left in free space: an erased
            // user's data, or a value in clear before it was sealed, does not linger.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        switch location {
        case .file(let path):
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try StoreFileLock.hold(path, wait: lockWait)
            do {
                self.writer = try DatabasePool(path: path, configuration: configuration)
                try Self.migrate(self.writer, with: migrator, location: location)
                self.readers = ReadConnections(path: path, configuration: configuration)
            } catch let error as DatabaseError {
                // "file is not a database" says nothing of which of a host's stores.
                throw StoreOpenFailed(path: path, reason: error)
            }
        case .inMemory:
            self.writer = try DatabaseQueue(configuration: configuration)
            try Self.migrate(self.writer, with: migrator, location: location)
            self.readers = nil
        }
        self.writes = WriteBatcher(writer: self.writer)
        self.clock = clock
    }

    private static func migrate(_ writer: any DatabaseWriter, with migrator: DatabaseMigrator, location: StoreLocation)
        throws
    {
        // A store a newer version migrated (an upgrade rolled back): its schema is not the one
        // this code reads and writes.
        let unknown = try writer.read { db in
            try migrator.appliedIdentifiers(db).subtracting(migrator.migrations).sorted()
        }
        guard unknown.isEmpty else { throw StoreFromNewerVersion(location: location, migrations: unknown) }
        try migrator.migrate(writer)
    }

    /// Runs `body` in a read transaction on the calling thread, with no hop to another, and
    /// returns its value. For the short, indexed reads of a call: a read holds its thread (an
    /// event loop: every connection on it waits), though it stops once its task is cancelled or
    /// its call's deadline passes.
    /// - Throws: what `body` throws; `CancellationError` or `CallDeadlinePassed` when the read
    ///   was stopped; SQLite's errors.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        guard let readers = self.readers else { return try self.writer.read(body) }
        return try readers.read(body)
    }

    /// Runs `body` in a write transaction, with the writes of other calls that arrive meanwhile
    /// (one commit for all, ``WriteBatcher``), and returns its value once that transaction has
    /// committed: an acknowledged write survives `kill -9`. `body` may run twice (only the last
    /// run counts), so it must change nothing but the database; when it throws, its writes are
    /// undone and the others' kept.
    /// - Throws: what `body` throws; SQLite's errors (a failed commit fails every write of it).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await self.writes.write(body)
    }

    /// Runs `body` in a read transaction on one of GRDB's reader threads, for a read too long to
    /// hold an event loop (a photo of megabytes): the caller's loop serves other calls meanwhile,
    /// at the cost of a hop there and back. Cancelling the caller's task interrupts it (GRDB's).
    /// - Throws: what `body` throws; `CancellationError`; SQLite's errors.
    public func longRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await self.writer.read(body)
    }

    /// Rebuilds the file with only what it holds now (`VACUUM`: no free page keeps old
    /// content), then empties the WAL, which may hold old pages past its last frame in use.
    /// Writes wait meanwhile. After a migration that sealed or removed what was in clear.
    public func scrub() throws {
        try self.writer.vacuum()
        _ = try self.writer.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// Copies the WAL into the file and empties it: after a deletion that must not linger (an
    /// erasure), since the WAL keeps the pages as they were before, past its last frame in use,
    /// until it is written over. On the writer's thread, which waits for the reads under way
    /// (busy timeout); the caller's thread is free meanwhile.
    public func truncateWAL() async throws {
        _ = try await self.writer.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// How many read connections are open between reads (for tests).
    var idleReadConnections: Int { self.readers?.idleCount ?? 0 }

    /// The time now, as the store keeps dates (to the millisecond): a record made with it
    /// reads back equal, so the answer to a write and to its repeat (read from the store) match.
    public var now: Date { Self.asStored(self.clock.now()) }

    /// `date` as the store keeps it (to the millisecond).
    public static func asStored(_ date: Date) -> Date {
        StoredDate.fromDatabaseValue(date.stored.databaseValue)?.date ?? date
    }
}

/// The store was migrated by a newer version of Hearth than this one.
public struct StoreFromNewerVersion: Error, CustomStringConvertible {
    public var location: StoreLocation
    public var migrations: [String]
    public var description: String {
        let place = if case .file(let path) = self.location { path } else { "the in-memory store" }
        return "\(place) was migrated by a newer Hearth (\(self.migrations.joined(separator: ", "))): "
            + "run that version, or restore a backup taken before the upgrade"
    }
}

/// A store file that SQLite could not open or migrate (not a database, unreadable, ...).
public struct StoreOpenFailed: Error, CustomStringConvertible {
    public var path: String
    public var reason: DatabaseError
    public var description: String { "cannot open the store \(self.path): \(self.reason.message ?? "\(self.reason)")" }
}
