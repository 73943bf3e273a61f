import Foundation
import HearthCore
import HearthPostgres
import PostgresNIO

// The senders' side of the outbox on PostgreSQL, which several processes share: a claim is a
// lease. Due messages are claimed with `FOR UPDATE SKIP LOCKED` (no two processes take one), and
// a message whose lease ran out without an outcome (its process died, or lost the database) is
// taken back by the next claim of any process: due at once, it may have arrived, and the attempt
// does not count toward giving up (what a SQLite process does for itself at its start).
extension PostgresSafetyStore {
    func nextAttemptTime(_ channel: AlertRecord.Channel, excluding excluded: Set<String>) async throws -> Date? {
        try await self.database.read { db in
            try await db.rows(
                """
                SELECT id, next_attempt_at FROM alert WHERE state = 'pending' AND channel = \(channel.rawValue)
                ORDER BY next_attempt_at LIMIT \(excluded.count + 1)
                """
            ) { (try $0.value(0, as: String.self), try $0.date(1)) }
            .first { !excluded.contains($0.0) }?.1
        }
    }

    func claimDue(
        _ channel: AlertRecord.Channel,
        now: Date,
        limit: Int,
        lease: TimeInterval,
        excluding excluded: Set<String>
    ) async throws -> [ClaimedAlert] {
        let claimedAt = self.now
        let retryAt = claimedAt.addingTimeInterval(lease)
        if self.lapsedCancelledClaims.admits(now: claimedAt) {
            try await self.releaseLapsedCancelled(at: claimedAt, lease: lease, excluding: excluded)
        }
        // A batch in a handful of statements, whatever its size: a statement is a round trip,
        // and that, not the rows, is what a claim costs. Each is prepared once a connection.
        return try await self.database.transaction { db in
            // What this process has under way is left out by the query, not locked and skipped.
            let due = try await db.rows(
                DueAlerts(channel: channel, now: now, excluded: Array(excluded), limit: limit)
            ) { try AlertRecord(columns: $0, keys: self.keys) }
            guard !due.isEmpty else { return [] }
            // Not while a change to a user's switch is under way (it may cancel the message, or
            // remove its contact); tried, never waited for: taken at a later look.
            let free = try await db.tryLock(Set(due.map(\.userID)))
            let takeable = due.filter { free.contains($0.userID) }
            let facts = try await ClaimFacts.read(for: takeable, from: self, on: db)
            var stale: [String] = []
            var claimed: [ClaimedAlert] = []
            var tokens: [ContactLinks.NewToken] = []
            for var alert in takeable {
                if facts.isStale(alert, at: now) {
                    stale.append(alert.id)
                    continue
                }
                // Its lease ran out without an outcome: taken back before it is claimed again.
                if alert.claimedAt != nil { alert.releaseClaim() }
                alert.attempts += 1
                alert.claimedAt = claimedAt
                alert.nextAttemptAt = retryAt
                let minted = ContactLinks.mint(
                    for: alert,
                    contact: facts.contacts[alert.contactID],
                    profile: facts.profiles[alert.userID],
                    at: claimedAt
                )
                tokens += minted?.tokens ?? []
                claimed.append(
                    ClaimedAlert(
                        alert: alert,
                        links: minted?.links,
                        language: alert.channel == .push ? facts.profiles[alert.userID]?.language : nil
                    )
                )
            }
            if !stale.isEmpty {
                try await db.run(
                    """
                    UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, claimed_at = NULL,
                        \(unescaped: AlertRecord.forgetPostgres)
                    WHERE id = ANY(\(stale))
                    """
                )
            }
            try await AlertRecord.updateDeliveries(claimed.map(\.alert), leaseUntil: retryAt, on: db)
            try await Self.insert(tokens, at: claimedAt, on: db)
            return claimed
        }
    }

    private static func insert(_ tokens: [ContactLinks.NewToken], at now: Date, on db: PostgresConnection)
        async throws
    {
        guard !tokens.isEmpty else { return }
        try await db.run(NewTokens(tokens, at: now))
    }

