import Foundation
import GRDB
import HearthStore

// The keys personal values are sealed with: checked when the store opens, and rotated while it
// runs (`hearth rotate-data-key`: a new key in the file, every value sealed again under it, the
// old keys retired).
extension SafetyStore {
    /// Refuses keys that are not the store's: an index key other than the one its address keys
    /// were hashed with, or a ring without a key some value is sealed with. The first open
    /// records the index key's check; one after a migration that sealed values stored in clear
    /// rebuilds the file, so that no copy of them is left (``Store/scrub()``).
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
            guard (row["index_check"] as String) == check else {
                throw DataKeysDoNotMatch(missingKeys: [], indexKey: true)
            }
            return row["scrub_needed"] as Bool
        }
        let missing = try self.keyIDsInUse().subtracting(self.keys.current.ids)
        guard missing.isEmpty else { throw DataKeysDoNotMatch(missingKeys: missing.sorted(), indexKey: false) }
        if scrub {
            try self.base.scrub()
            try self.db.write { db in try db.execute(sql: "UPDATE data_key SET scrub_needed = 0") }
            // The flag's own update must not leave the WAL holding the pages the scrub emptied.
            try self.base.scrub()
        }
    }

    /// The ids of the keys stored values are sealed with.
    func keyIDsInUse() throws -> Set<UInt32> {
        try self.base.read { db in
            var ids = Set<UInt32>()
            for field in SealedField.allCases {
                // Only pending messages keep sealed values (an index covers them).
                let pending = field.table == AlertRecord.databaseTableName ? "AND state = 'pending'" : ""
                let prefixes = try Data.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT substr(\(field.column), 1, 5) FROM \(field.table)
                        WHERE length(\(field.column)) > 0 \(pending)
                        """
                )
                ids.formUnion(prefixes.compactMap(DataKeys.keyID(ofPrefix:)))
            }
            return ids
        }
    }

    /// Seals again, under the sealing key, every value sealed under another, `batch` rows a
    /// transaction. Returns how many values.
    func resealAll(batch: Int = 500) async throws -> Int {
        var total = 0
        for field in SealedField.allCases {
            while true {
                let count = try await self.base.write { db in
                    try self.reseal(field, limit: batch, in: db)
                }
                total += count
                if count < batch { break }
            }
        }
        return total
    }

    private func reseal(_ field: SealedField, limit: Int, in db: Database) throws -> Int {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT \(field.keyColumn) AS row, \(field.column) AS value FROM \(field.table)
                WHERE length(\(field.column)) > 0 AND substr(\(field.column), 1, 5) <> ? LIMIT ?
                """,
            arguments: [self.keys.sealingPrefix, limit]
        )
        for row in rows {
            let id: String = row["row"]
            let clear = try self.keys.open(row["value"], field, row: id)
            try db.execute(
                sql: "UPDATE \(field.table) SET \(field.column) = ? WHERE \(field.keyColumn) = ?",
                arguments: [self.keys.seal(clear, field, row: id), id]
            )
        }
        return rows.count
    }
}

/// A data key file that does not fit the store: it would read nothing back, or hash addresses
/// other than they were hashed.
public struct DataKeysDoNotMatch: Error, CustomStringConvertible {
    /// Keys values are sealed with that the file lacks.
    public var missingKeys: [UInt32]
    /// The file's index key is not the one the store's address keys were made with.
    public var indexKey: Bool

    public var description: String {
        if self.indexKey {
            return "the data key file's index key is not the one this safety store was sealed with: "
                + "give the service the key file it was started with"
        }
        return "values in this safety store are sealed under data key "
            + self.missingKeys.map(String.init).joined(separator: ", ")
            + ", which the data key file does not hold: give the service the key file it was started with"
    }
}
