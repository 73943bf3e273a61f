import Foundation
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthRelay
import HearthStore
import SwiftProtobuf

// A nest's quick captions.
extension CheckinsService {
    public func listTemplates(_ request: Hearth_Checkins_V1_ListTemplatesRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_ListTemplatesResponse
    {
        let nest = try await self.visibleNest(request.nestID, to: context.verifiedUser())
        var response = Hearth_Checkins_V1_ListTemplatesResponse()
        response.templates = try await self.store.templates(inNest: nest.id).map(\.message)
        return response
    }

    public func addTemplate(_ request: Hearth_Checkins_V1_AddTemplateRequest, _ context: RPCContext) async throws
        -> Hearth_Checkins_V1_Template
    {
        let nest = try await self.ownedNest(request.nestID, by: context.verifiedUser())
        let text = try CheckinRules.templateText(request.text).get()
        switch try await self.store.addTemplate(nestID: nest.id, text: text) {
        case .added(let template):
            return template.message
        case .duplicate:
            throw RPCError(.alreadyExists, "the nest already has the quick caption '\(text)'")
        case .full:
            throw RPCError(.failedPrecondition, "a nest has at most \(CheckinRules.maxTemplatesPerNest) quick captions")
        }
    }

    public func removeTemplate(_ request: Hearth_Checkins_V1_RemoveTemplateRequest, _ context: RPCContext)
        async throws
        -> Hearth_Checkins_V1_RemoveTemplateResponse
    {
        let user = try context.verifiedUser()
        guard let template = try await self.store.template(request.templateID) else {
            throw RPCError.notFound("template", request.templateID)
        }
        do {
            _ = try await self.ownedNest(template.nestID, by: user)
        } catch let error as RPCError where error.code == .notFound {
            // Someone who cannot see the nest learns nothing of it, not even its id.
            throw RPCError.notFound("template", request.templateID)
        }
        try await self.store.removeTemplate(template.id)
        return Hearth_Checkins_V1_RemoveTemplateResponse()
    }
}
