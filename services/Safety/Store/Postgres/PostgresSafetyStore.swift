import Foundation
import HearthCore
import HearthPostgres
import HearthStore
import Logging
import PostgresNIO

/// The safety service's store on PostgreSQL, which several safety processes share: the same
/// rules (``SwitchMachine``, ``ContactConsent``) and the same outbox rows as ``SafetyStore``,
/// persisted through PostgresNIO. Every transaction that changes a user's switch holds that
/// user's advisory lock first, so that two processes never interleave on one switch; due
/// switches, due messages and ended graces are taken with `FOR UPDATE SKIP LOCKED` (or a lock
/// tried, not waited for), so that processes share the due work without waiting on each other.
struct PostgresSafetyStore: SafetyPersistence {
    let database: PostgresPool
    let keys: DataKeys
    let product: String
    let clock: any WallClock
    /// Outcomes reported together, written together (``record(_:attempt:now:)``).
    let outcomes = BatchedCalls<DeliveryOutcome, Bool>(maxBatch: Self.outcomesPerBatch)
    /// How often a claim looks for the claims of cancelled messages whose lease ran out
    /// (``claimDue(_:now:limit:lease:excluding:)``): rare, and taken back a lease after their
    /// claim, a second later changes nothing; looking at every claim was a statement planned
    /// again each time (0.08 an alarm, 11 us of PostgreSQL's time, nearly all of it planning).
    let lapsedCancelledClaims = IntervalGate(interval: 1)

    /// Migrates the database and checks `keys` against it over a connection of its own; the
    /// pool (``database``) must then run for the store to serve.
    /// - Throws: ``DataKeysDoNotMatch``, ``PostgresSchemaUnknown``, the server's errors.
    static func open(
        _ location: PostgresLocation,
        keys: DataKeys,
        clock: any WallClock = SystemClock(),
        product: String = AlertTexts.defaultProduct,
        maximumConnections: Int = 20,
        clockTolerance: TimeInterval? = nil,
        logger: Logger
    ) async throws -> PostgresSafetyStore {
        try await PostgresPool.withSetupConnection(location, logger: logger) { connection in
            if let clockTolerance { try await connection.checkClock(clock, within: clockTolerance) }
            try await connection.migrate(
                PostgresSafetySchema.migrations,
                lockKey: PostgresSafetySchema.migrationLock,
                logger: logger
            )
            try await Self.check(keys, on: connection)
        }
        return PostgresSafetyStore(
            database: PostgresPool(location: location, maximumConnections: maximumConnections, logger: logger),
            keys: keys,
            product: product,
            clock: clock
        )
    }

    var now: Date { PostgresTime.rounded(self.clock.now()) }

    // MARK: Profile and status

