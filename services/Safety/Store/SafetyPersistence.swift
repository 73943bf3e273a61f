import Foundation
import HearthStore

/// What the safety service keeps and how: the switch's rules (``SwitchMachine``) decide, a store
/// persists what they decided, each transition in one transaction with its outbox rows. Two
/// stores keep it: ``SafetyStore`` on one SQLite file (the default, one process), and
/// ``PostgresSafetyStore`` on PostgreSQL, which several safety processes share (claims of due
/// work are leases, so a process that dies hands its work on).
protocol SafetyPersistence: Sendable {
    /// To the millisecond, as dates are stored: an answer built from it reads back equal.
    var now: Date { get }
    /// What personal values are sealed with (``SealedField``).
    var keys: DataKeys { get }
    /// What the app is called in the emails and pushes (``AlertTexts/product``).
    var product: String { get }

    // MARK: Profile, status, tests

    /// Creates or updates the profile; a new profile starts its first period now.
    func upsertProfile(_ user: String, _ apply: @Sendable @escaping (inout ProfileRecord) -> Void) async throws
        -> ProfileRecord
    func profile(_ user: String) async throws -> ProfileRecord?
    /// The profile, its switch, and the messages of this period (since the last check-in).
    func status(_ user: String) async throws -> StatusSnapshot?
    /// Records a test message for delivery, unless the user asked for ``SafetyRules/maxTestsPerHour``
    /// on this channel in the last hour: then how long until the next may be asked for.
    func enqueueTest(_ user: String, channel: AlertRecord.Channel, address: String, subject: String, body: String)
        async throws -> TimeInterval?

    // MARK: The switch's events

    func recordHeartbeat(
        _ user: String,
        timeZone: String?,
        deviceInfo: String,
        requestID: String,
        source: String,
        occurredAt: Date?
    ) async throws -> HeartbeatResult
    func snooze(_ user: String) async throws -> SwitchChange
    func pause(_ user: String, until: Date) async throws -> SwitchChange
    func resume(_ user: String) async throws -> SwitchChange

    // MARK: Deciding and delivering

    /// The earliest time a switch is due to be looked at.
    func nextDecisionTime() async throws -> Date?
    /// Decides what is due for up to `limit` switches; answers how many it looked at, and the
    /// messages it claimed for this process's senders as it recorded them: those that go out at
    /// once, as many of each channel as `room` allows.
    func decideDue(now: Date, limit: Int, claiming room: ClaimRoom) async throws -> DecidedBatch
    /// The earliest end of a grace not handled yet (contacts stored before invitations existed).
    func nextGraceEnd() async throws -> Date?
    func endGraces(now: Date, limit: Int) async throws -> (ended: Int, told: Int)
    /// The earliest time a message of `channel` is due to be (re)sent, leaving out `excluded`.
    func nextAttemptTime(_ channel: AlertRecord.Channel, excluding excluded: Set<String>) async throws -> Date?
    /// Claims up to `limit` due messages of `channel` for an attempt, each for `lease`.
    func claimDue(
        _ channel: AlertRecord.Channel,
        now: Date,
        limit: Int,
        lease: TimeInterval,
        excluding excluded: Set<String>
    ) async throws -> [ClaimedAlert]
    /// Keeps `claims` (attempts under way, or whose outcome is held) for another `lease` from
    /// `now`, unless an outcome was recorded meanwhile or the claim is no longer the message's:
    /// a long send keeps its message from another process.
    func extendClaims(_ claims: [AlertClaim], lease: TimeInterval, now: Date) async throws
    /// Hands back claims whose sends never began (their sender stopped, or they waited for it
    /// too long: ``ClaimHandoff``): each message due again at once, the attempt not counted, and
    /// one cancelled meanwhile left cancelled. A claim no longer its message's is left as it is.
    func returnClaims(_ claims: [AlertClaim]) async throws
    /// What became of a claimed attempt. Nothing is written when `claim` is no longer the
    /// message's (its lease ran out and another process took it, or it was recorded already);
    /// answers whether it was written.
    @discardableResult
    func record(_ claim: AlertClaim, attempt: Result<String, DeliveryFailure>, now: Date) async throws -> Bool

    // MARK: Contacts and their links

    func addContact(_ user: String, email: String, name: String) async throws -> ContactOutcome
    func resendInvitation(_ user: String, id: String) async throws -> ResendOutcome
    func removeContact(_ user: String, id: String) async throws -> Bool
    func contacts(_ user: String) async throws -> [ContactRecord]
    /// What `token`'s link can do for `answer` (the page's GET): changes nothing.
    func link(_ token: LinkToken, for answer: ContactAnswer) async throws -> LinkView
    /// Does what `token`'s link says (the page's POST).
    func answer(_ token: LinkToken, _ answer: ContactAnswer) async throws -> (view: LinkView, changed: Bool)

    // MARK: The account

