import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Testing

@testable import CheckinsService

/// The service over an in-memory store, with a clock the test moves.
struct Fixture {
    let service: CheckinsService
    let clock: ManualClock

    /// 2026-03-10 12:00 UTC (20:00 in Taipei).
    static let start = Date(timeIntervalSince1970: 1_773_144_000)

    init() throws {
        self.clock = ManualClock(Self.start)
        self.service = try CheckinsService(location: .inMemory, clock: self.clock)
    }

    func context(_ user: String) -> RPCContext { callContext(user) }

    /// A nest owned by `owner` and a session for `sitter` from now for `hours`.
    func nestAndSession(
        owner: String = "olivia",
        sitter: String = "sam",
        hours: Double = 72,
        zone: String = "Asia/Taipei",
        ownerLanguage: String? = nil
    )
        async throws -> (Hearth_Checkins_V1_Nest, Hearth_Checkins_V1_Session)
    {
        var nestRequest = Hearth_Checkins_V1_CreateNestRequest()
        nestRequest.name = "Home"
        let nest = try await self.service.createNest(nestRequest, self.context(owner))
        var request = Hearth_Checkins_V1_CreateSessionRequest()
        request.nestID = nest.id
        request.sitterUserID = sitter
        request.startsAt = Google_Protobuf_Timestamp(date: self.clock.now())
        request.endsAt = Google_Protobuf_Timestamp(date: self.clock.now().addingTimeInterval(hours * 3600))
        request.timeZone = zone
        return (nest, try await self.service.createSession(request, callContext(owner, language: ownerLanguage)))
    }

    func checkIn(
        _ session: Hearth_Checkins_V1_Session,
        caption: String = "All good",
        at capturedAt: Date? = nil,
        requestID: String = UUID().uuidString,
        as user: String = "sam"
    ) async throws -> Hearth_Checkins_V1_CheckIn {
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = session.id
        request.caption = caption
        request.capturedAt = Google_Protobuf_Timestamp(date: capturedAt ?? self.clock.now())
        request.clientRequestID = requestID
        return try await self.service.createCheckIn(request, self.context(user))
    }
}
