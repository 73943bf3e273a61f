// A child process for the kill -9 durability test (Tests/HearthStoreTests).
//
//   hearth-store-probe PATH COUNT
//
// Opens PATH through the store base and inserts COUNT rows, one transaction each, printing
// "ack N" after each commit returns: exactly what a service does before answering OK. The
// test kills it with SIGKILL part-way and checks that every acknowledged row is in the file.
import Foundation
import GRDB
import HearthStore

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: hearth-store-probe PATH COUNT\n".utf8))
    exit(2)
}

var migrator = DatabaseMigrator()
migrator.registerMigration("v1: acks") { db in
    try db.execute(sql: "CREATE TABLE ack (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
}
let store = try Store(location: .file(arguments[1]), migrator: migrator)
for id in 1...max(count, 1) {
    try store.writer.write { db in
        try db.execute(
            sql: "INSERT INTO ack (id, body) VALUES (?, ?)",
            arguments: [id, String(repeating: "x", count: 100)]
        )
    }
    FileHandle.standardOutput.write(Data("ack \(id)\n".utf8))
}
