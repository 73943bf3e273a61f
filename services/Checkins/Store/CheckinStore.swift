import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthRPC
import HearthRelay
import HearthStore

/// The checkins service's SQLite store. Each invariant is kept inside one write transaction.
struct CheckinStore: Sendable {
    let base: Store
    /// Activity forwarded to safety, recorded with each check-in.
    let relay: Relay
    /// Pushes to the session's owner, recorded with each check-in.
    let outbox: Outbox

    init(location: StoreLocation, clock: any WallClock = SystemClock()) throws {
        self.base = try Store(location: location, migrator: CheckinMigrations.migrator, clock: clock)
        self.relay = Relay(store: self.base)
        self.outbox = Outbox(store: self.base)
    }

    /// The time now, as the store keeps dates (to the millisecond).
    var now: Date { self.base.now }

    // MARK: Nests

    enum NestOutcome: Sendable {
        case created(NestRecord)
        /// The user owns ``CheckinRules/maxNestsPerOwner`` nests already.
        case full
    }

    /// Creates a nest with the default quick captions, unless the owner has too many.
    func createNest(name: String, owner: String) async throws -> NestOutcome {
        let now = self.now
        let nest = NestRecord(id: UUID().uuidString.lowercased(), name: name, ownerUserID: owner, createdAt: now)
        return try await self.base.write { db in
            guard
                try NestRecord.filter(NestRecord.Columns.ownerUserID == owner).fetchCount(db)
                    < CheckinRules.maxNestsPerOwner
            else { return .full }
            try nest.insert(db)
            for text in CheckinRules.defaultTemplates {
                try TemplateRecord(id: UUID().uuidString.lowercased(), nestID: nest.id, text: text, createdAt: now)
                    .insert(db)
            }
            return .created(nest)
        }
    }

    /// The nest and, unless `user` owns it, the windows of `user`'s sitting sessions in it, in
    /// one read: what deciding their role in it takes (``NestRoleRule``).
    func nest(_ id: String, sittingsOf user: String) async throws
        -> (nest: NestRecord, sittings: [(startsAt: Date, endsAt: Date)])?
    {
        try self.base.read { db in
            guard let nest = try Self.nest(id, in: db) else { return nil }
            guard nest.ownerUserID != user else { return (nest, []) }
            let sittings = try db.cachedStatement(
                sql: "SELECT starts_at, ends_at FROM session WHERE nest_id = ? AND sitter_user_id = ?"
            ).fetchAll(binding: id, user) { (startsAt: try $0.date(0), endsAt: try $0.date(1)) }
            return (nest, sittings)
        }
    }

    private static func nest(_ id: String, in db: Database) throws -> NestRecord? {
        try db.cachedStatement(sql: "\(NestRecord.selection) FROM nest WHERE id = ?").fetchOne(binding: id) {
            try NestRecord(columns: $0)
        }
    }

