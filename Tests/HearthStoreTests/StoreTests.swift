import Foundation
import GRDB
import HearthCore
import HearthStore
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
