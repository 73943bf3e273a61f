import Foundation
import GRDB
import HearthPostgres
import HearthStore
import Logging
import PostgresNIO

/// Copies a safety SQLite store into an empty PostgreSQL database (`hearth migrate-store`):
/// every table the store keeps, 500 rows to a statement in one transaction, then the counts
/// compared.
/// Sealed values are copied as they are: the PostgreSQL store opens them with the same data key
/// file (its index key is recorded for the database before the copy).
enum StoreCopy {
    /// How a column is read from SQLite and bound for PostgreSQL.
    enum Kind {
        case text, optionalText, integer, boolean, date, optionalDate, bytes
    }

    /// The tables copied, parents first, with their columns.
    static let tables: [(name: String, columns: [(String, Kind)])] = [
        ("profile", ProfileRecord.columnNames.map { ($0, Self.profileKind($0)) }),
        (
            "contact",
            [
                ("id", .text), ("user_id", .text), ("email", .bytes), ("email_key", .text), ("name", .bytes),
                ("created_at", .date), ("state", .text), ("invited_at", .optionalDate),
                ("invitation_expires_at", .optionalDate), ("invitations_sent", .integer),
                ("answered_at", .optionalDate), ("alarms_until", .optionalDate),
            ]
        ),
        (
            "heartbeat",
            [
                ("user_id", .text), ("at", .date), ("time_zone", .text), ("device_info", .text), ("source", .text),
                ("request_id", .text), ("counted", .boolean),
            ]
        ),
        (
            "alert",
            [
                ("id", .text), ("user_id", .text), ("epoch", .integer), ("kind", .text), ("channel", .text),
                ("contact_id", .text), ("address", .bytes), ("address_key", .text), ("subject", .bytes),
                ("body", .bytes), ("state", .text), ("attempts", .integer), ("last_error", .text),
                ("next_attempt_at", .optionalDate), ("sent_at", .optionalDate), ("created_at", .date),
                ("claimed_at", .optionalDate), ("may_have_arrived", .boolean),
            ]
        ),
        (
            "contact_address",
            [
                ("user_id", .text), ("address_key", .text), ("invitations", .integer), ("refused", .optionalText),
                ("last_invited_at", .optionalDate),
            ]
        ),
        ("invitation_sent", [("user_id", .text), ("at", .date)]),
        (
            "contact_token",
            [
                ("hash", .bytes), ("contact_id", .text), ("user_id", .text), ("address_key", .text),
                ("purpose", .text), ("expires_at", .optionalDate), ("created_at", .date),
            ]
        ),
    ]

    /// Each table's key, which the copy reads along (tables without rowid have only it).
    private static let order: [String: [String]] = [
        "profile": ["user_id"], "contact": ["id"], "heartbeat": ["user_id", "request_id"], "alert": ["id"],
        "contact_address": ["user_id", "address_key"], "invitation_sent": ["rowid"], "contact_token": ["hash"],
    ]

    /// Rows read and written at a time: one SQLite read and one PostgreSQL statement each.
    static let batch = 500

    private static func profileKind(_ column: String) -> Kind {
        switch column {
        case "name", "email": .bytes
        case "reminder_enabled", "count_activity", "is_active": .boolean
        case "threshold_hours", "reminder_hour", "reminder_minute", "snoozes", "epoch", "check_in_epoch",
            "snoozes_in_a_row":
            .integer
        case "period_start", "created_at", "updated_at": .date
        case "last_check_in_at", "paused_until", "next_due_at": .optionalDate
        default: .text
        }
    }

