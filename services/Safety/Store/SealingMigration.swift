import Foundation
import GRDB
import HearthCore
import HearthStore

/// The v7 migration's work on rows stored before sealing: every name and address sealed,
/// every address key made a keyed hash, every message no longer pending emptied of its address
/// and words, every kept error's addresses masked. Row by row, in the migration's transaction.
/// The store is then rebuilt once, whatever rows there were: a file that holds none now may
/// still hold deleted ones in its free pages or its WAL (before v7, deletes left their bytes).
struct SealingMigration {
    let keys: DataKeys

    /// The text that checks a key file's index key against the store's (``SafetyStore/checkKeys()``).
    static let indexCheckText = "hearth safety index key"

    func run(in db: Database) throws {
        try self.sealProfiles(in: db)
        try self.sealContacts(in: db)
        try self.hashAddressKeys(table: "contact_address", in: db)
        try self.hashAddressKeys(table: "contact_token", in: db)
        try self.sealAlerts(in: db)
        try db.execute(
            sql: "INSERT INTO data_key (id, index_check, scrub_needed) VALUES (1, ?, 1)",
            arguments: [self.keys.keyedHash(Self.indexCheckText)]
        )
    }

    private func sealProfiles(in db: Database) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT user_id, name, email FROM profile")
        for row in rows {
            let user: String = row["user_id"]
            try db.execute(
                sql: "UPDATE profile SET name = ?, email = ? WHERE user_id = ?",
                arguments: [
                    self.keys.seal(row["name"] as String, .profileName, row: user),
                    self.keys.seal(row["email"] as String, .profileEmail, row: user), user,
                ]
            )
        }
    }

    private func sealContacts(in db: Database) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT id, email, name, email_key FROM contact")
        for row in rows {
            let id: String = row["id"]
            try db.execute(
                sql: "UPDATE contact SET email = ?, name = ?, email_key = ? WHERE id = ?",
                arguments: [
                    self.keys.seal(row["email"] as String, .contactEmail, row: id),
                    self.keys.seal(row["name"] as String, .contactName, row: id),
                    // Already as addresses are compared (lowercased): hashed as they are.
                    self.keys.keyedHash(row["email_key"] as String), id,
                ]
            )
        }
    }

    /// `table`'s `address_key` (an address, lowercased) made its keyed hash.
    private func hashAddressKeys(table: String, in db: Database) throws {
        let keys = try String.fetchAll(db, sql: "SELECT DISTINCT address_key FROM \(table)")
        for key in keys {
            try db.execute(
                sql: "UPDATE \(table) SET address_key = ? WHERE address_key = ?",
                arguments: [self.keys.keyedHash(key), key]
            )
        }
    }

    private func sealAlerts(in db: Database) throws {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT id, channel, contact_id, address, subject, body, state, last_error FROM alert"
        )
        for row in rows {
            let id: String = row["id"]
            let address: String = row["address"]
            // An email to a contact keeps its address's hash: an all-clear finds the contact by it.
            // An SMTP server's reply kept before addresses were masked may name the recipient.
            try db.execute(
                sql: "UPDATE alert SET last_error = ? WHERE id = ?",
                arguments: [(row["last_error"] as String).maskingEmailAddresses, id]
            )
            let addressKey =
                (row["channel"] as String) == AlertRecord.Channel.email.rawValue
                    && !(row["contact_id"] as String).isEmpty
                ? self.keys.addressKey(address) : ""
            if (row["state"] as String) == AlertRecord.State.pending.rawValue {
                try db.execute(
                    sql: "UPDATE alert SET address = ?, subject = ?, body = ?, address_key = ? WHERE id = ?",
                    arguments: [
                        self.keys.seal(address, .alertAddress, row: id),
                        self.keys.seal(row["subject"] as String, .alertSubject, row: id),
                        self.keys.seal(row["body"] as String, .alertBody, row: id), addressKey, id,
                    ]
                )
            } else {
                try db.execute(
                    sql: "UPDATE alert SET \(AlertRecord.forgetText), address_key = ? WHERE id = ?",
                    arguments: [addressKey, id]
                )
            }
        }
    }
}