    /// Deletes everything safety holds about the user but what their contacts' addresses
    /// answered; answers the rows deleted.
    func eraseUser(_ user: String) async throws -> Int
    func checkIns(of user: String) async throws -> [CheckInRow]
    func messages(of user: String) async throws -> [AlertRecord]
    /// Values sealed under each key in use, by key id, one of each field (a new key ring must
    /// open one of each key's).
    func sealedSamples() async throws -> [UInt32: [SealedSample]]
    /// Seals again under the sealing key every value sealed under another; answers how many.
    func resealAll(batch: Int) async throws -> Int

    // MARK: Housekeeping

    /// Deletes history no rule reads any more, users in batches, a bounded number of rows a
    /// transaction; answers how many rows of each went.
    func pruneHistory(now: Date, usersPerBatch: Int, rowsPerTransaction: Int) async throws
        -> (heartbeats: Int, alerts: Int)
    /// Deletes the links' tokens that can no longer act; answers how many.
    func pruneContactLinks(now: Date, rowsPerTransaction: Int) async throws -> Int
    /// Deletes what addresses answered once nothing needs it; answers how many.
    func pruneContactAddresses(now: Date, rowsPerTransaction: Int) async throws -> Int
}

extension SafetyPersistence {
    /// Decides what is due for up to `limit` switches, claiming nothing; answers how many it
    /// looked at.
    func decideDue(now: Date, limit: Int) async throws -> Int {
        try await self.decideDue(now: now, limit: limit, claiming: .none).looked
    }

    func recordHeartbeat(
        _ user: String,
        timeZone: String?,
        deviceInfo: String,
        requestID: String,
        source: String
    ) async throws -> HeartbeatResult {
        try await self.recordHeartbeat(
            user,
            timeZone: timeZone,
            deviceInfo: deviceInfo,
            requestID: requestID,
            source: source,
            occurredAt: nil
        )
    }

    func claimDue(_ channel: AlertRecord.Channel, now: Date, limit: Int, lease: TimeInterval) async throws
        -> [ClaimedAlert]
    {
        try await self.claimDue(channel, now: now, limit: limit, lease: lease, excluding: [])
    }

    func resealAll() async throws -> Int { try await self.resealAll(batch: 500) }

    func pruneHistory(now: Date) async throws -> (heartbeats: Int, alerts: Int) {
        try await self.pruneHistory(now: now, usersPerBatch: 500, rowsPerTransaction: 5000)
    }

    func pruneContactLinks(now: Date) async throws -> Int {
        try await self.pruneContactLinks(now: now, rowsPerTransaction: 5000)
    }

    func pruneContactAddresses(now: Date) async throws -> Int {
        try await self.pruneContactAddresses(now: now, rowsPerTransaction: 5000)
    }
}

enum HeartbeatOutcome: Sendable {
    /// Counted: a new period began.
    case recorded
    /// The same request id, or within 5 s of the previous heartbeat (or a forwarded activity
    /// from before the period began): nothing changed.
    case repeated
    /// Over 120 counted in the last hour: the switch was reset, the heartbeat kept uncounted.
    case rateLimited(retryAfter: TimeInterval)
    case noProfile
}

struct HeartbeatResult: Sendable {
    var outcome: HeartbeatOutcome
    /// The status right after it, read in the same transaction.
    var status: StatusSnapshot?
    /// Whether it put something in the outbox (all-clear emails): the senders must look.
    var enqueued: Bool
    /// Whether the switch is now due sooner than before (a check-in after a snooze ends
    /// the snooze; a new zone moves the daily reminder): the scheduler must look again.
    var dueSooner: Bool
}

enum SwitchChange: Sendable {
    case changed(ProfileRecord)
    case noProfile
    case refused(String)
}

struct StatusSnapshot: Sendable {
    var profile: ProfileRecord
    var clock: SwitchClock
    var alerts: [AlertRecord]
    /// Where the invitations stand, read only when the switch is not armed.
    var invitations: PendingInvitations
    /// The contacts' addresses by id, read only when `alerts` has an email (a message
    /// keeps its address only until it is sent).
    var addresses: [String: String] = [:]
}

enum ContactOutcome: Sendable {
    case added(ContactRecord)
    case noProfile
    case duplicate
    case full
    case refused(InvitationRefusal)
}

enum ResendOutcome: Sendable {
    case sent(ContactRecord)
    case notFound
    case refused(InvitationRefusal)
}

/// A message claimed for an attempt, with the links it carries to its contact (new ones for
/// each attempt: only their hashes are kept).
struct ClaimedAlert: Sendable {
    var alert: AlertRecord
    var links: ContactLinks?
    /// A push's: the user's language, for its buttons' titles.
    let language: String?

    var claim: AlertClaim { self.alert.claim }
}

extension AlertRecord {
    /// The claim it is under, as its claim returned it (a claim of none when it is under none).
    var claim: AlertClaim { AlertClaim(id: self.id, userID: self.userID, at: self.claimedAt ?? .distantPast) }
}