    func returnClaims(_ claims: [AlertClaim]) async throws {
        let now = self.now
        // One cancelled meanwhile keeps its state: it was never sent, so no all-clear follows.
        try await self.update(claims) { rows in
            let now = rows.bind(now.postgres)
            return rows.query { values in
                """
                UPDATE alert SET attempts = attempts - 1, claimed_at = NULL, lease_until = NULL,
                    next_attempt_at = CASE WHEN state = 'pending' THEN \(now) ELSE next_attempt_at END
                FROM (\(values)) AS claim(id, at)
                WHERE alert.id = claim.id AND alert.claimed_at = claim.at
                """
            }
        }
    }

    func extendClaims(_ claims: [AlertClaim], lease: TimeInterval, now: Date) async throws {
        // A cancelled message's lease is renewed too: its send may still end.
        try await self.update(claims) { rows in
            let until = rows.bind(now.addingTimeInterval(lease).postgres)
            return rows.query { values in
                """
                UPDATE alert SET lease_until = \(until),
                    next_attempt_at = CASE WHEN state = 'pending' THEN \(until) ELSE next_attempt_at END
                FROM (\(values)) AS claim(id, at)
                WHERE alert.id = claim.id AND alert.claimed_at = claim.at
                """
            }
        }
    }

    /// Runs the update `statement` makes of `claims`, bound as the rows `claim(id, at)`, in a
    /// transaction that locks their messages first.
    private func update(_ claims: [AlertClaim], _ statement: (inout BoundRows) -> PostgresQuery) async throws {
        guard !claims.isEmpty else { return }
        var rows = BoundRows(columns: .text, .timestamptz)
        for claim in claims {
            rows.append { row in
                row.bind(claim.id)
                row.bind(claim.at.postgres)
            }
        }
        let update = statement(&rows)
        try await self.database.transaction { db in
            // Locked in the order of their ids first, as a batch of outcomes locks them: the two
            // never wait on each other in a circle.
            _ = try await db.count(
                "SELECT 1 FROM alert WHERE id = ANY(\(claims.map(\.id))) ORDER BY id FOR UPDATE"
            )
            try await db.run(update)
        }
    }

    /// Messages a check-in cancelled while under way whose lease ran out without an outcome:
    /// taken back (they may have arrived), and an alarm among them earns its contact the
    /// all-clear. Each in a transaction of its own, under its user's lock.
    private func releaseLapsedCancelled(at now: Date, lease: TimeInterval, excluding excluded: Set<String>) async throws
    {
        // A claim without its own lease (made as its message was decided, copied from a SQLite
        // file, or made by a process before migration v2) holds for one lease from its claim. In
        // the order of `alert_claim_ended`: read along that index whatever the table's statistics
        // say (a freshly filled table without them was read whole at each claim).
        let lapsedIDs = try await self.database.read { db in
            try await db.rows(
                """
                SELECT id, user_id FROM alert
                WHERE claimed_at IS NOT NULL AND state <> 'pending'
                    AND COALESCE(lease_until, claimed_at + make_interval(secs => \(lease))) < \(now.postgres)
                ORDER BY claimed_at LIMIT 100
                """
            ) { (try $0.value(0, as: String.self), try $0.value(1, as: String.self)) }
        }
        // Never one this process has under way (its send may still end).
        for (id, user) in lapsedIDs where !excluded.contains(id) {
            try await self.database.transaction { db in
                // Not waited for: a busy user must not hold back this sender.
                guard try await db.tryLock(user) else { return }
                guard
                    var alert = try await self.alerts(
                        """
                        WHERE id = \(id) AND claimed_at IS NOT NULL AND state <> 'pending'
                            AND COALESCE(lease_until, claimed_at + make_interval(secs => \(lease))) < \(now.postgres)
                            FOR UPDATE
                        """,
                        on: db
                    ).first
                else { return }
                alert.releaseClaim()
                try await alert.updateDelivery(on: db)
                if alert.state == .cancelled { try await self.allClearIfCheckedInSince(alert, at: self.now, on: db) }
            }
        }
    }
}

