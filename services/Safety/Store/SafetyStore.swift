import Foundation
import GRDB
import HearthCore
import HearthStore

/// The safety service's SQLite store. Deciding what fires and recording it in the alert
/// outbox happen in one write transaction, so a decision is never lost or taken twice.
struct SafetyStore: SafetyPersistence {
    let base: Store
    /// Heartbeats arriving together are committed together (group commit).
    let heartbeats: WriteBatcher
    /// So are the outcomes of deliveries made at the same time.
    let outcomes: WriteBatcher
    /// What personal values are sealed with (``SealedField``).
    let keys: DataKeys
    /// What the app is called in the emails and pushes (``AlertTexts/product``).
    let product: String

    /// Opens the store. Values stored in clear before sealing existed are sealed by the
    /// migration, and the file is then rebuilt so that no copy of them is left.
    /// - Throws: ``DataKeysDoNotMatch`` when `keys` are not those the store was sealed with.
    /// - Parameter product: what the app is called in the emails and pushes the store words.
    init(
        location: StoreLocation,
        keys: DataKeys,
        clock: any WallClock = SystemClock(),
        product: String = AlertTexts.defaultProduct
    ) throws {
        self.base = try Store(
            location: location,
            migrator: SafetyMigrations.migrator(keys: keys, now: clock.now()),
            clock: clock
        )
        self.heartbeats = WriteBatcher(writer: self.base.writer)
        self.outcomes = WriteBatcher(writer: self.base.writer)
        self.keys = keys
        self.product = product
        try self.checkKeys()
    }

    /// To the millisecond, as dates are stored: an answer built from it reads back equal.
    var now: Date { self.base.now }
    var db: any DatabaseWriter { self.base.writer }

    // MARK: Profile and contacts

    /// Creates or updates the profile; a new profile starts its first period now. Changing
    /// the threshold moves the deadline (it counts from the last check-in).
    func upsertProfile(_ user: String, _ apply: @Sendable @escaping (inout ProfileRecord) -> Void) async throws
        -> ProfileRecord
    {
        let now = self.now
        return try await self.base.write { db in
            let profile = try self.profile(user, in: db) ?? ProfileRecord.fresh(user, at: now)
            var settings = profile
            apply(&settings)
            var machine = try self.machine(profile, at: now, reading: .settingsChange(profile, to: settings), in: db)
            machine.changeSettings(to: settings.switchState, at: now)
            let changed = settings.with(machine.state)
            // Saved first: a new profile's messages refer to it.
            try changed.save(in: db, sealingWith: self.keys)
            try self.apply(machine.effects, of: changed, in: db)
            return changed
        }
    }

    func profile(_ user: String) async throws -> ProfileRecord? {
        try self.base.read { db in
            try self.profile(user, in: db)
        }
    }

    // MARK: Status

    /// The profile, its switch, and the messages of this period (since the last check-in).
    func status(_ user: String) async throws -> StatusSnapshot? {
        let now = self.now
        return try self.base.read { db in try self.profile(user, in: db).map { try self.snapshot($0, at: now, in: db) }
        }
    }

    /// The status of `profile` as it stands in this transaction.
    func snapshot(_ profile: ProfileRecord, at now: Date, in db: Database) throws -> StatusSnapshot {
        let clock = SwitchMachine(
            state: profile.switchState,
            facts: SwitchFacts(contacts: try self.switchContacts(profile.userID, at: now, in: db))
        ).clock
        let alerts = try self.periodAlerts(profile, in: db)
        return StatusSnapshot(
            profile: profile,
            clock: clock,
            alerts: alerts,
            invitations: clock.armed ? .none : try self.pendingInvitations(profile.userID, at: now, in: db),
            addresses: alerts.contains { $0.channel == .email }
                ? try self.contactAddresses(profile.userID, in: db) : [:]
        )
    }

    /// The user's contacts' addresses by id, opened; one that does not open is left out (a
    /// status still answers, its failed alarm saying why).
    func contactAddresses(_ user: String, in db: Database) throws -> [String: String] {
        var addresses: [String: String] = [:]
        try db.cachedStatement(sql: "SELECT id, email FROM contact WHERE user_id = ?").forEachRow(binding: user) {
            let id: String = try $0.value(0)
            addresses[id] = try? self.keys.open($0.value(1), .contactEmail, row: id)
        }
        return addresses
    }

    /// The messages of `profile`'s period (since its last check-in): warnings, alarms and
    /// all-clears, without their addresses and words (a status shows neither).
    func periodAlerts(_ profile: ProfileRecord, in db: Database) throws -> [AlertRecord] {
        try AlertRecord.fetchAll(
            db,
            keys: self.keys,
            selecting: Self.periodSelection,
            "WHERE user_id = ? AND epoch >= ? AND kind IN (\(Self.periodKinds)) ORDER BY created_at, id",
            binding: profile.userID,
            profile.checkInEpoch
        )
    }

    private static let periodSelection = AlertRecord.selectionWithoutWords(empty: "X''")

    /// The kinds a period's status shows, as SQL.
    private static let periodKinds = (SwitchClock.items.map(\.kind) + [MessageKind.allClear]).map { "'\($0)'" }
        .joined(separator: ", ")

    /// Records a test message for delivery, unless the user asked for ``SafetyRules/maxTestsPerHour``
    /// on this channel in the last hour: then nil, or how long until the next may be asked for.
    func enqueueTest(_ user: String, channel: AlertRecord.Channel, address: String, subject: String, body: String)
        async throws -> TimeInterval?
    {
        let now = self.now
        return try await self.base.write { db in
            let lastHour = try Date.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT created_at FROM alert WHERE user_id = ? AND kind = ? AND channel = ? AND created_at > ?
                        ORDER BY created_at
                        """
                ),
                arguments: [user, AlertRecord.Kind.test, channel.rawValue, now.addingTimeInterval(-3600)]
            )
            if lastHour.count >= SafetyRules.maxTestsPerHour, let oldest = lastHour.first {
                return oldest.addingTimeInterval(3600).timeIntervalSince(now)
            }
            let epoch =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT epoch FROM profile WHERE user_id = ?"),
                    arguments: [user]
                ) ?? 0
            try AlertRecord.test(
                of: user,
                epoch: epoch,
                channel: channel,
                address: address,
                subject: subject,
                body: body,
                at: now
            ).insert(in: db, sealingWith: self.keys)
            return nil
        }
    }

}
