import Foundation
import HearthContracts
public import HearthCore
public import HearthPush
public import HearthRPC
public import HearthRelay
public import HearthStore
import SwiftProtobuf

/// `hearth.checkins.v1.Checkins`: nests, sitting sessions, check-ins and quick captions.
///
/// The caller is always the verified user of the call context. Only a session's owner and
/// sitter see it and its check-ins; anyone else gets NOT_FOUND, never content.
public struct CheckinsService: Hearth_Checkins_V1_Checkins.Handler {
    /// The frame a CreateCheckIn with the largest photo takes: 10 MiB of photo, and room for
    /// its other fields and the call's envelope. The checkins process, and the gateway that
    /// forwards to it, take frames this large.
    public static let maxFrameSize = PhotoNormalizer.maxUploadBytes + 1024 * 1024

    /// The most bytes of check-ins a ListCheckIns page holds: half of DESIGN's frame, which
    /// any client takes (this process takes larger ones, for photos).
    static let listBudget = ServerConfiguration.defaultMaxFrameSize / 2
    let store: CheckinStore
    /// Where uploads are normalized, a few at a time.
    let photos: PhotoPool

    /// Opens (and migrates) the service's store.
    public init(location: StoreLocation, clock: any WallClock = SystemClock()) throws {
        try self.init(location: location, clock: clock, photos: .shared)
    }

    init(location: StoreLocation, clock: any WallClock = SystemClock(), photos: PhotoPool) throws {
        self.store = try CheckinStore(location: location, clock: clock)
        self.photos = photos
    }

    /// Calls this service owes other services (activity for safety).
    public var relay: Relay { self.store.relay }

    /// Notifications this service owes (a new check-in, for the session's owner).
    public var outbox: Outbox { self.store.outbox }

    // MARK: Nests