/// What a claim reads about the messages it takes, in two statements for the batch: their
/// users' profiles and their contacts (whether each still goes out, and its links' words).
private struct ClaimFacts {
    var profiles: [String: ProfileRecord] = [:]
    var contacts: [String: ContactRecord] = [:]

    static func read(for alerts: [AlertRecord], from store: PostgresSafetyStore, on db: PostgresConnection)
        async throws -> ClaimFacts
    {
        var facts = ClaimFacts()
        guard !alerts.isEmpty else { return facts }
        let users = Array(Set(alerts.map(\.userID)))
        for profile in try await db.rows(
            ProfilesOfUsers(users: users),
            { try ProfileRecord(columns: $0, keys: store.keys) }
        ) {
            facts.profiles[profile.userID] = profile
        }
        let contactIDs = Array(Set(alerts.map(\.contactID).filter { !$0.isEmpty }))
        if !contactIDs.isEmpty {
            for contact in try await db.rows(
                ContactsByID(ids: contactIDs),
                { try ContactRecord(columns: $0, keys: store.keys) }
            ) {
                facts.contacts[contact.id] = contact
            }
        }
        return facts
    }

    /// Whether `alert` must not go out any more (``AlertRecord/isStale(at:profile:contact:)``).
    func isStale(_ alert: AlertRecord, at now: Date) -> Bool {
        alert.isStale(at: now, profile: { self.profiles[alert.userID] }, contact: { self.contacts[alert.contactID] })
    }
}

/// A channel's due messages, locked; those another process holds, and those `excluded`, left out.
struct DueAlerts: PreparedSQL {
    static let sql = Self(channel: .email, now: Date(), excluded: [], limit: 0).query.sql
    let channel: AlertRecord.Channel
    let now: Date
    let excluded: [String]
    let limit: Int

    var query: PostgresQuery {
        """
        \(unescaped: AlertRecord.selection) FROM alert
        WHERE state = 'pending' AND channel = \(self.channel.rawValue) AND next_attempt_at <= \(self.now.postgres)
            AND id <> ALL(\(self.excluded)) ORDER BY next_attempt_at LIMIT \(self.limit) FOR UPDATE SKIP LOCKED
        """
    }
}

/// The profiles of `users`.
struct ProfilesOfUsers: PreparedSQL {
    static let sql = Self(users: []).query.sql
    let users: [String]

    var query: PostgresQuery { "\(unescaped: ProfileRecord.selection) FROM profile WHERE user_id = ANY(\(self.users))" }
}

/// The contacts of `ids`.
struct ContactsByID: PreparedSQL {
    static let sql = Self(ids: []).query.sql
    let ids: [String]

    var query: PostgresQuery { "\(unescaped: ContactRecord.selection) FROM contact WHERE id = ANY(\(self.ids))" }
}

/// Link tokens minted by a claim.
struct NewTokens: PreparedSQL {
    static let sql = Self([], at: Date()).query.sql
    let rows: BoundRows

    init(_ tokens: [ContactLinks.NewToken], at now: Date) {
        var rows = BoundRows(columns: .bytea, .text, .text, .text, .text, .timestamptz, .timestamptz)
        for new in tokens {
            rows.append { row in
                row.bind(ByteBuffer(bytes: new.token.hash))
                row.bind(new.contactID)
                row.bind(new.userID)
                row.bind(new.addressKey)
                row.bind(new.purpose.rawValue)
                row.bind(new.expiresAt.postgres)
                row.bind(now.postgres)
            }
        }
        self.rows = rows
    }

    var query: PostgresQuery {
        self.rows.query { values in
            "INSERT INTO contact_token (hash, contact_id, user_id, address_key, purpose, expires_at, created_at) \(values)"
        }
    }
}
