import Foundation
import HearthPostgres
import PostgresNIO

// The switch's events on PostgreSQL: each holds the user's lock, reads the profile and what its
// rules need, runs one event of ``SwitchMachine`` and applies the outcome, in one transaction.
extension PostgresSafetyStore {
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
        let checkIn = SwitchMachine.CheckIn(
            at: occurredAt.map { min(PostgresTime.rounded($0), clockNow) } ?? clockNow,
            receivedAt: clockNow,
            forwarded: occurredAt != nil,
            timeZone: timeZone
        )
        return try await self.database.transaction { db in
            try await db.lock(user)
            guard let profile = try await self.profile(user, on: db) else {
                return HeartbeatResult(outcome: .noProfile, status: nil, enqueued: false, dueSooner: false)
            }
            let insert = { (counted: Bool) in
                try await db.count(
                    """
                    INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id, counted)
                    VALUES (\(user), \(checkIn.at.postgres), \(checkIn.timeZone ?? profile.timeZone), \(deviceInfo),
                        \(source), \(requestID), \(counted))
                    ON CONFLICT (user_id, request_id) DO NOTHING RETURNING 1
                    """
                ) > 0
            }
            var reads = FactReads.period.union(.reminders(of: profile))
            if checkIn.forwarded { reads.insert(.alarm) }
            var machine = try await self.machine(profile, at: checkIn.at, reading: reads, on: db)
            let recent = try await self.recentHeartbeats(user, since: checkIn.at, requestID: requestID, on: db)
            let allClears: Int
            let retryAfter: TimeInterval?
            switch machine.checkIn(checkIn, recent: recent) {
            case .repeated(let keep):
                if keep { _ = try await insert(false) }
                return try await self.repeated(profile, at: clockNow, on: db)
            case .counts(.insert(let counted), let count, let retry):
                // Nothing inserted: this request id was recorded more than an hour ago.
                guard try await insert(counted) else { return try await self.repeated(profile, at: clockNow, on: db) }
                (allClears, retryAfter) = (count, retry)
            case .counts(.lookUp, let count, let retry):
                if try await db.count(
                    "SELECT 1 FROM heartbeat WHERE user_id = \(user) AND request_id = \(requestID)"
                ) > 0 {
                    return try await self.repeated(profile, at: clockNow, on: db)
                }
                (allClears, retryAfter) = (count, retry)
            }
            let changed = try await self.commit(machine, of: profile, on: db)
            let status = StatusSnapshot(
                profile: changed,
                clock: machine.clock,
                // The period began just now: its only messages are the all-clears just recorded.
                alerts: allClears > 0 ? try await self.periodAlerts(changed, on: db) : [],
                invitations: machine.clock.armed
                    ? .none : try await self.pendingInvitations(user, at: clockNow, on: db),
                addresses: allClears > 0 ? try await self.contactAddresses(user, on: db) : [:]
            )
            return HeartbeatResult(
                outcome: retryAfter.map { .rateLimited(retryAfter: $0) } ?? .recorded,
                status: status,
                enqueued: allClears > 0,
                dueSooner: changed.nextDueAt.map { due in profile.nextDueAt.map { due < $0 } ?? true } ?? false
            )
        }
    }

    /// A repeat changes nothing and answers the status as it stands.
    private func repeated(_ profile: ProfileRecord, at now: Date, on db: PostgresConnection) async throws
        -> HeartbeatResult
    {
        HeartbeatResult(
            outcome: .repeated,
            status: try await self.snapshot(profile, at: now, on: db),
            enqueued: false,
            dueSooner: false
        )
    }

    /// The hour's heartbeats before `at`, as the rate limit and the repeat rules read them.
    private func recentHeartbeats(_ user: String, since at: Date, requestID: String, on db: PostgresConnection)
        async throws -> RecentHeartbeats
    {
        var recent = RecentHeartbeats()
        let rows = try await db.rows(
            """
            SELECT at, counted, request_id = \(requestID) FROM heartbeat
            WHERE user_id = \(user) AND at > \(at.addingTimeInterval(-3600).postgres) ORDER BY at
            """
        ) { (try $0.date(0), try $0.value(1, as: Bool.self), try $0.value(2, as: Bool.self)) }
        for (at, counted, isRequest) in rows {
            if counted { recent.counted.append(at) } else { recent.uncounted += 1 }
            if isRequest { recent.includesRequest = true }
        }
        return recent
    }

    func snooze(_ user: String) async throws -> SwitchChange {
        try await self.change(user, reading: [.decided]) { machine, now throws(SwitchRefusal) in
            try machine.snooze(at: now)
        }
    }

    func pause(_ user: String, until: Date) async throws -> SwitchChange {
        try await self.change(user, reading: [.decided]) { machine, now in machine.pause(until: until, at: now) }
    }

    func resume(_ user: String) async throws -> SwitchChange {
        try await self.change(user, reading: [.period]) { machine, now throws(SwitchRefusal) in
            try machine.resume(at: now)
        }
    }

    /// Runs `event` on `user`'s switch and saves what it changed; a refusal changes nothing.
    private func change(
        _ user: String,
        reading reads: FactReads,
        _ event: @escaping @Sendable (inout SwitchMachine, Date) throws(SwitchRefusal) -> Void
    ) async throws -> SwitchChange {
        let now = self.now
        return try await self.database.transaction { db in
            try await db.lock(user)
            guard let profile = try await self.profile(user, on: db) else { return .noProfile }
            let reads = reads.union(.reminders(of: profile)).union(.period(endingPauseOf: profile, at: now))
            var machine = try await self.machine(profile, at: now, reading: reads, on: db)
            do throws(SwitchRefusal) {
                try event(&machine, now)
            } catch {
                return .refused(error.message)
            }
            return .changed(try await self.commit(machine, of: profile, on: db))
        }
    }

    // MARK: The scheduler's side

    func nextDecisionTime() async throws -> Date? {
        try await self.database.read { db in
            try await db.rows(NextDecisionTime()) { try $0.optionalDate(0) }.first ?? nil
        }
    }

    /// Decides what is due for up to `limit` switches, in one transaction of a dozen statements
    /// whatever their number. Switches another process is deciding, or another call is
    /// changing, are left to it (skipped, not waited for). The messages `room` allows are
    /// inserted claimed, and their links' tokens with them.
    func decideDue(now: Date, limit: Int, claiming room: ClaimRoom) async throws -> DecidedBatch {
        let claimedAt = self.now
        return try await self.database.transaction { db in
            // Each row locked as it is read, at its newest: it cannot change until this commits.
            let due = try await db.rows(DueProfiles(now: now, limit: limit)) {
                try ProfileRecord(columns: $0, keys: self.keys)
            }
            // Never waited for: a call holding a user's lock may wait for that user's row.
            let free = try await db.tryLock(Set(due.map(\.userID)))
            let profiles = due.filter { free.contains($0.userID) }
            var machines = try await self.machines(profiles, at: now, on: db) { profile in
                FactReads.decided.union(.reminders(of: profile)).union(.period(endingPauseOf: profile, at: now))
            }
            for index in machines.indices { machines[index].decideDue(at: now) }
            var claims = DecidedClaims(room: room, claimedAt: claimedAt, now: now)
            try await self.commit(Array(zip(machines, profiles)), claiming: &claims, on: db)
            let tokens = claims.tokens
            if !tokens.isEmpty { try await db.run(NewTokens(tokens, at: claimedAt)) }
            return DecidedBatch(looked: due.count, claimed: claims.claimed)
        }
    }
}
