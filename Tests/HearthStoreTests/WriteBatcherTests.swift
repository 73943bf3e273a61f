import Foundation
import GRDB
import HearthTestSupport
import Synchronization
import Testing

@testable import HearthStore

@Suite("Group commit", .timeLimit(.minutes(1)))
struct WriteBatcherTests {
    private func store() throws -> (Store, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-batch-\(UUID())")
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE parent (id INTEGER PRIMARY KEY);
                    INSERT INTO parent (id) VALUES (1);
                    CREATE TABLE item (
                        id INTEGER PRIMARY KEY,
                        parent_id INTEGER NOT NULL REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED
                    );
                    """
            )
        }
        let store = try Store(location: .file(folder.appendingPathComponent("s.sqlite").path), migrator: migrator)
        return (store, folder)
    }

    struct Refused: Error {}

    /// Inserts an item for each of `ids` through `batcher`, all at once; a closure whose id
    /// `refuse` names throws after its insert. `ran` hears each run of a closure. Returns whether
    /// each call succeeded.
    private func insertAll(
        _ ids: Range<Int>,
        through batcher: WriteBatcher,
        refusing refuse: @escaping @Sendable (Int) -> Bool,
        ran: @escaping @Sendable (Int) -> Void = { _ in }
    ) async -> [Int: Bool] {
        await withTaskGroup(of: (Int, Bool).self) { group in
            for n in ids {
                group.addTask {
                    do {
                        try await batcher.write { db in
                            ran(n)
                            try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (?, 1)", arguments: [n])
                            if refuse(n) { throw Refused() }
                        }
                        return (n, true)
                    } catch {
                        return (n, false)
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    @Test("concurrent writes all commit, each answered with its own value")
    func concurrentWrites() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        let answers = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for n in 0..<300 {
                group.addTask {
                    let value = try await batcher.write { db in
                        try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (?, 1)", arguments: [n])
                        return n * 2
                    }
                    return (n, value)
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 300 && answers.allSatisfy { $0.value == $0.key * 2 })
        #expect(try await store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") } == 300)
    }

    @Test("a closure that throws fails only its caller; the others in its batch commit")
    func oneFails() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        let outcomes = await self.insertAll(0..<100, through: batcher, refusing: { $0 % 10 == 0 })
        #expect(outcomes.filter { !$0.value }.map(\.key).sorted() == Array(stride(from: 0, to: 100, by: 10)))
        let stored = try await store.writer.read { db in try Set(Int.fetchAll(db, sql: "SELECT id FROM item")) }
        #expect(stored == Set(outcomes.filter(\.value).map(\.key)), "its own insert rolled back with it")
    }

    @Test("each closure runs once when none throws; when one does, its batch runs again in savepoints")
    func runsAgainOnlyAfterAThrow() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        /// Each closure's runs in order, and whether the writer is held.
        final class Runs: Sendable {
            let order = Mutex<[Int]>([])
            let holding = Atomic(false)
        }
        let runs = Runs()
        /// Eight writes in one batch: the writer is held until all eight have queued.
        func batch(_ ids: Range<Int>, refusing refused: Int?) async throws -> [Int: Bool] {
            runs.holding.store(false, ordering: .relaxed)
            let hold = Task {
                try await store.writer.writeWithoutTransaction { _ in
                    runs.holding.store(true, ordering: .relaxed)
                    while batcher.queued < ids.count { usleep(1000) }
                }
            }
            while !runs.holding.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
            let outcomes = await self.insertAll(
                ids,
                through: batcher,
                refusing: { $0 == refused },
                ran: { n in runs.order.withLock { $0.append(n) } }
            )
            try await hold.result.get()
            return outcomes
        }

        let refused = try await batch(0..<8, refusing: 5)
        #expect(refused.filter { !$0.value }.map(\.key) == [5])
        let stored = try await store.writer.read { db in try Int.fetchAll(db, sql: "SELECT id FROM item ORDER BY id") }
        #expect(stored == [0, 1, 2, 3, 4, 6, 7], "each kept once, the refused one not at all")
        // Those queued before 5 ran without savepoints, 5 threw, and then all eight ran again
        // in savepoints, in the same order: exactly those before 5 twice, the rest once.
        let order = runs.order.withLock { $0 }
        let firstRun = Array(order.prefix(through: try #require(order.firstIndex(of: 5))))
        let secondRun = Array(order.dropFirst(firstRun.count))
        #expect(secondRun.sorted() == Array(0..<8) && Array(secondRun.prefix(firstRun.count)) == firstRun, "\(order)")

        runs.order.withLock { $0 = [] }
        let accepted = try await batch(10..<18, refusing: nil)
        #expect(accepted.values.allSatisfy { $0 })
        #expect(runs.order.withLock { $0 }.sorted() == Array(10..<18), "nothing threw: each once")
    }

    @Test("a batch whose commit fails fails every caller in it, and keeps none of their writes")
    func commitFails() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<100 {
                group.addTask {
                    do {
                        // Number 50 points at a parent that does not exist: the deferred
                        // foreign key fails at COMMIT, for the whole batch it is in.
                        try await batcher.write { db in
                            try db.execute(
                                sql: "INSERT INTO item (id, parent_id) VALUES (?, ?)",
                                arguments: [n, n == 50 ? 2 : 1]
                            )
                        }
                        return (n, true)
                    } catch {
                        return (n, false)
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes[50] == false)
        let stored = try await store.writer.read { db in try Set(Int.fetchAll(db, sql: "SELECT id FROM item")) }
        #expect(stored == Set(outcomes.filter(\.value).map(\.key)), "success exactly when the row is kept")
        #expect(!stored.contains(50))
    }

    @Test("a batch whose transaction SQLite rolled back mid-way fails every caller with its cause, without trapping")
    func transactionRolledBackMidBatch() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        // The writer is held while the batch queues, so that it runs as one: the first closure
        // ends the transaction (as SQLite does itself on some I/O errors), ten more follow it.
        let release = Mutex(false)
        store.writer.asyncWriteWithoutTransaction { _ in
            while !release.withLock({ $0 }) { usleep(1000) }
        }
        let first = Task {
            try await batcher.write { db in
                try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (0, 1)")
                // What SQLite does on some full-disk and I/O errors: the statement fails, and
                // the whole transaction is rolled back.
                try db.execute(sql: "ROLLBACK")
                throw DatabaseError(resultCode: .SQLITE_FULL)
            }
        }
        try await eventually("the first write queued") { batcher.queued == 1 }
        let rest = Task {
            await withTaskGroup(of: ResultCode?.self) { group in
                for n in 1...10 {
                    group.addTask {
                        do {
                            try await batcher.write { db in
                                try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (?, 1)", arguments: [n])
                            }
                            return nil
                        } catch {
                            return (error as? DatabaseError)?.resultCode
                        }
                    }
                }
                return await group.reduce(into: [ResultCode?]()) { $0.append($1) }
            }
        }
        try await eventually("the batch queued") { batcher.queued == 11 }
        release.withLock { $0 = true }
        // Every caller fails, with the cause (a full disk: try again later), not with "transaction
        // aborted", which says nothing.
        let cause = await #expect(throws: DatabaseError.self) { try await first.value }
        #expect(cause?.resultCode == .SQLITE_FULL)
        #expect(
            await rest.value == Array(repeating: .SQLITE_FULL, count: 10),
            "no write outside the batch's transaction"
        )
        #expect(try await store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") } == 0)
        // The writer goes on.
        try await batcher.write { db in try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (11, 1)") }
    }

    @Test("a long queue of batched writes lets a plain write through after batchesPerTurn batches")
    func otherWritesGetTheirTurn() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer, maxBatch: 10, batchesPerTurn: 2)
        // Hold the writer so that every batched write queues before the first batch runs.
        let gate = DispatchSemaphore(value: 0)
        store.writer.asyncWriteWithoutTransaction { _ in gate.wait() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<100 {
                group.addTask {
                    try await batcher.write { db in
                        try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (?, 1)", arguments: [n])
                    }
                }
            }
            try await eventually("every batched write is queued") { batcher.queued == 100 }
            // Queued on the writer behind the batcher's first turn.
            let seen = Mutex<Int?>(nil)
            store.writer.asyncWriteWithoutTransaction { db in
                seen.withLock { $0 = try? Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") }
            }
            gate.signal()
            try await group.waitForAll()
            #expect(seen.withLock { $0 } == 20, "two batches of ten, then the plain write")
        }
        #expect(try await store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") } == 100)
    }

    @Test("a write whose task is cancelled before its batch reaches it does not run; the others commit")
    func cancelledBeforeItsTurn() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        // Hold the writer so that both writes wait in the queue.
        let gate = DispatchSemaphore(value: 0)
        store.writer.asyncWriteWithoutTransaction { _ in gate.wait() }
        let ran = RanWrites()
        let insert = { @Sendable (n: Int) in
            Task {
                try await batcher.write { db in
                    ran.ids.withLock { _ = $0.insert(n) }
                    try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (?, 1)", arguments: [n])
                }
            }
        }
        let kept = insert(1)
        let cancelled = insert(2)
        try await eventually("both writes are queued") { batcher.queued == 2 }
        cancelled.cancel()
        gate.signal()
        try await kept.value
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(ran.ids.withLock { $0 } == [1], "the cancelled write never ran")
        let stored = try await store.writer.read { db in try Set(Int.fetchAll(db, sql: "SELECT id FROM item")) }
        #expect(stored == [1])
    }

    @Test("a closure that swallows the error of a transaction SQLite rolled back fails its whole batch")
    func swallowedRollback() async throws {
        let (store, folder) = try self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let batcher = WriteBatcher(writer: store.writer)
        // As SQLite does on a full disk: the transaction ends under the closure, which goes on.
        await #expect(throws: TransactionRolledBack.self) {
            try await batcher.write { db in
                try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (1, 1)")
                try? db.execute(sql: "ROLLBACK")
                // Outside any transaction now: committed by itself, though its caller fails.
                try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (2, 1)")
            }
        }
        // The batcher serves the next write as before.
        try await batcher.write { db in try db.execute(sql: "INSERT INTO item (id, parent_id) VALUES (3, 1)") }
        let stored = try await store.writer.read { db in try Set(Int.fetchAll(db, sql: "SELECT id FROM item")) }
        #expect(stored.contains(3) && !stored.contains(1))
    }
}

/// The writes whose closures ran.
private final class RanWrites: Sendable {
    let ids = Mutex<Set<Int>>([])
}
