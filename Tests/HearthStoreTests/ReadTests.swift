import Dispatch
import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import NIOPosix
import Synchronization
import Testing

@testable import HearthStore

/// A read that runs for minutes: SQLite counts to a billion. (Not forever: when stopping reads
/// breaks, the tests that use it fail instead of hanging.)
private let endlessRead =
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) SELECT max(x) FROM n"

private func counterStore(in folder: URL) throws -> Store {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1: counter") { db in
        try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY)")
    }
    return try Store(location: .file(folder.appendingPathComponent("reads.sqlite").path), migrator: migrator)
}

/// A number several threads update.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

private func count(_ db: Database) throws -> Int {
    try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item")) ?? -1
}

@Suite("Store reads on the calling thread")
struct ReadTests {
    @Test("a read runs on the caller's thread and sees every committed write")
    func onTheCallersThread() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            try await store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (1), (2)") }
            let caller = pthread_self()
            let (thread, seen) = try store.read { db in (pthread_self(), try count(db)) }
            #expect(pthread_equal(thread, caller) != 0)
            #expect(seen == 2)
            try await store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (3)") }
            #expect(try store.read(count) == 3)
        }
    }

    @Test("a long read runs on a reader thread of its own, not the caller's")
    func longReadElsewhere() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            try await store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (1)") }
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let (caller, reader, seen) = try await Task(executorPreference: EventLoopTaskExecutor(loop: loop)) {
                let caller = pthread_self()
                let (reader, seen) = try await store.longRead { db in (pthread_self(), try count(db)) }
                return (caller, reader, seen)
            }.value
            #expect(pthread_equal(caller, reader) == 0)
            #expect(seen == 1)
        }
    }

    @Test("a read's statements see one snapshot, whatever commits meanwhile")
    func oneSnapshot() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            let (before, after) = try store.read { db in
                let before = try count(db)
                // Another connection commits between the read's two statements.
                try store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (1)") }
                return (before, try count(db))
            }
            #expect(before == 0 && after == 0)
            #expect(try store.read(count) == 1)
        }
    }

    @Test("reads at once on several threads each get a connection, kept open for the next reads")
    func concurrentReads() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            try await store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (1)") }
            let readers = 4
            let inside = Counter()
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<readers {
                    group.addTask {
                        try await offThePool {
                            try store.read { db in
                                // Every reader waits inside its read until all are inside: only
                                // reads that really run at once get there.
                                inside.value.add(1, ordering: .relaxed)
                                let end = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
                                while inside.value.load(ordering: .relaxed) < readers,
                                    DispatchTime.now().uptimeNanoseconds < end
                                {
                                    usleep(200)
                                }
                                return try count(db) == 1 && inside.value.load(ordering: .relaxed) == readers
                            }
                        }
                    }
                }
                for try await allInside in group { #expect(allInside) }
            }
            #expect(store.idleReadConnections == readers)
            _ = try store.read(count)
            #expect(store.idleReadConnections == readers)
        }
    }

    @Test("a read stops when its task is cancelled, and its connection reads again after")
    func cancelledRead() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            let started = Counter()
            // On an event loop, as a handler's read runs: not on Swift's two-thread pool, which
            // other tests' work can hold for seconds.
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let read = Task(executorPreference: EventLoopTaskExecutor(loop: loop)) {
                try store.read { db in
                    started.value.store(1, ordering: .releasing)
                    return try Int.fetchOne(db, sql: endlessRead)
                }
            }
            try await eventually("the read started") { started.value.load(ordering: .acquiring) == 1 }
            read.cancel()
            await #expect(throws: CancellationError.self) { try await read.value }
            try await store.writer.write { db in try db.execute(sql: "INSERT INTO item (id) VALUES (1)") }
            #expect(try store.read(count) == 1)
        }
    }

    @Test("a read stops when its call's deadline passes")
    func deadlinePassesDuringRead() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            let deadline = DispatchTime.now().uptimeNanoseconds + 50_000_000
            #expect(throws: CallDeadlinePassed.self) {
                try CallDeadline.$uptimeNanoseconds.withValue(deadline) {
                    try store.read { db in try Int.fetchOne(db, sql: endlessRead) }
                }
            }
            #expect(try store.read(count) == 0)
            // Without a deadline a long read runs to its end.
            let long = try store.read { db in
                try Int.fetchOne(
                    db,
                    sql:
                        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?) SELECT max(x) FROM n",
                    arguments: [200_000]
                )
            }
            #expect(long == 200_000)
        }
    }

    @Test("reads stopped again and again leave their connection able to end its transaction")
    func manyStoppedReads() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            // SQLite counts a statement's steps across its runs: the cached ROLLBACK that ends
            // a stopped read reaches the progress handler every few hundred reads. Were it
            // stopped there, the transaction would stay open and GRDB would trap.
            let passed = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<1_500 {
                #expect(throws: CallDeadlinePassed.self) {
                    try CallDeadline.$uptimeNanoseconds.withValue(passed) {
                        try store.read { db in try Int.fetchOne(db, sql: endlessRead) }
                    }
                }
            }
            #expect(try store.read(count) == 0)
        }
    }

    @Test("a call whose read runs past its deadline is answered DEADLINE_EXCEEDED, and its loop serves on")
    func deadlineOverTheWire() async throws {
        try await withScratchFolder("hearth-reads") { folder in
            let store = try counterStore(in: folder)
            try await withServer(services: [EndlessReads(store: store)]) { _, port in
                let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
                let started = DispatchTime.now().uptimeNanoseconds
                do {
                    let _: Hearth_Echo_V1_EchoResponse = try await client.call(
                        "hearth.test.v1.Reads/Endless",
                        Hearth_Echo_V1_EchoRequest(),
                        options: CallOptions(timeout: .milliseconds(200))
                    )
                    Issue.record("an endless read answered")
                } catch {
                    #expect(RPCError(answering: error).code == .deadlineExceeded)
                }
                // Stopped by the deadline, not by the test's own patience (the call's 200 ms
                // plus a generous allowance for a stalled machine).
                #expect(DispatchTime.now().uptimeNanoseconds - started < 20_000_000_000)
                let answer: Hearth_Echo_V1_EchoResponse = try await client.call(
                    "hearth.test.v1.Reads/Count",
                    Hearth_Echo_V1_EchoRequest(),
                    options: CallOptions(timeout: .seconds(30))
                )
                #expect(answer.text == "0")
                await client.close()
            }
        }
    }
}

/// Calls whose handlers read the store on their connection's loop.
private struct EndlessReads: RPCService {
    let store: Store
    var serviceName: String { "hearth.test.v1.Reads" }
    var methods: [RPCMethod] {
        let store = self.store
        return [
            .unary("hearth.test.v1.Reads/Endless") { (_: Hearth_Echo_V1_EchoRequest, _) in
                _ = try store.read { db in try Int.fetchOne(db, sql: endlessRead) }
                return Hearth_Echo_V1_EchoResponse()
            },
            .unary("hearth.test.v1.Reads/Count") { (_: Hearth_Echo_V1_EchoRequest, _) in
                var response = Hearth_Echo_V1_EchoResponse()
                response.text = String(try store.read(count))
                return response
            },
        ]
    }
}
