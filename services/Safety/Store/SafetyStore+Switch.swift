import Foundation
import GRDB
import HearthCore
import HearthStore

// The switch's events: each reads the profile and what its rules need, runs one event of
// ``SwitchMachine``, and applies the outcome in the same write transaction.
extension SafetyStore {
    // MARK: Check-ins

    /// A check-in: a new period starts, every pending warning and alert of the old one is
    /// cancelled, and contacts who were alerted get an all-clear email.
    func recordHeartbeat(
        _ user: String,
        timeZone: String?,
        deviceInfo: String,
        requestID: String,
        source: String,
        occurredAt: Date?
    ) async throws -> HeartbeatResult {
        // A forwarded activity counts from when it happened (never from the future).
        let clockNow = self.now
        let now = occurredAt.map { min(Store.asStored($0), clockNow) } ?? clockNow
        let checkIn = SwitchMachine.CheckIn(
            at: now,
            receivedAt: clockNow,
            forwarded: occurredAt != nil,
            timeZone: timeZone
        )
        let row = HeartbeatRow(deviceInfo: deviceInfo, requestID: requestID, source: source)
        return try await self.heartbeats.write { db in
            try self.heartbeat(user, checkIn, row, in: db)
        }
    }

    /// What a check-in's row keeps besides its time and zone.
    private struct HeartbeatRow {
        var deviceInfo: String
        var requestID: String
        var source: String
    }

    private func heartbeat(
        _ user: String,
        _ checkIn: SwitchMachine.CheckIn,
        _ row: HeartbeatRow,
        in db: Database
    ) throws -> HeartbeatResult {
        guard let profile = try self.profile(user, in: db) else {
            return HeartbeatResult(outcome: .noProfile, status: nil, enqueued: false, dueSooner: false)
        }
        // A repeat changes nothing and answers the status as it stands.
        let repeated = {
            HeartbeatResult(
                outcome: .repeated,
                status: try self.snapshot(profile, at: checkIn.receivedAt, in: db),
                enqueued: false,
                dueSooner: false
            )
        }
        let insert = { (counted: Bool) in
            try db.cachedStatement(
                sql: """
                    INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id, counted)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, request_id) DO NOTHING
                    """
            ).execute(
                binding: user,
                checkIn.at.stored,
                checkIn.timeZone ?? profile.timeZone,
                row.deviceInfo,
                row.source,
                row.requestID,
                counted
            )
        }
        var reads = FactReads.period.union(.reminders(of: profile))
        if checkIn.forwarded { reads.insert(.alarm) }
        var machine = try self.machine(profile, at: checkIn.at, reading: reads, in: db)
        let decision = machine.checkIn(checkIn, recent: try self.recentHeartbeats(user, checkIn, row, in: db))
        let allClears: Int
        let retryAfter: TimeInterval?
        switch decision {
        case .repeated(let keep):
            if keep { try insert(false) }
            return try repeated()
        case .counts(.insert(let counted), let count, let retry):
            try insert(counted)
            // Nothing inserted: this request id was recorded more than an hour ago.
            if db.changesCount == 0 { return try repeated() }
            (allClears, retryAfter) = (count, retry)
        case .counts(.lookUp, let count, let retry):
            // Not kept, so no conflict tells an older repeat: asked (rare, and cheap by key).
            if try db.cachedStatement(sql: "SELECT 1 FROM heartbeat WHERE user_id = ? AND request_id = ?")
                .fetchOne(binding: user, row.requestID, read: { _ in true }) != nil
            {
                return try repeated()
            }
            (allClears, retryAfter) = (count, retry)
        }
        let changed = try self.commit(machine, of: profile, in: db)
        let status = StatusSnapshot(
            profile: changed,
            clock: machine.clock,
            // The period began just now: its only messages are the all-clears just recorded.
            alerts: allClears > 0 ? try self.periodAlerts(changed, in: db) : [],
            invitations: machine.clock.armed
                ? .none : try self.pendingInvitations(user, at: checkIn.receivedAt, in: db),
            addresses: allClears > 0 ? try self.contactAddresses(user, in: db) : [:]
        )
        return HeartbeatResult(
            outcome: retryAfter.map { .rateLimited(retryAfter: $0) } ?? .recorded,
            status: status,
            enqueued: allClears > 0,
            dueSooner: changed.nextDueAt.map { due in profile.nextDueAt.map { due < $0 } ?? true } ?? false
        )
    }

