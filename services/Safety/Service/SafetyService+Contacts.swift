import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
import HearthScheduler

// Emergency contacts: added as invited, re-invited, answering from the contact page.
extension SafetyService {
    public func addContact(_ request: Hearth_Safety_V1_AddContactRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_Contact
    {
        let user = try context.verifiedUser()
        var violations: [FieldViolation] = []
        let email = SafetyRules.contactEmail(request.email).value(collecting: &violations)
        let name = FieldChecks.trimmed(request.name, field: "name", characters: 0...SafetyRules.maxNameCharacters)
            .value(collecting: &violations)
        guard violations.isEmpty, let email, let name else { throw RPCError.invalidArgument(violations) }
        switch try await self.store.addContact(user, email: email, name: name) {
        case .added(let contact):
            self.wakeSenders()
            return try contact.message(now: self.store.now)
        case .noProfile:
            throw RPCError(.failedPrecondition, "create your profile (UpsertProfile) before adding contacts")
        case .duplicate:
            throw RPCError(.alreadyExists, "\(email) is already one of your contacts")
        case .full:
            throw RPCError(.failedPrecondition, "at most \(SafetyRules.maxContacts) emergency contacts")
        case .refused(let refusal):
            throw Self.error(refusal, address: email)
        }
    }

    public func resendInvitation(_ request: Hearth_Safety_V1_ResendInvitationRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_Contact
    {
        let user = try context.verifiedUser()
        guard !request.contactID.isEmpty else {
            throw FieldViolation(field: "contact_id", description: "must name one of your contacts")
        }
        switch try await self.store.resendInvitation(user, id: request.contactID) {
        case .sent(let contact):
            self.wakeSenders()
            return try contact.message(now: self.store.now)
        case .notFound:
            throw RPCError.notFound("contact", request.contactID)
        case .refused(let refusal):
            throw Self.error(refusal, address: "this contact")
        }
    }

    public func removeContact(_ request: Hearth_Safety_V1_RemoveContactRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_RemoveContactResponse
    {
        guard try await self.store.removeContact(context.verifiedUser(), id: request.contactID) else {
            throw RPCError.notFound("contact", request.contactID)
        }
        return Hearth_Safety_V1_RemoveContactResponse()
    }
    public func listContacts(_ request: Hearth_Safety_V1_ListContactsRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_ListContactsResponse
    {
        var response = Hearth_Safety_V1_ListContactsResponse()
        let now = self.store.now
        response.contacts = try await self.store.contacts(context.verifiedUser()).map { try $0.message(now: now) }
        return response
    }

    public func getContactLink(_ request: Hearth_Safety_V1_GetContactLinkRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_ContactLink
    {
        let answer = try Self.answer(request.action)
        guard let token = LinkToken(request.token) else { return .init(LinkView(check: .notFound)) }
        return .init(try await self.store.link(token, for: answer))
    }

    public func answerContactLink(_ request: Hearth_Safety_V1_AnswerContactLinkRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_ContactLink
    {
        let answer = try Self.answer(request.action)
        guard let token = LinkToken(request.token) else { return .init(LinkView(check: .notFound)) }
        let (view, changed) = try await self.store.answer(token, answer)
        if changed {
            // The switch may be armed or disarmed, and the user's push is queued.
            self.decider.wake()
            self.wakeSenders()
        }
        return .init(view)
    }

    private static func answer(_ action: Hearth_Safety_V1_ContactAction) throws -> ContactAnswer {
        switch action {
        case .confirm: .confirm
        case .decline: .decline
        case .optOut: .optOut
        case .unspecified, .UNRECOGNIZED:
            throw FieldViolation(field: "action", description: "must be CONFIRM, DECLINE or OPT_OUT")
        }
    }

    private static func error(_ refusal: InvitationRefusal, address: String) -> RPCError {
        switch refusal {
        case .refusedBefore(.optedOut):
            RPCError(
                .failedPrecondition,
                "\(address) opted out of emails about you; Hearth will not email it again for you"
            )
        case .refusedBefore:
            RPCError(
                .failedPrecondition,
                "\(address) declined to be your emergency contact; Hearth will not email it again for you"
            )
        case .tooManyForAddress:
            RPCError(
                .failedPrecondition,
                "\(address) was invited \(ContactConsent.maxInvitationsPerAddress) times already (the first and 3 re-sends)"
            )
        case .tooManyToday(let retryAfter):
            RPCError(
                .resourceExhausted,
                "at most \(ContactConsent.maxInvitationsPerDay) invitations a day",
                retryAfter: .retryAfter(seconds: retryAfter, minimum: 1)
            )
        case .tooSoon(let retryAfter):
            RPCError(
                .resourceExhausted,
                "an invitation is re-sent a day after the one before at the soonest",
                retryAfter: .retryAfter(seconds: retryAfter, minimum: 1)
            )
        case .notInvited(let state):
            RPCError(
                .failedPrecondition,
                "the contact is \(state.rawValue.uppercased()); only an invited contact is invited again"
            )
        }
    }
}