    /// A page of the nests `user` may see (``CheckinRules/canSee(user:owner:sitterSessions:now:)``:
    /// owned, or with a session of theirs not called off and not ended more than a day ago), by
    /// creation: after `cursor`, at most `limit`.
    func nests(of user: String, after cursor: PageCursor?, limit: Int) async throws -> [NestRecord] {
        let seenSince = self.now.addingTimeInterval(-CheckinRules.lateArrival)
        return try self.base.read { db in
            try NestRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM (
                            SELECT * FROM nest WHERE owner_user_id = ?
                            UNION
                            SELECT nest.* FROM nest JOIN session ON session.nest_id = nest.id
                            WHERE session.sitter_user_id = ? AND session.ends_at > session.starts_at
                                AND session.ends_at >= ?
                        )
                        WHERE ? OR (created_at, id) > (?, ?)
                        ORDER BY created_at, id LIMIT ?
                        """
                ),
                arguments: [user, user, seenSince, cursor == nil, cursor?.time, cursor?.id, limit]
            )
        }
    }

    // MARK: Sessions

    /// Adds a session unless its nest has ``CheckinRules/maxOpenSessionsPerNest`` not yet ended;
    /// answers whether it did.
    func createSession(_ session: SessionRecord) async throws -> Bool {
        try await self.base.write { db in
            let open =
                try Int.fetchOne(
                    db,
                    // Not one called off (its end moved to its start, maybe still ahead).
                    sql: "SELECT COUNT(*) FROM session WHERE nest_id = ? AND ends_at > ? AND ends_at > starts_at",
                    arguments: [session.nestID, session.createdAt]
                ) ?? 0
            guard open < CheckinRules.maxOpenSessionsPerNest else { return false }
            try session.insert(db)
            return true
        }
    }

    func session(_ id: String) async throws -> SessionRecord? {
        try self.base.read { db in
            try db.cachedStatement(sql: "\(SessionRecord.selection) FROM session WHERE id = ?").fetchOne(binding: id) {
                try SessionRecord(columns: $0)
            }
        }
    }

    /// A page of a nest's sessions by start, after `cursor` when given; only `sitter`'s when given.
    func sessions(inNest nestID: String, sitter: String?, newestFirst: Bool, after cursor: PageCursor?, limit: Int)
        async throws -> [SessionRecord]
    {
        try self.base.read { db in
            try db.fetchPage(
                "\(SessionRecord.selection) FROM session",
                where: sitter == nil ? "nest_id = ?" : "nest_id = ? AND sitter_user_id = ?",
                arguments: StatementArguments(sitter.map { [nestID, $0] } ?? [nestID]),
                orderedBy: "starts_at",
                descending: newestFirst,
                after: cursor,
                limit: limit,
                read: SessionRecord.init(columns:)
            )
        }
    }

    /// Ends a session now (if it would end later).
    func endSession(_ id: String) async throws -> SessionRecord? {
        let now = self.now
        return try await self.base.write { db in
            guard var session = try SessionRecord.fetchOne(db, cachedKey: id) else { return nil }
            if session.endsAt > now {
                session.endsAt = max(now, session.startsAt)
                try session.update(db)
            }
            return session
        }
    }

    // MARK: Check-ins

    enum CreateOutcome: Sendable {
        case created(CheckInRecord)
        /// The same request was already handled: its check-in (nil if since deleted).
        case repeated(CheckInRecord?)
        case dailyCapReached(localDay: String)
        /// The session no longer takes it: its owner ended it (or called it off) after the
        /// request was checked.
        case sessionEnded(FieldViolation)
    }

    /// Whether `localDay` of the session has its most check-ins already (a photo for it is not
    /// worth decoding).
    func dayIsFull(session: String, localDay: String) async throws -> Bool {
        try self.base.read { db in
            let count = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count FROM daily_count WHERE session_id = ? AND local_day = ?"),
                arguments: [session, localDay]
            )
            return (count ?? 0) >= CheckinRules.maxPerLocalDay
        }
    }

    /// Records a check-in unless its request was seen before or its local day is full; the
    /// request key, the day's count and the check-in are written in one transaction.
    /// `notify` goes into the push outbox in the same transaction, only when a check-in is created.
    func createCheckIn(_ checkIn: CheckInRecord, photo: NormalizedPhoto?, localDay: String, notify: PushMessage)
        async throws -> CreateOutcome
    {
        try await self.base.write { db in
            if let earlier = try Self.earlierRequest(checkIn.submitterUserID, checkIn.clientRequestID, in: db) {
                return earlier
            }
            // The session as it stands now, in this transaction: the request was checked against
            // it before its photo was decoded, and an EndSession may have come in between.
            let session = try SessionRecord.fetchOne(db, cachedKey: checkIn.sessionID)
            if let session,
                let timing = CheckinRules.timingViolation(
                    capturedAt: checkIn.capturedAt,
                    now: checkIn.createdAt,
                    startsAt: session.startsAt,
                    endsAt: session.endsAt
                )
            {
                return .sessionEnded(timing)
            }
            let count =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count FROM daily_count WHERE session_id = ? AND local_day = ?"),
                    arguments: [checkIn.sessionID, localDay]
                ) ?? 0
            guard count < CheckinRules.maxPerLocalDay else { return .dailyCapReached(localDay: localDay) }
            try db.cachedStatement(
                sql: """
                    INSERT INTO daily_count (session_id, local_day, count) VALUES (?, ?, 1)
                    ON CONFLICT (session_id, local_day) DO UPDATE SET count = count + 1
                    """
            ).execute(arguments: [checkIn.sessionID, localDay])
            try db.cachedStatement(
                sql: "INSERT INTO check_in_request (submitter_user_id, client_request_id, check_in_id) VALUES (?, ?, ?)"
            ).execute(arguments: [checkIn.submitterUserID, checkIn.clientRequestID, checkIn.id])
            try checkIn.insertPrepared(db)
            if let photo {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO photo (check_in_id, full, thumbnail, thumbnail_width, thumbnail_height, format)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    checkIn.id, photo.full.data, photo.thumbnail.data, photo.thumbnail.width,
                    photo.thumbnail.height, photo.full.format.rawValue,
                ]
                )
            }
            try Outbox.enqueue(notify, in: db)
            // A check-in is a sign of life: safety counts it when the sitter opted in, from when it
            // was taken (an upload queue may hold it for hours; counted from its arrival, it
            // would put off the alarm of someone hurt meanwhile), never from ahead of now.
            try Relay.forwardActivity(
                source: "checkins",
                eventID: checkIn.id,
                user: checkIn.submitterUserID,
                at: min(checkIn.capturedAt, checkIn.createdAt),
                in: db
            )
            return .created(checkIn)
        }
    }

    /// What an earlier request with this id produced, if the sitter sent it before: lets a
    /// retry skip the photo work before the transaction checks again.
    func earlierRequest(submitter: String, clientRequestID: String) async throws -> CreateOutcome? {
        try self.base.read { db in try Self.earlierRequest(submitter, clientRequestID, in: db) }
    }

    private static func earlierRequest(_ submitter: String, _ clientRequestID: String, in db: Database) throws
        -> CreateOutcome?
    {
        guard
            let earlier = try String.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT check_in_id FROM check_in_request WHERE submitter_user_id = ? AND client_request_id = ?"
                ),
                arguments: [submitter, clientRequestID]
            )
        else { return nil }
        return .repeated(try CheckInRecord.fetchOne(db, cachedKey: earlier))
    }

    func checkIn(_ id: String) async throws -> CheckInRecord? {
        try self.base.read { db in
            try db.cachedStatement(sql: "\(CheckInRecord.selection) FROM check_in WHERE id = ?").fetchOne(binding: id) {
                try CheckInRecord(columns: $0)
            }
        }
    }

    /// A page of a session's check-ins in capture order, after `cursor` when given.
    func checkIns(session: String, newestFirst: Bool, after cursor: PageCursor?, limit: Int) async throws
        -> [CheckInRecord]
    {
        try self.base.read { db in
            try db.fetchPage(
                "\(CheckInRecord.selection) FROM check_in",
                where: "session_id = ?",
                arguments: [session],
                orderedBy: "captured_at",
                descending: newestFirst,
                after: cursor,
                limit: limit,
                read: CheckInRecord.init(columns:)
            )
        }
    }

    /// A check-in's stored photo: the full image or its thumbnail. Off the event loop: copying
    /// megabytes out of SQLite would hold every call on it.
    func photo(of checkIn: CheckInRecord, thumbnail: Bool) async throws -> EncodedImage? {
        try await self.base.longRead { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT \(thumbnail ? "thumbnail" : "full") AS data, thumbnail_width, thumbnail_height, format FROM photo WHERE check_in_id = ?",
                    arguments: [checkIn.id]
                ),
                let format = EncodedImage.Format(rawValue: row["format"])
            else { return nil }
            return EncodedImage(
                data: row["data"],
                width: thumbnail ? row["thumbnail_width"] : checkIn.photoWidth ?? 0,
                height: thumbnail ? row["thumbnail_height"] : checkIn.photoHeight ?? 0,
                format: format
            )
        }
    }

    /// Deletes a check-in, and takes back its owner's "New check-in" push if it has not gone
    /// out yet (its caption is no longer there to see).
    func deleteCheckIn(_ id: String) async throws {
        try await self.base.write { db in
            _ = try CheckInRecord.deleteOne(db, key: id)
            try Outbox.withdraw(id: Self.createdPushID(id), in: db)
        }
    }

    /// The id of the push that tells the owner of a new check-in.
    static func createdPushID(_ checkInID: String) -> String {
        "checkin.created:\(checkInID)"
    }

    /// Sets `viewed_at` the first time; later views keep the first time.
    func markViewed(_ id: String) async throws -> CheckInRecord? {
        let now = self.now
        return try await self.base.write { db in
            guard var checkIn = try CheckInRecord.fetchOne(db, cachedKey: id) else { return nil }
            if checkIn.viewedAt == nil {
                checkIn.viewedAt = now
                try checkIn.update(db)
            }
            return checkIn
        }
    }

    // MARK: Templates

    func templates(inNest nestID: String) async throws -> [TemplateRecord] {
        try self.base.read { db in
            try TemplateRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM template WHERE nest_id = ? ORDER BY created_at, rowid"),
                arguments: [nestID]
            )
        }
    }

    enum AddTemplateOutcome {
        case added(TemplateRecord)
        case duplicate
        case full
    }

    func addTemplate(nestID: String, text: String) async throws -> AddTemplateOutcome {
        let template = TemplateRecord(
            id: UUID().uuidString.lowercased(),
            nestID: nestID,
            text: text,
            createdAt: self.now
        )
        return try await self.base.write { db in
            // At most 50: compared here, since SQLite's NOCASE folds only A-Z.
            let texts = try String.fetchAll(
                db.cachedStatement(sql: "SELECT text FROM template WHERE nest_id = ?"),
                arguments: [nestID]
            )
            guard !texts.contains(where: { CheckinRules.sameTemplate($0, text) }) else { return .duplicate }
            guard texts.count < CheckinRules.maxTemplatesPerNest else { return .full }
            try template.insert(db)
            return .added(template)
        }
    }

    func template(_ id: String) async throws -> TemplateRecord? {
        try self.base.read { db in try TemplateRecord.fetchOne(db, cachedKey: id) }
    }

    func removeTemplate(_ id: String) async throws {
        _ = try await self.base.write { db in try TemplateRecord.deleteOne(db, key: id) }
    }
}