    public func createNest(_ request: Hearth_Checkins_V1_CreateNestRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Nest
    {
        let user = try context.verifiedUser()
        let name = try CheckinRules.nestName(request.name).get()
        switch try await self.store.createNest(name: name, owner: user) {
        case .created(let nest):
            return nest.message
        case .full:
            throw RPCError(.resourceExhausted, "a user owns at most \(CheckinRules.maxNestsPerOwner) nests")
        }
    }

    public func getNest(_ request: Hearth_Checkins_V1_GetNestRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Nest
    {
        let nest = try await self.visibleNest(request.nestID, to: context.verifiedUser())
        return nest.message
    }

    public func listMyNests(_ request: Hearth_Checkins_V1_ListMyNestsRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_ListMyNestsResponse
    {
        let user = try context.verifiedUser()
        // Paged: anyone may name anyone as a sitter, so the nests one sits in have no bound.
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, defaultSize: 100, maxSize: 100)
        let rows = try await self.store.nests(of: user, after: page.after, limit: page.limit)
        let (nests, nextToken) = page.page(of: rows) { PageCursor(time: $0.createdAt, id: $0.id) }
        var response = Hearth_Checkins_V1_ListMyNestsResponse()
        response.nests = nests.map(\.message)
        response.nextPageToken = nextToken
        return response
    }

    // MARK: Sessions

    public func createSession(_ request: Hearth_Checkins_V1_CreateSessionRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Session
    {
        let user = try context.verifiedUser()
        let nest = try await self.ownedNest(request.nestID, by: user)
        var violations: [FieldViolation] = []
        let startsAt = FieldChecks.requiredTimestamp(request.startsAt, isSet: request.hasStartsAt, field: "starts_at")
            .value(collecting: &violations)
        let endsAt = FieldChecks.requiredTimestamp(request.endsAt, isSet: request.hasEndsAt, field: "ends_at")
            .value(collecting: &violations)
        violations += CheckinRules.sessionViolations(
            sitter: request.sitterUserID,
            owner: user,
            startsAt: startsAt,
            endsAt: endsAt,
            timeZone: request.timeZone
        )
        guard violations.isEmpty, let startsAt, let endsAt else { throw RPCError.invalidArgument(violations) }
        let session = SessionRecord(
            id: UUID().uuidString.lowercased(),
            nestID: nest.id,
            ownerUserID: nest.ownerUserID,
            sitterUserID: request.sitterUserID,
            startsAt: startsAt,
            endsAt: endsAt,
            timeZone: request.timeZone,
            createdAt: self.store.now,
            ownerLanguage: (context.language ?? .english).rawValue
        )
        guard try await self.store.createSession(session) else {
            throw RPCError(
                .resourceExhausted,
                "a nest has at most \(CheckinRules.maxOpenSessionsPerNest) sessions not yet ended; end one first"
            )
        }
        return session.message(now: self.store.now)
    }

    public func getSession(_ request: Hearth_Checkins_V1_GetSessionRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Session
    {
        let session = try await self.participantSession(request.sessionID, context.verifiedUser())
        return session.message(now: self.store.now)
    }

    public func listSessions(_ request: Hearth_Checkins_V1_ListSessionsRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_ListSessionsResponse
    {
        let user = try context.verifiedUser()
        let nest = try await self.visibleNest(request.nestID, to: user)
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, defaultSize: 50, maxSize: 100)
        // The owner sees every session; a sitter only their own.
        let rows = try await self.store.sessions(
            inNest: nest.id,
            sitter: user == nest.ownerUserID ? nil : user,
            newestFirst: request.order == .newestFirst,
            after: page.after,
            limit: page.limit
        )
        let (sessions, nextToken) = page.page(of: rows) { PageCursor(time: $0.startsAt, id: $0.id) }
        let now = self.store.now
        var response = Hearth_Checkins_V1_ListSessionsResponse()
        response.sessions = sessions.map { $0.message(now: now) }
        response.nextPageToken = nextToken
        return response
    }

    public func endSession(_ request: Hearth_Checkins_V1_EndSessionRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Session
    {
        let user = try context.verifiedUser()
        let session = try await self.participantSession(request.sessionID, user)
        guard session.ownerUserID == user else {
            throw RPCError(.permissionDenied, "only the nest's owner can end a session")
        }
        guard let ended = try await self.store.endSession(session.id) else {
            throw RPCError.notFound("session", session.id)
        }
        return ended.message(now: self.store.now)
    }

    public func getNestRole(_ request: Hearth_Checkins_V1_GetNestRoleRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_GetNestRoleResponse
    {
        let user = try context.verifiedUser()
        var response = Hearth_Checkins_V1_GetNestRoleResponse()
        let found = try await self.store.nest(request.nestID, sittingsOf: request.userID)
        // Asked about someone else, only the owner hears anything: whether a nest exists is
        // not told to anyone else.
        guard request.userID == user || found?.nest.ownerUserID == user else {
            throw RPCError(.permissionDenied, "you may ask only about your own role in a nest")
        }
        guard let (nest, sittings) = found else {
            response.role = .none
            return response
        }
        response.role = .init(
            NestRoleRule.role(
                user: request.userID,
                owner: nest.ownerUserID,
                sitterSessions: sittings,
                now: self.store.now
            )
        )
        return response
    }

    // MARK: Access

    /// A nest its owner, or a sitter whose session is under way, to come or ended within the
    /// late-arrival day, may see; NOT_FOUND for anyone else
    /// (``NestRoleRule/canSee(user:owner:sitterSessions:now:)``).
    func visibleNest(_ id: String, to user: String) async throws -> NestRecord {
        guard let (nest, sittings) = try await self.store.nest(id, sittingsOf: user) else {
            throw RPCError.notFound("nest", id)
        }
        if nest.ownerUserID == user { return nest }
        guard NestRoleRule.canSee(user: user, owner: nest.ownerUserID, sitterSessions: sittings, now: self.store.now)
        else { throw RPCError.notFound("nest", id) }
        return nest
    }

    /// A nest `user` owns: NOT_FOUND if they cannot see it, PERMISSION_DENIED if they sit in it.
    func ownedNest(_ id: String, by user: String) async throws -> NestRecord {
        let nest = try await self.visibleNest(id, to: user)
        guard nest.ownerUserID == user else { throw RPCError(.permissionDenied, "only the nest's owner can do that") }
        return nest
    }

    /// A session whose owner or sitter `user` is; NOT_FOUND for anyone else.
    func participantSession(_ id: String, _ user: String) async throws -> SessionRecord {
        guard let session = try await self.store.session(id), session.isParticipant(user) else {
            throw RPCError.notFound("session", id)
        }
        return session
    }

    func visibleCheckIn(_ id: String, to user: String) async throws -> CheckInRecord {
        guard let checkIn = try await self.store.checkIn(id),
            let session = try await self.store.session(checkIn.sessionID), session.isParticipant(user)
        else { throw RPCError.notFound("check-in", id) }
        return checkIn
    }
}
