import Foundation
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthRelay
import HearthStore
import SwiftProtobuf

// The check-ins of a session: posted (with a photo, normalized), listed, viewed, deleted.
extension CheckinsService {
    public func createCheckIn(_ request: Hearth_Checkins_V1_CreateCheckInRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_CheckIn
    {
        let user = try context.verifiedUser()
        let session = try await self.participantSession(request.sessionID, user)
        guard session.sitterUserID == user else {
            throw RPCError(.permissionDenied, "only the session's sitter posts check-ins")
        }
        let hasPhoto = !request.photo.isEmpty
        var violations: [FieldViolation] = []
        let caption = CheckinRules.caption(request.caption, hasPhoto: hasPhoto).value(collecting: &violations) ?? ""
        let altText = CheckinRules.altText(request.photoAltText).value(collecting: &violations) ?? ""
        let requestIDIsValid =
            !request.clientRequestID.isEmpty && FieldChecks.fits(request.clientRequestID, characters: 128)
        if !requestIDIsValid {
            violations.append(FieldViolation(field: "client_request_id", description: "must have 1 to 128 characters"))
        }
        let now = self.store.now
        let capturedAt = FieldChecks.requiredTimestamp(
            request.capturedAt,
            isSet: request.hasCapturedAt,
            field: "captured_at"
        ).value(collecting: &violations)
        if let capturedAt,
            let timing = CheckinRules.timingViolation(
                capturedAt: capturedAt,
                now: now,
                startsAt: session.startsAt,
                endsAt: session.endsAt
            )
        {
            violations.append(timing)
        }
        // A retry of a check-in already stored gets the first answer: at once, without decoding
        // its photo again, and even when it no longer fits (an upload queue that stayed offline
        // past the session's 24 hours). A valid one without a photo is found by the write below.
        if requestIDIsValid, hasPhoto || !violations.isEmpty,
            let earlier = try await self.store.earlierRequest(submitter: user, clientRequestID: request.clientRequestID)
        {
            return try Self.answer(earlier, request: request, session: session)
        }
        guard violations.isEmpty, let capturedAt else { throw RPCError.invalidArgument(violations) }
        let zone = TimeZone(iana: session.timeZone) ?? .gmt
        let localDay = LocalDate(Store.asStored(capturedAt), in: zone).description
        // A full day is refused before the photo is decoded (the write checks again).
        if hasPhoto, try await self.store.dayIsFull(session: session.id, localDay: localDay) {
            throw Self.dayFull(localDay, session: session)
        }
        // Decoded (at most twice for each image kept) and encoded on the photo pool, off the
        // event loop; nothing of the upload is kept.
        let photo = hasPhoto ? try await self.photos.normalize(request.photo) : nil

        let record = CheckInRecord(
            id: UUID().uuidString.lowercased(),
            sessionID: session.id,
            submitterUserID: user,
            caption: caption,
            // As stored (to the millisecond): the answer and a retry's answer agree.
            capturedAt: Store.asStored(capturedAt),
            createdAt: now,
            photoAltText: altText,
            viewedAt: nil,
            clientRequestID: request.clientRequestID,
            photoFormat: photo?.full.format.rawValue,
            photoWidth: photo?.full.width,
            photoHeight: photo?.full.height,
            photoBytes: photo?.full.data.count
        )
        // In the owner's language, as they asked for it when they created this session.
        let language = UserLanguage(rawValue: session.ownerLanguage) ?? .english
        let texts = CheckinText.catalog
        let notify = PushMessage(
            id: CheckinStore.createdPushID(record.id),
            userID: session.ownerUserID,
            kind: "checkin.created",
            title: texts.text(.newCheckInTitle, language),
            body: caption.isEmpty
                ? texts.text(.photoPosted, language) : texts.text(.captioned, language, ["caption": caption]),
            data: ["session_id": session.id, "check_in_id": record.id],
            createdAt: now
        )
        let outcome = try await self.store.createCheckIn(record, photo: photo, localDay: localDay, notify: notify)
        if case .created = outcome {
            self.relay.wake()
            self.outbox.wake()
        }
        return try Self.answer(outcome, request: request, session: session)
    }

    private static func answer(
        _ outcome: CheckinStore.CreateOutcome,
        request: Hearth_Checkins_V1_CreateCheckInRequest,
        session: SessionRecord
    ) throws -> Hearth_Checkins_V1_CheckIn {
        switch outcome {
        case .created(let checkIn), .repeated(let checkIn?):
            return checkIn.message
        case .repeated(nil):
            throw RPCError(.notFound, "the check-in made by request \(request.clientRequestID) was deleted")
        case .dailyCapReached(let day):
            throw Self.dayFull(day, session: session)
        case .sessionEnded(let violation):
            throw RPCError.invalidArgument([violation])
        }
    }

    private static func dayFull(_ day: String, session: SessionRecord) -> RPCError {
        RPCError(
            .resourceExhausted,
            "a session has at most \(CheckinRules.maxPerLocalDay) check-ins a day; \(day) (\(session.timeZone)) is full"
        )
    }

    public func listCheckIns(_ request: Hearth_Checkins_V1_ListCheckInsRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_ListCheckInsResponse
    {
        let session = try await self.participantSession(request.sessionID, context.verifiedUser())
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, defaultSize: 20, maxSize: 100)
        let rows = try await self.store.checkIns(
            session: session.id,
            newestFirst: request.order == .newestFirst,
            after: page.after,
            limit: page.limit
        )
        // Captions and alt texts are counted in characters, not bytes: a page of 100 could
        // outgrow DESIGN's 4 MiB frame, so it ends early instead.
        let (checkIns, nextToken) = page.page(
            of: rows.map { (record: $0, message: $0.message) },
            cursor: { PageCursor(time: $0.record.capturedAt, id: $0.record.id) },
            bytes: { $0.message.encodedSize },
            budget: Self.listBudget
        )
        var response = Hearth_Checkins_V1_ListCheckInsResponse()
        response.checkIns = checkIns.map(\.message)
        response.nextPageToken = nextToken
        return response
    }

    public func getCheckInPhoto(_ request: Hearth_Checkins_V1_GetCheckInPhotoRequest, _ context: RPCContext)
        async throws
        -> Hearth_Checkins_V1_GetCheckInPhotoResponse
    {
        let checkIn = try await self.visibleCheckIn(request.checkInID, to: context.verifiedUser())
        guard let image = try await self.store.photo(of: checkIn, thumbnail: request.variant == .thumbnail) else {
            throw RPCError(.notFound, "check-in \(checkIn.id) has no photo")
        }
        var response = Hearth_Checkins_V1_GetCheckInPhotoResponse()
        response.data = image.data
        response.contentType = image.format.contentType
        response.metadata = .with {
            $0.width = UInt32(image.width)
            $0.height = UInt32(image.height)
            $0.byteSize = UInt64(image.data.count)
            $0.format = image.format.rawValue
        }
        return response
    }

    public func deleteCheckIn(_ request: Hearth_Checkins_V1_DeleteCheckInRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_DeleteCheckInResponse
    {
        let user = try context.verifiedUser()
        let checkIn = try await self.visibleCheckIn(request.checkInID, to: user)
        let session = try await self.participantSession(checkIn.sessionID, user)
        guard checkIn.submitterUserID == user || session.ownerUserID == user else {
            throw RPCError(.permissionDenied, "only its author or the nest's owner can delete a check-in")
        }
        try await self.store.deleteCheckIn(checkIn.id)
        return Hearth_Checkins_V1_DeleteCheckInResponse()
    }

    public func markViewed(_ request: Hearth_Checkins_V1_MarkViewedRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_CheckIn
    {
        let user = try context.verifiedUser()
        let checkIn = try await self.visibleCheckIn(request.checkInID, to: user)
        let session = try await self.participantSession(checkIn.sessionID, user)
        guard session.ownerUserID == user else {
            throw RPCError(.permissionDenied, "only the nest's owner marks check-ins viewed")
        }
        guard let viewed = try await self.store.markViewed(checkIn.id) else {
            throw RPCError.notFound("check-in", checkIn.id)
        }
        return viewed.message
    }
}