    /// The last hour's heartbeats: the counted ones for the rate limit, how many were kept
    /// uncounted, and whether one of them is this request again (an older one with its id is
    /// found when it is inserted).
    private func recentHeartbeats(
        _ user: String,
        _ checkIn: SwitchMachine.CheckIn,
        _ row: HeartbeatRow,
        in db: Database
    ) throws -> RecentHeartbeats {
        var recent = RecentHeartbeats()
        try db.cachedStatement(
            sql: "SELECT at, counted, request_id = ? FROM heartbeat WHERE user_id = ? AND at > ? ORDER BY at"
        )
        .forEachRow(binding: row.requestID, user, checkIn.at.addingTimeInterval(-3600).stored) { columns in
            if try columns.value(1) as Bool {
                recent.counted.append(try columns.date(0))
            } else {
                recent.uncounted += 1
            }
            if try columns.value(2) as Bool { recent.includesRequest = true }
        }
        return recent
    }

    // MARK: Snooze, pause, resume

    /// Moves the deadline 24 h later (``SwitchMachine/snooze(at:)``).
    func snooze(_ user: String) async throws -> SwitchChange {
        try await self.base.write { [store = self] db in
            let now = store.now
            return try self.change(user, at: now, reading: [.decided], in: db) {
                (machine: inout SwitchMachine) throws(SwitchRefusal) in
                try machine.snooze(at: now)
            }
        }
    }

    /// Nothing fires until `until` (or a resume); then a new period starts.
    func pause(_ user: String, until: Date) async throws -> SwitchChange {
        let now = self.now
        return try await self.base.write { db in
            try self.change(user, at: now, reading: [.decided], in: db) { machine in
                machine.pause(until: until, at: now)
            }
        }
    }

    func resume(_ user: String) async throws -> SwitchChange {
        let now = self.now
        return try await self.base.write { db in
            try self.change(user, at: now, reading: [.period], in: db) {
                (machine: inout SwitchMachine) throws(SwitchRefusal) in
                try machine.resume(at: now)
            }
        }
    }

    /// Runs `event` on `user`'s switch and saves what it changed; a refusal changes nothing.
    private func change(
        _ user: String,
        at now: Date,
        reading reads: FactReads,
        in db: Database,
        _ event: (inout SwitchMachine) throws(SwitchRefusal) -> Void
    ) throws -> SwitchChange {
        guard let profile = try self.profile(user, in: db) else { return .noProfile }
        let reads = reads.union(.reminders(of: profile)).union(.period(endingPauseOf: profile, at: now))
        var machine = try self.machine(profile, at: now, reading: reads, in: db)
        do {
            try event(&machine)
        } catch {
            return .refused(error.message)
        }
        return .changed(try self.commit(machine, of: profile, in: db))
    }

    // MARK: The scheduler's side

    /// The earliest time a switch is due to be looked at.
    func nextDecisionTime() async throws -> Date? {
        try self.base.read { db in
            try Date.fetchOne(
                db.cachedStatement(sql: "SELECT MIN(next_due_at) FROM profile WHERE next_due_at IS NOT NULL")
            )
        }
    }

    /// Decides what is due for up to `limit` switches, in one transaction: warnings while the
    /// deadline is ahead, the alert (one row per contact) once it passed. Answers how many
    /// switches it looked at, and the messages it inserted claimed, as many as `room` allows.
    func decideDue(now: Date, limit: Int, claiming room: ClaimRoom) async throws -> DecidedBatch {
        // Most passes find nothing: look with a read before taking the writer.
        let anyDue = try self.base.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM profile WHERE next_due_at <= ? LIMIT 1"),
                arguments: [now.stored]
            )
                ?? false
        }
        guard anyDue else { return DecidedBatch(looked: 0, claimed: []) }
        let claimedAt = self.now
        return try await self.base.write { db in
            let due = try db.cachedStatement(
                sql: "\(ProfileRecord.selection) FROM profile WHERE next_due_at <= ? ORDER BY next_due_at LIMIT ?"
            ).fetchAll(binding: now.stored, limit) { try ProfileRecord(columns: $0, keys: self.keys) }
            var claims = DecidedClaims(room: room, claimedAt: claimedAt, now: now)
            for profile in due {
                let reads = FactReads.decided.union(.reminders(of: profile))
                    .union(.period(endingPauseOf: profile, at: now))
                var machine = try self.machine(profile, at: now, reading: reads, in: db)
                machine.decideDue(at: now)
                try self.commit(machine, of: profile, claiming: &claims, in: db)
            }
            try Self.insert(claims.tokens, at: claimedAt, in: db)
            return DecidedBatch(looked: due.count, claimed: claims.claimed)
        }
    }
}
