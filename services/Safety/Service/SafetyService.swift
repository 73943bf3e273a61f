import Foundation
import HearthContracts
public import HearthCore
public import HearthRPC
public import HearthScheduler
public import HearthStore
public import Logging
import SwiftProtobuf

/// `hearth.safety.v1.Safety`: the check-in switch.
///
/// Every call acts for the verified user. Due warnings and alerts are found by the due-time
/// scheduler (a timer to the earliest `next_due_at`) and decided into the alert outbox in one
/// transaction; a scheduler per channel delivers them, with retries.
public struct SafetyService: Hearth_Safety_V1_Safety.Handler {
    let store: any SafetyPersistence
    /// Decides what falls due. Calls that change a switch wake it.
    public let decider: DueTimeScheduler
    /// Deliver the alert outbox: one per channel (email, push).
    let senders: [DueTimeScheduler]
    /// Deletes old history, spent links and unused address records, hourly.
    let pruner: DueTimeScheduler
    /// Run beside the server.
    public var schedulers: [DueTimeScheduler] { [self.decider] + self.senders + [self.pruner] }

    /// On a SQLite file: the default, one process.
    /// - Parameter keys: what personal data is sealed with at rest (``DataKeys``).
    public init(
        location: StoreLocation,
        keys: DataKeys,
        channels: AlertChannels,
        clock: any WallClock = SystemClock(),
        logger: Logger,
        messageDomain: String = "hearth.local"
    ) throws {
        let store = try SafetyStore(location: location, keys: keys, clock: clock, product: channels.productName)
        // First: a contact stored before receives alarms from then on (a late all-clear too).
        let invited = try store.inviteContactsStoredBefore()
        if invited > 0 {
            logger.notice("contacts stored before invitations were invited", metadata: ["contacts": "\(invited)"])
        }
        // This process is the file's only one: what a killed one left under way is released now.
        try store.releaseClaims()
        self.init(store: store, channels: channels, clock: clock, logger: logger, messageDomain: messageDomain)
    }

    /// On `store`, with its schedulers; a message claimed for sending is under way for `lease`
    /// (renewed while the send lasts). `lookAtLeastEvery`: the longest the schedulers sleep, for
    /// a store other processes share (what they make due wakes no scheduler here).
    init(
        store: any SafetyPersistence,
        channels: AlertChannels,
        clock: any WallClock,
        logger: Logger,
        messageDomain: String,
        lease: TimeInterval = AlertSender.lease,
        lookAtLeastEvery: TimeInterval? = nil
    ) {
        // What the decider claims for each channel's sender (``ClaimHandoff``).
        let handoffs = AlertRecord.Channel.allCases.map { ($0, ClaimHandoff()) }
        let senders = handoffs.map { channel, handoff in
            DueTimeScheduler(
                work: AlertSender(
                    channel: channel,
                    store: store,
                    channels: channels,
                    logger: logger,
                    messageDomain: messageDomain,
                    lease: lease,
                    handoff: handoff
                ),
                clock: clock,
                logger: logger,
                lookAtLeastEvery: lookAtLeastEvery
            )
        }
        self.store = store
        self.senders = senders
        self.decider = DueTimeScheduler(
            work: AlertDecider(
                store: store,
                handoffs: Dictionary(uniqueKeysWithValues: handoffs),
                lease: lease,
                wakeSenders: { Self.wake(senders) }
            ),
            clock: clock,
            logger: logger,
            lookAtLeastEvery: lookAtLeastEvery
        )
        // Deletes the history no rule reads any more (``SafetyPersistence/pruneHistory(now:usersPerBatch:rowsPerTransaction:)``), the
        // links that can no longer act and what addresses answered once nothing needs it
        // (``SafetyPersistence/pruneContactLinks(now:rowsPerTransaction:)``,
        // ``SafetyPersistence/pruneContactAddresses(now:rowsPerTransaction:)``), on a scheduler of its
        // own: a long pass holds back no alert.
        self.pruner = DueTimeScheduler(
            work: Housekeeping(start: clock.now(), logger: logger) { now in
                let deleted = try await store.pruneHistory(now: now)
                let links = try await store.pruneContactLinks(now: now)
                let addresses = try await store.pruneContactAddresses(now: now)
                return [
                    "heartbeats": deleted.heartbeats,
                    "alerts": deleted.alerts,
                    "contact_links": links,
                    "contact_addresses": addresses,
                ]
            },
            clock: clock,
            logger: logger
        )
    }

