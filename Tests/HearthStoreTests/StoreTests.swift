import Foundation
import GRDB
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@Suite("Store base")
struct StoreTests {
    private func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: parent and child") { db in
            try db.execute(
                sql: """
                    CREATE TABLE parent (id INTEGER PRIMARY KEY);
                    CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id));
                    """
            )
        }
        return migrator
    }

    @Test("a file store runs WAL with foreign keys on and records its migrations")
    func fileStore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-store-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("nested/test.sqlite").path
        let store = try Store(location: .file(path), migrator: self.migrator())
        let (journal, foreignKeys, applied) = try store.writer.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                try Int.fetchOne(db, sql: "PRAGMA foreign_keys"),
                try self.migrator().appliedIdentifiers(db)
            )
        }
        #expect(journal == "wal")
        #expect(foreignKeys == 1)
        #expect(applied == ["v1: parent and child"])
        #expect(throws: DatabaseError.self) {
            try store.writer.write { db in try db.execute(sql: "INSERT INTO child (id, parent_id) VALUES (1, 99)") }
        }
        // Opening again applies nothing twice.
        _ = try Store(location: .file(path), migrator: self.migrator())
    }

    @Test("an in-memory store and a manual clock for unit tests")
    func inMemoryAndClock() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000))
        let store = try Store(location: .inMemory, migrator: self.migrator(), clock: clock)
        try store.writer.write { db in try db.execute(sql: "INSERT INTO parent (id) VALUES (1)") }
        #expect(try store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM parent") } == 1)
        clock.advance(by: 60)
        #expect(store.clock.now() == Date(timeIntervalSince1970: 1_060))
    }
}

@Suite("Store base: one process per file, no schema from the future")
struct StoreGuardTests {
    private func migrator(_ names: [String]) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for name in names {
            migrator.registerMigration(name) { db in
                try db.execute(sql: "CREATE TABLE \"\(name)\" (id INTEGER PRIMARY KEY)")
            }
        }
        return migrator
    }

    @Test("a store migrated by a newer version is refused, naming what it does not know, and left as it was")
    func newerStoreRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-store-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("s.sqlite").path
        _ = try Store(location: .file(path), migrator: self.migrator(["v1", "v2"]))
        do {
            _ = try Store(location: .file(path), migrator: self.migrator(["v1"]))
            Issue.record("an older version opened a newer store")
        } catch let error as StoreFromNewerVersion {
            #expect(error.migrations == ["v2"])
            #expect(error.description.contains(path))
        }
        let reopened = try Store(location: .file(path), migrator: self.migrator(["v1", "v2"]))
        let applied = try reopened.writer.read { db in try self.migrator(["v1", "v2"]).appliedIdentifiers(db) }
        #expect(applied == ["v1", "v2"])
    }

    @Test("a file that is not a database is refused with an error naming it")
    func notADatabase() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-store-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("tasks.sqlite").path
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Store(location: .file(path), migrator: self.migrator(["v1"]))
            Issue.record("opened a file of B's")
        } catch let error as StoreOpenFailed {
            #expect("\(error)" == "cannot open the store \(path): file is not a database", "\(error)")
        }
    }

    @Test("a store file another process holds is refused with a clear error; this process holds its own")
    func oneProcessPerFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-store-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let held = folder.appendingPathComponent("held.sqlite").path
        let mine = folder.appendingPathComponent("mine.sqlite").path

        // Another process (python) holds the first file's lock.
        let out = Pipe()
        let other = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                "import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                    + "f.write('4242'); f.flush()\nprint('locked', flush=True)\ntime.sleep(60)",
                held + ".lock",
            ],
            output: .pipe(out),
            error: .inherit
        )
        defer { other.send(SIGKILL) }
        let line = out.fileHandleForReading.availableData
        #expect(String(decoding: line, as: UTF8.self).hasPrefix("locked"))
        do {
            _ = try Store(location: .file(held), migrator: self.migrator(["v1"]), lockWait: 0)
            Issue.record("a store another process holds was opened")
        } catch let error as StoreLocked {
            #expect(error.description.contains("held.sqlite") && error.description.contains("4242"))
        }
        // A process that stops while this one waits (a restart overlapping the old process's
        // drain): the store opens once it has.
        // (On a thread of its own: the wait blocks the thread it runs on.)
        let migrator = self.migrator(["v1"])
        let waiting = Task {
            try await offThePool { try Store(location: .file(held), migrator: migrator, lockWait: 30) }
        }
        try await Task.sleep(for: .milliseconds(300))
        other.send(SIGKILL)
        _ = try await offThePool { other.waitUntilExit() }
        _ = try await waiting.value

        // This process holds the second file: another process cannot take its lock.
        _ = try Store(location: .file(mine), migrator: self.migrator(["v1"]))
        _ = try Store(location: .file(mine), migrator: self.migrator(["v1"]))  // again in this process: fine
        let probe = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                "import fcntl, sys\nf = open(sys.argv[1], 'a')\ntry:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                    + "    print('free')\nexcept BlockingIOError:\n    print('held')",
                mine + ".lock",
            ]
        )
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "held")
    }
}