/// One claim of a message: its id and when it was claimed. A message whose lease ran out and
/// that another process claimed again has another claim: the first one's outcome and renewals
/// no longer touch it. Its user's, whose lock its outcome takes.
struct AlertClaim: Hashable, Sendable {
    let id: String
    let userID: String
    let at: Date
}

/// What a link from an email shows, or did.
struct LinkView: Sendable, Equatable {
    var check: LinkCheck
    /// Unless not found: the user who added the contact, their language, the contact's state.
    var personName = ""
    var language = ""
    var state: ContactState?
}

/// One check-in as its heartbeat row keeps it. Its request id (kept by source, only to know
/// a retry) is not part of it.
struct CheckInRow: Sendable, Equatable {
    /// When it happened: a forwarded activity's own time.
    var at: Date
    /// `app`, or the service that forwarded the activity (``SafetyRules/activitySources``).
    var source: String
    /// The zone it came with, or the profile's when it came without one.
    var timeZone: String
    var deviceInfo: String
    /// Whether it counted: one merged into the check-in before it, or over the rate limit,
    /// was kept without counting.
    var counted: Bool
}

/// One stored value sealed under a key: what shows whether a ring holds that very key.
struct SealedSample: Sendable {
    var field: SealedField
    var row: String
    var value: Data
}

extension SealedSample {
    /// Whether `keys` open a value sealed under each key in use: the store's own keys, not merely
    /// keys of the same ids. A key passes when one of its samples opens: a wrong key opens none,
    /// while one damaged row (its bytes changed) must not keep the switch from starting.
    /// - Throws: ``DataKeysDoNotMatch`` naming the keys missing and those that do not open.
    static func check(_ keys: DataKeys, opens samples: [UInt32: [SealedSample]]) throws {
        let ring = keys.current
        let missing = samples.keys.filter { ring.key($0) == nil }.sorted()
        let wrong = samples.filter { id, samples in
            ring.key(id) != nil
                && !samples.contains { (try? keys.open($0.value, $0.field, row: $0.row)) != nil }
        }.keys.sorted()
        guard missing.isEmpty, wrong.isEmpty else { throw DataKeysDoNotMatch(missingKeys: missing, wrongKeys: wrong) }
    }
}

/// The facts a transition reads besides the contacts (each is a read of the alert table).
struct FactReads: OptionSet, Sendable {
    let rawValue: Int
    static let decided = FactReads(rawValue: 1 << 0)
    static let period = FactReads(rawValue: 1 << 1)
    static let reminders = FactReads(rawValue: 1 << 2)
    static let alarm = FactReads(rawValue: 1 << 3)

    /// The reminders, when `profile` has them on (a transition that cannot turn them on).
    static func reminders(of profile: ProfileRecord) -> FactReads { profile.reminderEnabled ? .reminders : [] }

    /// The period's messages, when a pause has run out by `now` (its end begins a period).
    static func period(endingPauseOf profile: ProfileRecord, at now: Date) -> FactReads {
        profile.switchState.pauseOver(at: now) ? .period : []
    }
}

extension FactReads {
    /// What a change of `profile`'s settings to `settings` reads: made active again, a new
    /// period starts, which reads the old one's messages.
    static func settingsChange(_ profile: ProfileRecord, to settings: ProfileRecord) -> FactReads {
        settings.isActive && !profile.isActive ? [.decided, .reminders, .period] : [.decided, .reminders]
    }
}

extension ProfileRecord {
    /// A new user's profile before their settings are applied: its first period starts `now`.
    static func fresh(_ user: String, at now: Date) -> ProfileRecord {
        ProfileRecord(
            userID: user,
            name: "",
            email: "",
            thresholdHours: 24,
            language: "en",
            timeZone: "UTC",
            reminderEnabled: false,
            reminderHour: 9,
            reminderMinute: 0,
            pushToken: "",
            countActivity: false,
            isActive: true,
            periodStart: now,
            lastCheckInAt: nil,
            snoozes: 0,
            snoozesInARow: 0,
            pausedUntil: nil,
            epoch: 1,
            checkInEpoch: 1,
            nextDueAt: nil,
            createdAt: now,
            updatedAt: now
        )
    }
}

/// A link's token: its rules' view (``ConsentLink``), and its contact and user unless removed
/// since.
struct LinkTarget {
    var userID: String
    var addressKey: String
    var link: ConsentLink
    var contact: ContactRecord?
    var profile: ProfileRecord?

    /// What the page shows of `decision`: with the user's name and language, unless not found.
    func view(_ decision: LinkDecision) throws -> LinkView {
        guard decision.check != .notFound else { return LinkView(check: .notFound) }
        return LinkView(
            check: decision.check,
            // Without the name when it does not open: the page still answers.
            personName: self.profile?.spokenName ?? "",
            language: self.profile?.language ?? "",
            state: decision.state
        )
    }
}
