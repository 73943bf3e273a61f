import Foundation
import GRDB
import HearthContracts
import HearthPostgres
import HearthRPC
import HearthStore
import HearthTestSupport
import PostgresNIO
import SwiftProtobuf
import Testing

@testable import SafetyService

/// Contacts who agreed, the way they agree: from the link in their invitation.
extension SafetyPersistence {
    /// Adds a contact and confirms it from its invitation's link, as the contact would: the
    /// invitation is claimed and recorded as sent (a sender's part), then the link answered. The
    /// user's push of it is delivered too, so the outbox holds nothing of it.
    func addConfirmedContact(_ user: String, email: String, name: String = "") async throws {
        guard case .added = try await self.addContact(user, email: email, name: name) else {
            throw ContactNotAdded(email: email)
        }
        for claim in try await self.claimDue(.email, now: self.now, limit: 100, lease: 60) {
            try await self.record(claim.claim, attempt: .success(""), now: self.now)
            if claim.alert.kind == MessageKind.invitation, let token = claim.links?.answer {
                _ = try await self.answer(token, .confirm)
            }
        }
        for claim in try await self.claimDue(.push, now: self.now, limit: 100, lease: 60)
        where claim.alert.kind.hasPrefix("contact_") {
            try await self.record(claim.claim, attempt: .success(""), now: self.now)
        }
    }

    /// An armed switch for `user` (24 h, one confirmed contact at `USER@contacts.example`),
    /// checked in now.
    func armSwitch(_ user: String) async throws {
        _ = try await self.upsertProfile(user) { profile in
            profile.name = SealedText(user)
            profile.email = "\(user)@example.com"
            profile.thresholdHours = 24
            profile.timeZone = "UTC"
        }
        try await self.addConfirmedContact(user, email: "\(user)@contacts.example")
        _ = try await self.recordHeartbeat(user, timeZone: nil, deviceInfo: "test", requestID: "first", source: "app")
    }
}

/// Runs `body` while `store`'s pool runs, and stops the pool afterwards, awaited, whether `body`
/// throws or not.
func whileServing<T>(_ store: PostgresSafetyStore, _ body: () async throws -> T) async throws -> T {
    let pool = Task { try await store.database.run() }
    let outcome: Result<T, any Error>
    do {
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    pool.cancel()
    _ = await pool.result
    return try outcome.get()
}

struct ContactNotAdded: Error {
    var email: String
}

extension SafetyStore {
    /// Confirms every invited contact of `user` without their invitation, which is cancelled
    /// unsent (for tests whose mail server must get nothing but alarms): a link's token is made
    /// as a sender makes one, then answered through the same path as the contact page's.
    func confirmWithoutMail(_ user: String) async throws {
        let now = self.now
        let tokens = try await self.base.writer.write { db in
            try db.execute(
                sql:
                    "UPDATE alert SET state = 'cancelled', next_attempt_at = NULL WHERE user_id = ? AND kind = 'invitation'",
                arguments: [user]
            )
            return try Row.fetchAll(
                db,
                sql: "SELECT id, email_key FROM contact WHERE user_id = ? AND state = 'invited'",
                arguments: [user]
            )
            .map { row in
                let token = LinkToken.make()
                try db.execute(
                    sql: """
                        INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                        VALUES (?, ?, ?, ?, 'answer', NULL, ?)
                        """,
                    arguments: [token.hash, row["id"] as String, user, row["email_key"] as String, now]
                )
                return token
            }
        }
        for token in tokens { _ = try await self.answer(token, .confirm) }
    }
}

extension SafetySystem {
    /// Adds a contact for `user` and confirms it from the link in the invitation the SMTP server
    /// received, through the service, as the contact page does.
    func addConfirmedContact(_ email: String, name: String = "", user: String = "mei") async throws {
        _ = try await self.service.addContact(
            .with {
                $0.email = email
                $0.name = name
            },
            callContext(user)
        )
        try await self.confirmInvitations()
    }

    /// Confirms every invitation the SMTP server received so far (those answered already stay so).
    func confirmInvitations() async throws {
        try await self.settle()
        for token in try self.invitationTokens() {
            _ = try await self.service.answerContactLink(
                .with {
                    $0.token = token
                    $0.action = .confirm
                },
                callContext("contact-page")
            )
        }
        try await self.settle()
    }

    /// The Confirm links' tokens of the invitations received, oldest first.
    func invitationTokens() throws -> [String] {
        try self.sink.messages().compactMap { message in
            (message["body"] as? String).flatMap { Self.token(in: $0, path: "/contact/confirm?t=") }
        }
    }

    /// The token after `path` in `body`'s link.
    static func token(in body: String, path: String) -> String? {
        guard let start = body.range(of: path)?.upperBound else { return nil }
        return String(body[start...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }
}

extension PostgresSafetyStore {
    /// ``SafetyStore/confirmWithoutMail(_:)``, on PostgreSQL.
    func confirmWithoutMail(_ user: String) async throws {
        let now = self.now
        let tokens = try await self.database.transaction { db in
            try await db.run(
                "UPDATE alert SET state = 'cancelled', next_attempt_at = NULL WHERE user_id = \(user) AND kind = 'invitation'"
            )
            let contacts = try await db.rows(
                "SELECT id, email_key FROM contact WHERE user_id = \(user) AND state = 'invited'"
            ) { (try $0.value(0, as: String.self), try $0.value(1, as: String.self)) }
            var tokens: [LinkToken] = []
            for (id, key) in contacts {
                let token = LinkToken.make()
                try await db.run(
                    """
                    INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at)
                    VALUES (\(token.hash), \(id), \(user), \(key), 'answer', NULL, \(now.postgres))
                    """
                )
                tokens.append(token)
            }
            return tokens
        }
        for token in tokens { _ = try await self.answer(token, .confirm) }
    }
}

extension SafetyService {
    /// Confirms `user`'s invited contacts without mail, on whichever store the service runs.
    func confirmWithoutMail(_ user: String) async throws {
        if let postgres = self.store as? PostgresSafetyStore {
            try await postgres.confirmWithoutMail(user)
        } else {
            try await self.fileStore.confirmWithoutMail(user)
        }
    }

    /// How many heartbeat rows are kept without counting, on whichever store.
    func uncountedHeartbeats() async throws -> Int {
        if let postgres = self.store as? PostgresSafetyStore {
            return try await postgres.database.read { db in
                try await db.first("SELECT COUNT(*) FROM heartbeat WHERE NOT counted") { try $0.value(0, as: Int.self) }
            } ?? -1
        }
        return try await self.fileStore.base.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM heartbeat WHERE NOT counted") ?? -1
        }
    }

    /// The SQLite store this service runs on (tests that read its file directly).
    var fileStore: SafetyStore {
        guard let store = self.store as? SafetyStore else { preconditionFailure("safety runs on its SQLite file here") }
        return store
    }
}