    func upsertProfile(_ user: String, _ apply: @Sendable @escaping (inout ProfileRecord) -> Void) async throws
        -> ProfileRecord
    {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            let profile = try await self.profile(user, on: db) ?? ProfileRecord.fresh(user, at: now)
            var settings = profile
            apply(&settings)
            var machine = try await self.machine(
                profile,
                at: now,
                reading: .settingsChange(profile, to: settings),
                on: db
            )
            machine.changeSettings(to: settings.switchState, at: now)
            let changed = settings.with(machine.state)
            // Saved first: a new profile's messages refer to it.
            try await changed.save(on: db, sealingWith: self.keys)
            try await self.apply(machine.effects, of: changed, on: db)
            return changed
        }
    }

    func profile(_ user: String) async throws -> ProfileRecord? {
        try await self.database.read { db in try await self.profile(user, on: db) }
    }

    func status(_ user: String) async throws -> StatusSnapshot? {
        let now = self.now
        return try await self.database.transaction { db in
            guard let profile = try await self.profile(user, on: db) else { return nil }
            return try await self.snapshot(profile, at: now, on: db)
        }
    }

    /// The status of `profile` as it stands in this transaction.
    func snapshot(_ profile: ProfileRecord, at now: Date, on db: PostgresConnection) async throws -> StatusSnapshot {
        let clock = SwitchMachine(
            state: profile.switchState,
            facts: SwitchFacts(contacts: try await self.switchContacts(profile.userID, at: now, on: db))
        ).clock
        let alerts = try await self.periodAlerts(profile, on: db)
        return StatusSnapshot(
            profile: profile,
            clock: clock,
            alerts: alerts,
            invitations: clock.armed ? .none : try await self.pendingInvitations(profile.userID, at: now, on: db),
            addresses: alerts.contains { $0.channel == .email }
                ? try await self.contactAddresses(profile.userID, on: db) : [:]
        )
    }

    func enqueueTest(_ user: String, channel: AlertRecord.Channel, address: String, subject: String, body: String)
        async throws -> TimeInterval?
    {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            let lastHour = try await db.rows(
                """
                SELECT created_at FROM alert
                WHERE user_id = \(user) AND kind = \(MessageKind.test) AND channel = \(channel.rawValue)
                    AND created_at > \(now.addingTimeInterval(-3600).postgres)
                ORDER BY created_at
                """
            ) { try $0.date(0) }
            if lastHour.count >= SafetyRules.maxTestsPerHour, let oldest = lastHour.first {
                return oldest.addingTimeInterval(3600).timeIntervalSince(now)
            }
            let epoch =
                try await db.first("SELECT epoch FROM profile WHERE user_id = \(user)") {
                    try $0.value(0, as: Int.self)
                } ?? 0
            try await AlertRecord.test(
                of: user,
                epoch: epoch,
                channel: channel,
                address: address,
                subject: subject,
                body: body,
                at: now
            ).insert(on: db, sealingWith: self.keys)
            return nil
        }
    }

    // MARK: Reads inside a transaction

    func profile(_ user: String, on db: PostgresConnection) async throws -> ProfileRecord? {
        try await db.first("\(unescaped: ProfileRecord.selection) FROM profile WHERE user_id = \(user)") {
            try ProfileRecord(columns: $0, keys: self.keys)
        }
    }

    func contact(_ id: String, on db: PostgresConnection) async throws -> ContactRecord? {
        try await db.first("\(unescaped: ContactRecord.selection) FROM contact WHERE id = \(id)") {
            try ContactRecord(columns: $0, keys: self.keys)
        }
    }

    /// The alerts `query` (after ``AlertRecord/selection`` and `FROM alert`) finds, opened.
    func alerts(
        _ query: PostgresQuery,
        selecting selection: String = AlertRecord.selection,
        on db: PostgresConnection
    ) async throws -> [AlertRecord] {
        let full = PostgresQuery(unsafeSQL: "\(selection) FROM alert " + query.sql, binds: query.binds)
        return try await db.rows(full) { try AlertRecord(columns: $0, keys: self.keys) }
    }

    /// The user's contacts' addresses by id, opened; one that does not open is left out
    /// (``SafetyStore/contactAddresses(_:in:)``).
    func contactAddresses(_ user: String, on db: PostgresConnection) async throws -> [String: String] {
        let rows = try await db.rows("SELECT id, email FROM contact WHERE user_id = \(user)") {
            let id: String = try $0.value(0)
            return (id, try? self.keys.open($0.value(1), .contactEmail, row: id))
        }
        return Dictionary(
            rows.compactMap { id, address in address.map { (id, $0) } },
            uniquingKeysWith: { first, _ in first }
        )
    }

    /// The messages of `profile`'s period: warnings, alarms and all-clears, without their
    /// addresses and words (a status shows neither).
    func periodAlerts(_ profile: ProfileRecord, on db: PostgresConnection) async throws -> [AlertRecord] {
        try await self.alerts(
            """
            WHERE user_id = \(profile.userID) AND epoch >= \(profile.checkInEpoch)
                AND kind = ANY(\(Self.periodKinds)) ORDER BY created_at, id
            """,
            selecting: AlertRecord.postgresSelectionWithoutWords,
            on: db
        )
    }

    private static let periodKinds = SwitchClock.items.map(\.kind) + [MessageKind.allClear]
}
