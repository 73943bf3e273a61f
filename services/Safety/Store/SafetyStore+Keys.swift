import Foundation
import GRDB
import HearthStore

// The keys personal values are sealed with: checked when the store opens, and rotated while it
// runs (`hearth rotate-data-key`: a new key in the file, every value sealed again under it, the
// old keys retired).
extension SafetyStore {

    /// Refuses keys that are not the store's: an index key other than the one its address keys
    /// were hashed with, or a ring without (or with another) key some value is sealed with. The
    /// first open records the index key's check; one after the migration that sealed values
    /// stored in clear rebuilds the file, so that no copy of them is left (``Store/scrub()``).
    func checkKeys() throws {
        let check = self.keys.keyedHash(SealingMigration.indexCheckText)
        let scrub = try self.db.write { db -> Bool in
            guard let row = try Row.fetchOne(db, sql: "SELECT index_check, scrub_needed FROM data_key") else {
                try db.execute(
                    sql: "INSERT INTO data_key (id, index_check, scrub_needed) VALUES (1, ?, 0)",
                    arguments: [check]
                )
                return false
            }
            guard (row["index_check"] as String) == check else { throw DataKeysDoNotMatch(indexKey: true) }
            return row["scrub_needed"] as Bool
        }
        try self.base.read { db in try SealedSample.check(self.keys, opens: try Self.sealedSamples(in: db)) }
        if scrub {
            try self.base.scrub()
            try self.db.write { db in try db.execute(sql: "UPDATE data_key SET scrub_needed = 0") }
            // The flag's own update must not leave the WAL holding the pages the scrub emptied.
            try self.base.scrub()
        }
    }

    func sealedSamples() async throws -> [UInt32: [SealedSample]] {
        try await self.base.longRead { db in try Self.sealedSamples(in: db) }
    }

    /// Values sealed under each key in use, by key id: one row per key prefix of each field.
    static func sealedSamples(in db: Database) throws -> [UInt32: [SealedSample]] {
        var samples: [UInt32: [SealedSample]] = [:]
        for field in SealedField.allCases {
            // Only pending messages keep sealed values (an index covers them).
            let pending = field.table == AlertRecord.databaseTableName ? "AND state = 'pending'" : ""
            // One row per key prefix (SQLite takes the other columns from one row of each group).
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT substr(\(field.column), 1, 5) AS prefix, \(field.keyColumn) AS row, \(field.column) AS value
                    FROM \(field.table) WHERE length(\(field.column)) > 0 \(pending)
                    GROUP BY substr(\(field.column), 1, 5)
                    """
            )
            for row in rows {
                // Not a sealed value (its first byte damaged): it says nothing of the keys, and
                // fails only where it is used.
                guard let id = DataKeys.keyID(ofPrefix: row["prefix"]) else { continue }
                samples[id, default: []].append(SealedSample(field: field, row: row["row"], value: row["value"]))
            }
        }
        return samples
    }

    /// Seals again, under the sealing key, every value sealed under another, walking each table
    /// by its key `batch` rows a transaction (calls go on between). Returns how many values.
    func resealAll(batch: Int) async throws -> Int {
        var total = 0
        for field in SealedField.allCases {
            var after = ""
            while true {
                let from = after
                let (count, last) = try await self.base.write { db in
                    try self.reseal(field, after: from, limit: batch, in: db)
                }
                total += count
                guard let last else { break }
                after = last
            }
        }
        return total
    }

    /// Reseals what needs it among the `limit` rows after `after` (by key); answers how many
    /// values, and the last key read (nil at the table's end).
    private func reseal(_ field: SealedField, after: String, limit: Int, in db: Database) throws -> (Int, String?) {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT \(field.keyColumn) AS row, \(field.column) AS value FROM \(field.table)
                WHERE \(field.keyColumn) > ? ORDER BY \(field.keyColumn) LIMIT ?
                """,
            arguments: [after, limit]
        )
        let prefix = self.keys.sealingPrefix
        var count = 0
        for row in rows {
            let value: Data = row["value"]
            guard !value.isEmpty, value.prefix(prefix.count) != prefix else { continue }
            let id: String = row["row"]
            let clear = try self.keys.open(value, field, row: id)
            try db.execute(
                sql: "UPDATE \(field.table) SET \(field.column) = ? WHERE \(field.keyColumn) = ?",
                arguments: [self.keys.seal(clear, field, row: id), id]
            )
            count += 1
        }
        return (count, rows.count < limit ? nil : rows.last?["row"])
    }
}

/// A data key file that does not fit the store: it would read nothing back, or hash addresses
/// other than they were hashed.
public struct DataKeysDoNotMatch: Error, CustomStringConvertible {
    /// Keys values are sealed with that the file lacks.
    public var missingKeys: [UInt32] = []
    /// Keys the file has under an id in use, but not the ones the values were sealed with.
    public var wrongKeys: [UInt32] = []
    /// The file's index key is not the one the store's address keys were made with.
    public var indexKey = false

    public var description: String {
        let fix = ": give the service the key file it was started with"
        if self.indexKey {
            return "the data key file's index key is not the one this safety store was sealed with" + fix
        }
        var problems: [String] = []
        if !self.missingKeys.isEmpty {
            problems.append(
                "values are sealed under data key \(self.missingKeys.map(String.init).joined(separator: ", ")), "
                    + "which the data key file does not hold"
            )
        }
        if !self.wrongKeys.isEmpty {
            problems.append(
                "the data key file's key \(self.wrongKeys.map(String.init).joined(separator: ", ")) "
                    + "does not open the values sealed under that id"
            )
        }
        return "in this safety store, " + problems.joined(separator: "; ") + fix
    }
}