    /// Copies `source` (opened, so migrated and checked against `keys`, and locked: no safety
    /// process may run on it meanwhile) into the database at `target`. Answers the rows copied
    /// by table.
    /// - Throws: ``StoreCopyRefused`` when the database holds safety rows already, or the counts
    ///   differ after the copy (then nothing is committed).
    static func run(from source: StoreLocation, to target: PostgresLocation, keys: DataKeys, logger: Logger)
        async throws -> [String: Int]
    {
        let store = try SafetyStore(location: source, keys: keys)
        // Migrated, and the keys' index check recorded (or checked) for the database.
        _ = try await PostgresSafetyStore.open(target, keys: keys, logger: logger)
        return try await PostgresPool.withSetupConnection(target, logger: logger) { connection in
            try await connection.inTransaction(logger: logger) { db in
                for table in Self.tables {
                    let rows =
                        try await db.first("SELECT COUNT(*) FROM \(unescaped: table.name)") {
                            try $0.value(0, as: Int.self)
                        } ?? 0
                    guard rows == 0 else {
                        throw StoreCopyRefused(
                            description:
                                "the database's \(table.name) table holds \(rows) rows: copy only into an empty database"
                        )
                    }
                }
                var copied: [String: Int] = [:]
                for table in Self.tables {
                    copied[table.name] = try await Self.copy(table.name, table.columns, from: store, to: db)
                    let stored =
                        try await db.first("SELECT COUNT(*) FROM \(unescaped: table.name)") {
                            try $0.value(0, as: Int.self)
                        } ?? -1
                    guard stored == copied[table.name] else {
                        throw StoreCopyRefused(
                            description:
                                "\(table.name): \(copied[table.name] ?? 0) rows read, \(stored) in the database"
                        )
                    }
                }
                // Statistics for what was just written: the first calls' plans read them (a table
                // without any is taken for small, and read whole).
                for table in Self.tables { try await db.run("ANALYZE \(unescaped: table.name)") }
                return copied
            }
        }
    }

    /// Copies one table in batches of ``batch`` rows: each read along the table's key from
    /// where the last ended (a read transaction each), and written in one multi-row INSERT.
    private static func copy(
        _ table: String,
        _ columns: [(String, Kind)],
        from store: SafetyStore,
        to db: PostgresConnection
    ) async throws -> Int {
        let names = columns.map(\.0).joined(separator: ", ")
        let key = Self.order[table] ?? ["rowid"]
        let keyList = key.joined(separator: ", ")
        var copied = 0
        var after: [DatabaseValue]?
        while true {
            let batch = try store.base.read { sqlite in
                let from =
                    after == nil ? "" : "WHERE (\(keyList)) > (\(key.map { _ in "?" }.joined(separator: ", ")))"
                return try Row.fetchAll(
                    sqlite,
                    sql: "SELECT \(names), \(keyList) FROM \(table) \(from) ORDER BY \(keyList) LIMIT \(Self.batch)",
                    arguments: StatementArguments(after ?? [])
                )
            }
            guard let last = batch.last else { return copied }
            after = (0..<key.count).map { last[columns.count + $0] }
            var bindings = PostgresBindings(capacity: batch.count * columns.count)
            var tuples: [String] = []
            for row in batch {
                let first = bindings.count + 1
                for (index, (_, kind)) in columns.enumerated() {
                    switch kind {
                    case .text: bindings.append(row[index] as String)
                    case .optionalText: bindings.append(row[index] as String?)
                    case .integer: bindings.append(row[index] as Int)
                    case .boolean: bindings.append(row[index] as Bool)
                    case .date: bindings.append((row[index] as StoredDate).date.postgres)
                    case .optionalDate: bindings.append((row[index] as StoredDate?)?.date.postgres)
                    case .bytes: try bindings.append(row[index] as Data? ?? Data())
                    }
                }
                tuples.append("(" + (first..<first + columns.count).map { "$\($0)" }.joined(separator: ", ") + ")")
            }
            try await db.run(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO \(table) (\(names)) VALUES \(tuples.joined(separator: ", "))",
                    binds: bindings
                )
            )
            copied += batch.count
            if batch.count < Self.batch { return copied }
        }
    }
}

/// A copy the command will not make, and why.
public struct StoreCopyRefused: Error, CustomStringConvertible {
    public let description: String
}

extension SafetyService {
    /// Copies the safety store at `source` into the empty PostgreSQL database at `target`
    /// (``StoreCopy``); answers the rows copied by table.
    public static func copyStore(
        from source: StoreLocation,
        to target: PostgresLocation,
        keys: DataKeys,
        logger: Logger
    )
        async throws -> [String: Int]
    {
        try await StoreCopy.run(from: source, to: target, keys: keys, logger: logger)
    }
}