    // MARK: Profile and contacts

    public func upsertProfile(_ request: Hearth_Safety_V1_UpsertProfileRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Profile
    {
        let user = try context.verifiedUser()
        let violations = SafetyRules.profileViolations(ProfileDraft(request))
        guard violations.isEmpty else { throw RPCError.invalidArgument(violations) }
        let profile = try await self.store.upsertProfile(user) { profile in
            profile.name = SealedText(request.name.trimmingCharacters(in: .whitespacesAndNewlines))
            profile.email = SealedText(request.email.trimmingCharacters(in: .whitespaces))
            profile.thresholdHours = Int(request.thresholdHours)
            profile.language = request.preferredLanguage
            profile.timeZone = request.timeZone
            profile.reminderEnabled = request.dailyReminder.enabled
            profile.reminderHour = Int(request.dailyReminder.hour)
            profile.reminderMinute = Int(request.dailyReminder.minute)
            profile.pushToken = request.pushToken
            profile.countActivity = request.countActivityAsCheckIn
            if request.hasIsActive { profile.isActive = request.isActive }
        }
        self.decider.wake()
        return try profile.message
    }

    public func getProfile(_ request: Hearth_Safety_V1_GetProfileRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Profile
    {
        try await self.requireProfile(context.verifiedUser()).message
    }

    public func deleteAccount(_ request: Hearth_Safety_V1_DeleteAccountRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_DeleteAccountResponse
    {
        // What an account erasure does in safety (the same rows, the WAL emptied after), so that
        // "for good" holds here too.
        _ = try await self.store.eraseUser(context.verifiedUser())
        self.decider.wake()
        return Hearth_Safety_V1_DeleteAccountResponse()
    }

    // MARK: Check-ins and the switch

    public func recordHeartbeat(_ request: Hearth_Safety_V1_RecordHeartbeatRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_Status
    {
        let user = try context.verifiedUser()
        // A real check-in is never refused for what came with it: a zone this server does not
        // know (older tzdata, a non-IANA name) is not kept, the last one stands; device info is
        // cut to 512 characters; one without a request id gets an id of its own (repeats still
        // coalesce within 5 s). Only an id too long to be one is refused: a client bug that
        // shows on the first try.
        guard FieldChecks.fits(request.clientRequestID, characters: SafetyRules.maxRequestIDCharacters) else {
            throw FieldViolation(
                field: "client_request_id",
                description: "at most \(SafetyRules.maxRequestIDCharacters) characters"
            )
        }
        let zone = request.timeZone.isEmpty || TimeZone(iana: request.timeZone) == nil ? nil : request.timeZone
        let result = try await self.store.recordHeartbeat(
            user,
            timeZone: zone,
            deviceInfo: FieldChecks.cut(request.deviceInfo, characters: SafetyRules.maxDeviceInfoCharacters),
            requestID: SafetyRules.HeartbeatID.app(request.clientRequestID),
            source: "app"
        )
        self.scheduleWork(after: result)
        if case .rateLimited(let retryAfter) = result.outcome {
            throw RPCError(
                .resourceExhausted,
                "more than \(SafetyRules.maxHeartbeatsPerHour) check-ins in an hour; this one still reset your timer",
                retryAfter: .retryAfter(seconds: retryAfter, minimum: 1)
            )
        }
        return result.status.map { $0.message(now: self.store.now) } ?? Self.notArmed
    }

    public func getStatus(_ request: Hearth_Safety_V1_GetStatusRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Status
    {
        try await self.status(context.verifiedUser())
    }

    public func snooze(_ request: Hearth_Safety_V1_SnoozeRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Status
    {
        let user = try context.verifiedUser()
        try self.changed(await self.store.snooze(user))
        return try await self.status(user)
    }

    public func pause(_ request: Hearth_Safety_V1_PauseRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Status
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        let until = try FieldChecks.requiredTimestamp(request.until, isSet: request.hasUntil, field: "until").get()
        guard until > now else {
            throw FieldViolation(field: "until", description: "must be a time in the future")
        }
        guard until <= now.addingTimeInterval(SafetyRules.maxPause) else {
            throw FieldViolation(field: "until", description: "at most 30 days from now")
        }
        try self.changed(await self.store.pause(user, until: until))
        return try await self.status(user)
    }

    public func resume(_ request: Hearth_Safety_V1_ResumeRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Status
    {
        let user = try context.verifiedUser()
        try self.changed(await self.store.resume(user))
        return try await self.status(user)
    }

    public func sendTest(_ request: Hearth_Safety_V1_SendTestRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_SendTestResponse
    {
        let user = try context.verifiedUser()
        let profile = try await self.requireProfile(user)
        var response = Hearth_Safety_V1_SendTestResponse()
        let channel: AlertRecord.Channel
        let address: String
        switch request.channel {
        case .email:
            (channel, address) = (.email, try profile.email.open())
            response.sentTo = address
        case .push:
            guard !profile.pushToken.isEmpty else {
                throw RPCError(.failedPrecondition, "no push token on your profile")
            }
            (channel, address, response.sentTo) = (.push, profile.pushToken, "push")
        default:
            throw FieldViolation(field: "channel", description: "must be EMAIL or PUSH")
        }
        let text = profile.texts(product: self.store.product).test()
        if let retryAfter = try await self.store.enqueueTest(
            user,
            channel: channel,
            address: address,
            subject: text.subject,
            body: text.body
        ) {
            throw RPCError(
                .resourceExhausted,
                "at most \(SafetyRules.maxTestsPerHour) test messages an hour on each channel",
                retryAfter: .milliseconds(Int64(max(retryAfter, 0.001) * 1000))
            )
        }
        self.wakeSenders()
        return response
    }

    public func forwardActivity(_ request: Hearth_Safety_V1_ForwardActivityRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_ForwardActivityResponse
    {
        let user = try context.verifiedUser()
        guard SafetyRules.activitySources.contains(request.source) else {
            throw FieldViolation(field: "source", description: "must be checkins, tasks or routines")
        }
        guard !request.eventID.isEmpty, request.eventID.count <= SafetyActivity.maxEventIDCharacters else {
            throw FieldViolation(
                field: "event_id",
                description: "must have 1 to \(SafetyActivity.maxEventIDCharacters) characters"
            )
        }
        let occurredAt =
            request.hasOccurredAt ? try FieldChecks.timestamp(request.occurredAt, field: "occurred_at").get() : nil
        var response = Hearth_Safety_V1_ForwardActivityResponse()
        guard let profile = try await self.store.profile(user), profile.countActivity else { return response }
        let result = try await self.store.recordHeartbeat(
            user,
            timeZone: nil,
            deviceInfo: "",
            requestID: SafetyRules.HeartbeatID.forwarded(source: request.source, eventID: request.eventID),
            source: request.source,
            occurredAt: occurredAt
        )
        self.scheduleWork(after: result)
        switch result.outcome {
        case .recorded, .rateLimited: response.counted = true
        case .repeated, .noProfile: break
        }
        return response
    }

    // MARK: Helpers

    func requireProfile(_ user: String) async throws -> ProfileRecord {
        guard let profile = try await self.store.profile(user) else {
            throw RPCError(.notFound, "no safety profile yet: create one with UpsertProfile")
        }
        return profile
    }

    /// After a check-in: the decider looks again when the switch is due sooner than it may be
    /// waiting for (a check-in ends a snooze, a forward counts from when it happened), the
    /// senders when all-clears wait. Most check-ins only move the deadline later.
    private func scheduleWork(after result: HeartbeatResult) {
        if result.dueSooner { self.decider.wake() }
        if result.enqueued { self.wakeSenders() }
    }

    /// Messages were queued by the call itself: the senders look at once.
    func wakeSenders() {
        Self.wake(self.senders)
    }

    private static func wake(_ schedulers: [DueTimeScheduler]) {
        for scheduler in schedulers { scheduler.wake() }
    }

    private func changed(_ change: SwitchChange) throws {
        switch change {
        case .changed: self.decider.wake()
        case .noProfile: throw RPCError(.failedPrecondition, "no safety profile yet: create one with UpsertProfile")
        case .refused(let why): throw RPCError(.failedPrecondition, why)
        }
    }

    private func status(_ user: String) async throws -> Hearth_Safety_V1_Status {
        try await self.store.status(user).map { $0.message(now: self.store.now) } ?? Self.notArmed
    }

    private static let notArmed = Hearth_Safety_V1_Status.with {
        $0.state = .notArmed
        $0.notArmedReason = .noProfile
    }
}
