import Foundation
import HearthContracts
import HearthRPC
import SwiftProtobuf

// checkins: each writer's owner makes a nest and a session with a sitter of theirs; the sitter
// posts check-ins with a photo. A session takes 10 check-ins a local day (of their capture
// time), so the session began 401 days ago and each check-in is captured in the next free slot
// of its first 400 days (``CheckInPlan``, as the benchmark places them); a session full, a new
// one. The log names the owner: the check reads as them, every check-in of every session of
// every nest they own.

extension FaultRun {
    /// Writer `writer`'s calls until the run ends: CreateNest and CreateSession as its owner
    /// (again until acknowledged), then CreateCheckIn with `photo` as the session's sitter. A
    /// session full, a new one; a nest with no room for one more session, a new nest; an owner
    /// with no room for one more nest, a new owner and sitter.
    func writeCheckIns(writer: Int, photo: Data) async throws -> [FaultWriter.Entry] {
        var log = CallLog()
        let slots = CheckInPlan(now: Date())
        var part = 0
        var owner = self.user(writer, part)
        var sitter = owner + "-sitter"
        var ownerOptions = try await self.options(as: owner)
        var sitterOptions = try await self.options(as: sitter)
        var nest: String?
        var session: String?
        var slot = 0
        var n = 0
        while !self.isOver {
            guard let nestID = nest else {
                var request = Hearth_Checkins_V1_CreateNestRequest()
                request.name = "Fault home \(writer)-\(part)"
                let result = await log.record(.nest, user: owner, id: \Hearth_Checkins_V1_Nest.id) {
                    try await Hearth_Checkins_V1_Checkins.Client(self.client).createNest(request, options: ownerOptions)
                }
                switch result {
                case .success(let made): nest = made.id
                case .failure(let error) where error.code == .resourceExhausted:
                    part += 1
                    owner = self.user(writer, part)
                    sitter = owner + "-sitter"
                    ownerOptions = try await self.options(as: owner)
                    sitterOptions = try await self.options(as: sitter)
                case .failure: break
                }
                await self.pause(after: result)
                continue
            }
            guard let sessionID = session else {
                var request = Hearth_Checkins_V1_CreateSessionRequest()
                request.nestID = nestID
                request.sitterUserID = sitter
                request.startsAt = Google_Protobuf_Timestamp(date: slots.startsAt)
                request.endsAt = Google_Protobuf_Timestamp(date: slots.endsAt)
                request.timeZone = "UTC"
                let result = await log.record(.session, user: owner, id: \Hearth_Checkins_V1_Session.id) {
                    try await Hearth_Checkins_V1_Checkins.Client(self.client).createSession(
                        request,
                        options: ownerOptions
                    )
                }
                switch result {
                case .success(let made):
                    session = made.id
                    slot = 0
                case .failure(let error) where error.code == .resourceExhausted: nest = nil
                case .failure: break
                }
                await self.pause(after: result)
                continue
            }
            n += 1
            var request = Hearth_Checkins_V1_CreateCheckInRequest()
            request.sessionID = sessionID
            request.caption = "fault write \(writer)-\(n)"
            request.capturedAt = Google_Protobuf_Timestamp(date: slots.capturedAt(slot))
            request.clientRequestID = "fault-\(self.id)-\(writer)-\(n)"
            request.photo = photo
            request.photoAltText = "A test card"
            let result = await log.record(.checkIn, user: owner, id: \Hearth_Checkins_V1_CheckIn.id) {
                try await Hearth_Checkins_V1_Checkins.Client(self.client).createCheckIn(
                    request,
                    options: sitterOptions
                )
            }
            // Each slot is tried once, whatever the answer (a failed call may have stored its
            // check-in): a day never takes more than 10. A full day (RESOURCE_EXHAUSTED) is left.
            slot += 1
            if case .failure(let error) = result, error.code == .resourceExhausted {
                slot = CheckInPlan.nextDay(after: slot - 1)
            }
            if slot >= CheckInPlan.perSession { session = nil }
            await self.pause(after: result)
        }
        return log.entries
    }
}

extension FaultCheck {
    /// Whether the acknowledged nests, sessions and check-ins of `user` (an owner) are stored,
    /// each check-in with its photo: read as the owner, through the gateway, every page of their
    /// nests, of each nest's sessions and of each session's check-ins.
    func checkIns(
        of user: String,
        acknowledged: [FaultWriter.Kind: Set<String>],
        into verdict: inout FaultVerdict
    ) async throws {
        let options = try await self.options(as: user)
        let checkins = Hearth_Checkins_V1_Checkins.Client(self.client)
        let nests: [String] = try await Self.allPages { token in
            var request = Hearth_Checkins_V1_ListMyNestsRequest()
            request.pageSize = 100
            request.pageToken = token
            let page = try await checkins.listMyNests(request, options: options)
            return (items: page.nests.filter { $0.ownerUserID == user }.map(\.id), next: page.nextPageToken)
        }
        var sessions: [String] = []
        for nest in nests {
            let pages: [String] = try await Self.allPages { token in
                var request = Hearth_Checkins_V1_ListSessionsRequest()
                request.nestID = nest
                request.pageSize = 100
                request.pageToken = token
                let page = try await checkins.listSessions(request, options: options)
                return (items: page.sessions.map(\.id), next: page.nextPageToken)
            }
            sessions += pages
        }
        var withPhoto: Set<String> = []
        for session in sessions {
            let stored: [Hearth_Checkins_V1_CheckIn] = try await Self.allPages { token in
                var request = Hearth_Checkins_V1_ListCheckInsRequest()
                request.sessionID = session
                request.order = .oldestFirst
                request.pageSize = 100
                request.pageToken = token
                let page = try await checkins.listCheckIns(request, options: options)
                return (items: page.checkIns, next: page.nextPageToken)
            }
            // A check-in stored without the photo it was acknowledged with is not the write.
            withPhoto.formUnion(stored.filter { $0.hasPhoto_p && $0.photo.byteSize > 0 }.map(\.id))
        }
        verdict.check(.nest, acknowledged: acknowledged[.nest] ?? [], stored: Set(nests))
        verdict.check(.session, acknowledged: acknowledged[.session] ?? [], stored: Set(sessions))
        verdict.check(.checkIn, acknowledged: acknowledged[.checkIn] ?? [], stored: withPhoto)
    }
}
