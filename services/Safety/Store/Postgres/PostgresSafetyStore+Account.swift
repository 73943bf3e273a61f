import Foundation
import HearthPostgres
import HearthStore
import PostgresNIO

// A user's export and erasure, the data keys, and the housekeeping of history, on PostgreSQL:
// the same rows and rules as ``SafetyStore``'s.
extension PostgresSafetyStore {
    // MARK: Keys

    /// Refuses keys that are not the database's (``SafetyStore/checkKeys()``): the first open
    /// records the index key's check.
    static func check(_ keys: DataKeys, on db: PostgresConnection) async throws {
        let check = keys.keyedHash(SealingMigration.indexCheckText)
        try await db.run("INSERT INTO data_key (id, index_check) VALUES (1, \(check)) ON CONFLICT (id) DO NOTHING")
        let stored = try await db.first("SELECT index_check FROM data_key WHERE id = 1") {
            try $0.value(0, as: String.self)
        }
        guard stored == check else { throw DataKeysDoNotMatch(indexKey: true) }
        try SealedSample.check(keys, opens: try await Self.sealedSamples(on: db))
    }

    func sealedSamples() async throws -> [UInt32: [SealedSample]] {
        try await self.database.read { db in try await Self.sealedSamples(on: db) }
    }

    /// A value sealed under each key in use, by key id: one row per key prefix of each field.
    private static func sealedSamples(on db: PostgresConnection) async throws -> [UInt32: [SealedSample]] {
        var samples: [UInt32: [SealedSample]] = [:]
        for field in SealedField.allCases {
            // Only pending messages keep sealed values.
            let pending = field.table == AlertRecord.databaseTableName ? "AND state = 'pending'" : ""
            let rows = try await db.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT DISTINCT ON (substr(\(field.column), 1, 5)) substr(\(field.column), 1, 5),
                            \(field.keyColumn), \(field.column)
                        FROM \(field.table) WHERE length(\(field.column)) > 0 \(pending)
                        """
                )
            ) {
                (
                    prefix: try $0.value(0, as: Data.self), row: try $0.value(1, as: String.self),
                    value: try $0.value(2, as: Data.self)
                )
            }
            for row in rows {
                // Not a sealed value: it says nothing of the keys (``SafetyStore/sealedSamples(in:)``).
                guard let id = DataKeys.keyID(ofPrefix: row.prefix) else { continue }
                samples[id, default: []].append(SealedSample(field: field, row: row.row, value: row.value))
            }
        }
        return samples
    }

    func resealAll(batch: Int) async throws -> Int {
        let prefix = self.keys.sealingPrefix
        var total = 0
        for field in SealedField.allCases {
            var after = ""
            while true {
                let from = after
                let (count, last) = try await self.database.transaction { db in
                    let rows = try await db.rows(
                        """
                        SELECT \(unescaped: field.keyColumn), \(unescaped: field.column) FROM \(unescaped: field.table)
                        WHERE \(unescaped: field.keyColumn) > \(from) ORDER BY \(unescaped: field.keyColumn)
                        LIMIT \(batch) FOR UPDATE
                        """
                    ) { (id: try $0.value(0, as: String.self), value: try $0.value(1, as: Data.self)) }
                    var count = 0
                    for row in rows where !row.value.isEmpty && row.value.prefix(prefix.count) != prefix {
                        let clear = try self.keys.open(row.value, field, row: row.id)
                        let sealed = self.keys.seal(clear, field, row: row.id)
                        try await db.run(
                            """
                            UPDATE \(unescaped: field.table) SET \(unescaped: field.column) = \(sealed)
                            WHERE \(unescaped: field.keyColumn) = \(row.id)
                            """
                        )
                        count += 1
                    }
                    return (count, rows.count < batch ? nil : rows.last?.id)
                }
                total += count
                guard let last else { break }
                after = last
            }
        }
        return total
    }

    // MARK: Export and erasure

    func checkIns(of user: String) async throws -> [CheckInRow] {
        try await self.database.read { db in
            try await db.rows(
                """
                SELECT at, source, time_zone, device_info, counted FROM heartbeat
                WHERE user_id = \(user) ORDER BY at, request_id
                """
            ) {
                CheckInRow(
                    at: try $0.date(0),
                    source: try $0.value(1),
                    timeZone: try $0.value(2),
                    deviceInfo: try $0.value(3),
                    counted: try $0.value(4)
                )
            }
        }
    }

    func messages(of user: String) async throws -> [AlertRecord] {
        try await self.database.read { db in
            try await self.alerts("WHERE user_id = \(user) ORDER BY created_at, id", on: db)
        }
    }

    /// Deletes the user's profile with everything of theirs but what their contacts' addresses
    /// answered (``SafetyStore/eraseUser(_:)``). The deleted rows' bytes stay in PostgreSQL's
    /// dead tuples until autovacuum reclaims them.
    func eraseUser(_ user: String) async throws -> Int {
        try await self.database.transaction { db in
            try await db.lock(user)
            var deleted = 0
            // Children first: the profile's delete would cascade to them uncounted.
            for table in ["heartbeat", "alert", "contact", "profile", "contact_token", "invitation_sent"] {
                deleted += try await db.count("DELETE FROM \(unescaped: table) WHERE user_id = \(user) RETURNING 1")
            }
            return deleted
        }
    }

    // MARK: Housekeeping

    func pruneHistory(now: Date, usersPerBatch: Int, rowsPerTransaction: Int) async throws
        -> (heartbeats: Int, alerts: Int)
    {
        let heartbeatsBefore = now.addingTimeInterval(-SafetyStore.heartbeatRetention)
        let alertsBefore = now.addingTimeInterval(-SafetyStore.alertRetention)
        var (heartbeats, alerts) = (0, 0)
        var after = ""
        while true {
            let from = after
            let users = try await self.database.read { db in
                try await db.rows(
                    """
                    SELECT user_id, check_in_epoch FROM profile WHERE user_id > \(from)
                    ORDER BY user_id LIMIT \(usersPerBatch)
                    """
                ) { (user: try $0.value(0, as: String.self), epoch: try $0.value(1, as: Int.self)) }
            }
            for profile in users {
                while true {
                    let (gone, old) = try await self.database.transaction { db in
                        let gone = try await db.count(
                            """
                            DELETE FROM heartbeat WHERE user_id = \(profile.user) AND request_id IN (
                                SELECT request_id FROM heartbeat WHERE user_id = \(profile.user)
                                    AND at < \(heartbeatsBefore.postgres) LIMIT \(rowsPerTransaction))
                            RETURNING 1
                            """
                        )
                        let old = try await db.count(
                            """
                            DELETE FROM alert WHERE id IN (
                                SELECT id FROM alert WHERE user_id = \(profile.user) AND epoch < \(profile.epoch)
                                    AND created_at < \(alertsBefore.postgres) AND state <> 'pending'
                                    AND claimed_at IS NULL
                                LIMIT \(max(0, rowsPerTransaction - gone)))
                            RETURNING 1
                            """
                        )
                        return (gone, old)
                    }
                    heartbeats += gone
                    alerts += old
                    if gone + old < rowsPerTransaction { break }
                }
            }
            guard users.count == usersPerBatch, let last = users.last else { break }
            after = last.user
        }
        try await self.database.transaction { db in
            try await db.run("DELETE FROM invitation_sent WHERE at < \(now.addingTimeInterval(-86_400).postgres)")
        }
        return (heartbeats, alerts)
    }

    func pruneContactLinks(now: Date, rowsPerTransaction: Int) async throws -> Int {
        let spentBefore = now.addingTimeInterval(-SafetyStore.spentLinkRetention)
        return try await self.deleteInBatches(limit: rowsPerTransaction) {
            """
            DELETE FROM contact_token WHERE hash IN (
                SELECT hash FROM contact_token
                WHERE expires_at IS NOT NULL AND expires_at <= \(now.postgres)
                    AND ((purpose = \(LinkPurpose.answer.rawValue) AND expires_at < \(spentBefore.postgres))
                        OR purpose = \(LinkPurpose.optOut.rawValue))
                LIMIT \(rowsPerTransaction))
            RETURNING 1
            """
        }
    }

    func pruneContactAddresses(now: Date, rowsPerTransaction: Int) async throws -> Int {
        let unusedBefore = now.addingTimeInterval(-SafetyStore.addressRetention)
        return try await self.deleteInBatches(limit: rowsPerTransaction) {
            """
            DELETE FROM contact_address WHERE (user_id, address_key) IN (
                SELECT a.user_id, a.address_key FROM contact_address a
                WHERE a.refused IS NULL AND (a.last_invited_at IS NULL OR a.last_invited_at < \(unusedBefore.postgres))
                    AND NOT EXISTS (
                        SELECT 1 FROM contact c WHERE c.user_id = a.user_id AND c.email_key = a.address_key)
                LIMIT \(rowsPerTransaction))
            RETURNING 1
            """
        }
    }

    /// Runs `delete` (a `DELETE ... RETURNING 1` of at most `limit` rows) in transactions until
    /// one deletes fewer. Returns how many rows went.
    private func deleteInBatches(limit: Int, _ delete: () -> PostgresQuery) async throws -> Int {
        var deleted = 0
        while true {
            let query = delete()
            let gone = try await self.database.transaction { db in try await db.count(query) }
            deleted += gone
            if gone < limit { return deleted }
        }
    }
}
