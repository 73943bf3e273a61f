import CheckinsService
import Foundation
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthStore
import HearthTestSupport
import Logging
import RoutinesService
import SafetyService
import SwiftProtobuf
import TasksService
import Testing

/// Every method of every service, called over a real connection as the owner of some data, as
/// a sitter of the owner's nest, as a stranger, and without the internal credential: nobody
/// without the credential gets anything, and a stranger never sees (or changes) the owner's
/// data, whatever ids they send.
@Suite("Authorization matrix", .timeLimit(.minutes(2)))
struct AuthorizationMatrixTests {
    static let secret = "matrix-secret"
    /// Appears in every piece of the owner's data; a response that contains it leaked.
    static let marker = "OLIVIA-PRIVATE"

    struct Ids {
        var nest = "", session = "", checkIn = "", template = "", routine = "", action = "", task = ""
        var prompt = "", activity = "", offer = "", contact = ""

        var all: [String] {
            [nest, session, checkIn, template, routine, action, task, prompt, activity, offer, contact]
        }
    }

    /// A request for `method` (JSON) that names the owner's resources.
    static func request(_ method: String, _ ids: Ids, now: Date) -> String {
        let soon = Google_Protobuf_Timestamp(date: now.addingTimeInterval(3600)).date.formatted(.iso8601)
        let recent = Google_Protobuf_Timestamp(date: now.addingTimeInterval(-60)).date.formatted(.iso8601)
        let today = LocalDate(now, in: .gmt).description
        let name = String(method.split(separator: "/").last ?? "")
        let service = String(method.split(separator: "/").first ?? "")
        switch (service, name) {
        case ("hearth.checkins.v1.Checkins", "CreateNest"): return #"{"name": "Mine"}"#
        case (_, "GetNest"), (_, "ListSessions"), (_, "ListTemplates"), (_, "ListRoutines"):
            return #"{"nestId": "\#(ids.nest)"}"#
        case (_, "ListMyNests"): return "{}"
        case (_, "CreateSession"):
            return
                #"{"nestId": "\#(ids.nest)", "sitterUserId": "mallory", "startsAt": "\#(recent)", "endsAt": "\#(soon)", "timeZone": "UTC"}"#
        case (_, "GetSession"), (_, "EndSession"): return #"{"sessionId": "\#(ids.session)"}"#
        case (_, "GetNestRole"): return #"{"nestId": "\#(ids.nest)", "userId": "olivia"}"#
        case ("hearth.checkins.v1.Checkins", "CreateCheckIn"):
            return
                #"{"sessionId": "\#(ids.session)", "caption": "hi", "capturedAt": "\#(recent)", "clientRequestId": "\#(UUID())"}"#
        case (_, "ListCheckIns"): return #"{"sessionId": "\#(ids.session)"}"#
        case (_, "GetCheckInPhoto"), (_, "DeleteCheckIn"), (_, "MarkViewed"):
            return #"{"checkInId": "\#(ids.checkIn)"}"#
        case (_, "AddTemplate"): return #"{"nestId": "\#(ids.nest)", "text": "Fed the cat"}"#
        case (_, "RemoveTemplate"): return #"{"templateId": "\#(ids.template)"}"#
        case (_, "CreateRoutine"): return #"{"nestId": "\#(ids.nest)", "title": "Mine", "actions": ["a"]}"#
        case (_, "GetRoutine"), (_, "DeleteRoutine"): return #"{"routineId": "\#(ids.routine)"}"#
        case (_, "UpdateRoutine"): return #"{"routineId": "\#(ids.routine)", "title": "Changed"}"#
        case (_, "AddAction"): return #"{"routineId": "\#(ids.routine)", "text": "More"}"#
        case (_, "RemoveAction"): return #"{"routineId": "\#(ids.routine)", "actionId": "\#(ids.action)"}"#
        case (_, "EditAction"):
            return #"{"routineId": "\#(ids.routine)", "actionId": "\#(ids.action)", "text": "mine now"}"#
        case (_, "SetActionDone"):
            return #"{"routineId": "\#(ids.routine)", "actionId": "\#(ids.action)", "done": true, "timeZone": "UTC"}"#
        case (_, "GetProgress"): return #"{"routineId": "\#(ids.routine)", "timeZone": "UTC", "userId": "olivia"}"#
        case (_, "GetHistory"):
            return
                #"{"routineId": "\#(ids.routine)", "userId": "olivia", "fromDate": "\#(today)", "toDate": "\#(today)", "timeZone": "UTC"}"#
        case (_, "UpsertProfile"):
            return
                #"{"name": "Me", "email": "me@example.com", "thresholdHours": 24, "preferredLanguage": "en", "timeZone": "UTC"}"#
        case (_, "AddContact"): return #"{"email": "friend@example.com"}"#
        case (_, "RemoveContact"), (_, "ResendInvitation"): return #"{"contactId": "\#(ids.contact)"}"#
        // The contact page's: a link's token is the only authority, and one made up finds nothing.
        case (_, "GetContactLink"), (_, "AnswerContactLink"):
            return #"{"token": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "action": "CONFIRM"}"#
        case (_, "RecordHeartbeat"): return #"{"clientRequestId": "\#(UUID())"}"#
        case (_, "Pause"): return #"{"until": "\#(soon)"}"#
        case (_, "SendTest"): return #"{"channel": "EMAIL"}"#
        case (_, "ForwardActivity"): return #"{"source": "tasks", "eventId": "\#(UUID())", "occurredAt": "\#(recent)"}"#
        case (_, "CreateTask"):
            return #"{"title": "Mine", "checkInTimes": [{"preset": "EVENING"}], "durationDays": 2, "timeZone": "UTC"}"#
        case (_, "GetTask"), (_, "CancelTask"), (_, "ListPrompts"): return #"{"taskId": "\#(ids.task)"}"#
        case (_, "ListPendingPrompts"): return #"{"taskId": "\#(ids.task)"}"#
        case (_, "RespondToPrompt"): return #"{"promptId": "\#(ids.prompt)", "responseText": "mine now"}"#
        case ("hearth.tasks.v1.Tasks", "RecordCheckIn"):
            return #"{"taskId": "\#(ids.task)", "responseText": "mine now"}"#
        case (_, "DismissPrompt"): return #"{"promptId": "\#(ids.prompt)"}"#
        case (_, "CreateActivity"): return #"{"title": "Mine", "repeat": "NONE"}"#
        case (_, "GetActivity"), (_, "CompleteActivity"), (_, "DeleteActivity"), (_, "ClearLocationRule"):
            return #"{"activityId": "\#(ids.activity)"}"#
        case (_, "SetLocationRule"):
            return
                #"{"activityId": "\#(ids.activity)", "trigger": "LEAVE", "place": {"label": "X", "latitude": 1, "longitude": 1}}"#
        case (_, "SetOfferPreferences"): return #"{"enabled": true, "timeZone": "UTC"}"#
        case (_, "ReportPermissions"):
            return #"{"location": "LOCATION_WHEN_IN_USE", "notifications": "NOTIFICATIONS_DENIED"}"#
        case (_, "ReportLocationEvent"):
            return
                #"{"activityId": "\#(ids.activity)", "trigger": "LEAVE", "occurredAt": "\#(recent)", "appState": "FOREGROUND", "clientEventId": "\#(UUID())"}"#
        case (_, "RespondToOffer"): return #"{"offerId": "\#(ids.offer)", "action": "MARK_DONE"}"#
        case (_, "GetOfferStats"): return #"{"from": "\#(recent)", "to": "\#(soon)"}"#
        default: return "{}"
        }
    }

    @Test("no credential: refused; a stranger never sees or changes the owner's data; a sitter sees no personal data")
    func matrix() async throws {
        var logger = Logger(label: "matrix")
        logger.logLevel = .critical
        let now = Date()
        let checkins = try CheckinsService(location: .inMemory)
        let tasks = try TasksService(location: .inMemory, logger: logger)
        let activities = ActivitiesService(sharingStoreOf: tasks)
        let safety = try Self.safety(location: .inMemory, logger: logger)
        let configuration = ServerConfiguration(callers: .anyMethod(Self.secret))
        try await withServer(configuration: configuration, services: [checkins]) { _, checkinsPort in
            try await withClient(port: checkinsPort) { rolesClient in
                let routines = try RoutinesService(
                    location: .inMemory,
                    roles: CheckinsNestRoles(
                        client: rolesClient,
                        internalCredential: Self.secret,
                        timeout: .seconds(15)
                    )
                )
                let services: [any RPCService] = [checkins, tasks, activities, safety, routines]
                try await withServer(configuration: configuration, services: services) { _, port in
                    try await withClient(port: port) { client in
                        // The tasks process serves the account service: on a server of its own here, asking the
                        // others through `client` as it asks its peers.
                        try await Self.withAccountServer(sharing: tasks, peers: client) { account, accountClient in
                            let ids = try await Self.seed(client, now: now)
                            let methods = (services + [account]).flatMap(\.methods)
                            #expect(methods.count == 78)

                            func call(_ method: RPCMethod, as user: String?) async -> Result<Data, RPCError> {
                                var metadata: [String: String] = [:]
                                if let user {
                                    metadata[TrustedMetadata.credential] = Self.secret
                                    metadata[TrustedMetadata.user] = user
                                }
                                do {
                                    let request = try Self.requestType(of: method.name).init(
                                        jsonString: Self.request(method.name, ids, now: now)
                                    )
                                    return .success(
                                        try await (method.name.hasPrefix("hearth.account.") ? accountClient : client)
                                            .callRaw(
                                                method.name,
                                                payload: try request.serializedData(),
                                                options: CallOptions(timeout: .seconds(10), metadata: metadata)
                                            )
                                    )
                                } catch {
                                    return .failure(RPCError(answering: error))
                                }
                            }
                            func leaks(_ result: Result<Data, RPCError>, ids: [String]) -> Bool {
                                let text: String
                                switch result {
                                case .success(let data): text = String(decoding: data, as: UTF8.self)
                                case .failure(let error): text = error.message
                                }
                                return text.contains(Self.marker) || ids.contains { !$0.isEmpty && text.contains($0) }
                            }

                            for method in methods {
                                let anonymous = await call(method, as: nil)
                                #expect(
                                    (try? anonymous.get()) == nil && anonymous.failureCode == .unauthenticated,
                                    "\(method.name) without the credential"
                                )
                            }
                            // A stranger may hear back the ids they sent (in NOT_FOUND), nothing else: no
                            // content (the marker) and no id they did not send.
                            for method in methods {
                                let answer = await call(method, as: "mallory")
                                #expect(!leaks(answer, ids: []), "\(method.name) as a stranger leaked: \(answer)")
                                if case .success(let data) = answer {
                                    let sent = Self.request(method.name, ids, now: now)
                                    let unsent = ids.all.filter { !sent.contains($0) }
                                    #expect(
                                        !leaks(.success(data), ids: unsent),
                                        "\(method.name) as a stranger returned the owner's ids"
                                    )
                                }
                            }
                            // The sitter shares the nest (checkins, routines), nothing personal. (The account's export
                            // holds the nest they sit in: AccountAuthorizationTests reads it part by part.)
                            for method in methods
                            where ["hearth.tasks.", "hearth.safety."].contains(where: method.name.hasPrefix) {
                                let answer = await call(method, as: "sam")
                                #expect(!leaks(answer, ids: []), "\(method.name) as the sitter leaked: \(answer)")
                            }

                            // Everything the owner had is still there, unchanged by the others' calls.
                            let intact = try await Self.ownerView(
                                client,
                                ids,
                                methods: Dictionary(uniqueKeysWithValues: methods.map { ($0.name, $0) })
                            )
                            #expect(
                                intact.allSatisfy { $0.value.contains(Self.marker) },
                                "\(intact.filter { !$0.value.contains(Self.marker) }.keys)"
                            )

                            // The owner's own calls are served (or refused for a business reason), never
                            // mistaken for someone else's.
                            for method in methods {
                                let answer = await call(method, as: "olivia")
                                #expect(
                                    ![.unauthenticated, .internal, .unimplemented].contains(answer.failureCode),
                                    "\(method.name) as the owner: \(answer)"
                                )
                            }
                        }
                    }
                }
            }
        }
    }

    /// Safety with its emails and pushes written to `logger`.
    static func safety(location: StoreLocation, logger: Logger) throws -> SafetyService {
        try SafetyService(
            location: location,
            keys: .random(),
            channels: AlertChannels(
                mail: LogMailTransport(logger: logger),
                from: MailAddress("alerts@hearth.example"),
                push: LogPushSender(logger: logger)
            ),
            logger: logger
        )
    }

    /// The owner's data, each piece carrying the marker: a nest with sam sitting, a check-in, a
    /// template, a routine, a task with a due prompt, an activity with a rule and an offer,
    /// and a safety profile with a contact.
    static func seed(_ client: RPCClient, now: Date) async throws -> Ids {
        var ids = Ids()
        let marker = Self.marker
        let recent = now.addingTimeInterval(-60).formatted(.iso8601)
        let later = now.addingTimeInterval(86_400).formatted(.iso8601)
        func typed<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
            _ method: String,
            _ request: Request,
            _: Response.Type,
            as user: String = "olivia"
        ) async throws -> Response {
            try await client.call(
                method,
                request,
                as: Response.self,
                options: CallOptions(
                    timeout: .seconds(10),
                    metadata: [TrustedMetadata.credential: Self.secret, TrustedMetadata.user: user]
                )
            )
        }
        let nest = try await typed(
            Hearth_Checkins_V1_Checkins.Method.createNest.name,
            try Hearth_Checkins_V1_CreateNestRequest(jsonString: #"{"name": "\#(marker) home"}"#),
            Hearth_Checkins_V1_Nest.self
        )
        ids.nest = nest.id
        ids.session = try await typed(
            Hearth_Checkins_V1_Checkins.Method.createSession.name,
            try Hearth_Checkins_V1_CreateSessionRequest(
                jsonString:
                    #"{"nestId": "\#(nest.id)", "sitterUserId": "sam", "startsAt": "\#(recent)", "endsAt": "\#(later)", "timeZone": "UTC"}"#
            ),
            Hearth_Checkins_V1_Session.self
        ).id
        ids.checkIn = try await typed(
            Hearth_Checkins_V1_Checkins.Method.createCheckIn.name,
            try Hearth_Checkins_V1_CreateCheckInRequest(
                jsonString:
                    #"{"sessionId": "\#(ids.session)", "caption": "\#(marker) dog fed", "capturedAt": "\#(recent)", "clientRequestId": "seed"}"#
            ),
            Hearth_Checkins_V1_CheckIn.self,
            as: "sam"
        ).id
        ids.template = try await typed(
            Hearth_Checkins_V1_Checkins.Method.addTemplate.name,
            try Hearth_Checkins_V1_AddTemplateRequest(
                jsonString: #"{"nestId": "\#(nest.id)", "text": "\#(marker) tpl"}"#
            ),
            Hearth_Checkins_V1_Template.self
        ).id
        let routine = try await typed(
            Hearth_Routines_V1_Routines.Method.createRoutine.name,
            try Hearth_Routines_V1_CreateRoutineRequest(
                jsonString:
                    #"{"nestId": "\#(nest.id)", "title": "\#(marker) bedtime", "actions": ["\#(marker) teeth"]}"#
            ),
            Hearth_Routines_V1_Routine.self
        )
        ids.routine = routine.id
        ids.action = routine.actions[0].id
        let hour = Calendar(identifier: .gregorian).dateComponents(in: .gmt, from: now)
        let task = try await typed(
            Hearth_Tasks_V1_Tasks.Method.createTask.name,
            try Hearth_Tasks_V1_CreateTaskRequest(
                jsonString:
                    #"{"title": "\#(marker) decision", "checkInTimes": [{"custom": "\#(String(format: "%02d:%02d", hour.hour!, hour.minute!))"}, {"preset": "EVENING"}], "durationDays": 3, "timeZone": "UTC", "startDate": "\#(LocalDate(now, in: .gmt).adding(days: 1))"}"#
            ),
            Hearth_Tasks_V1_CreateTaskResponse.self
        )
        ids.task = task.task.id
        ids.prompt = task.nextPrompt.id
        let activity = try await typed(
            Hearth_Tasks_V1_Activities.Method.createActivity.name,
            try Hearth_Tasks_V1_CreateActivityRequest(jsonString: #"{"title": "\#(marker) gym", "repeat": "DAILY"}"#),
            Hearth_Tasks_V1_Activity.self
        )
        ids.activity = activity.id
        _ = try await typed(
            Hearth_Tasks_V1_Activities.Method.setLocationRule.name,
            try Hearth_Tasks_V1_SetLocationRuleRequest(
                jsonString:
                    #"{"activityId": "\#(activity.id)", "trigger": "LEAVE", "place": {"label": "\#(marker) gym", "latitude": 40.7, "longitude": -74}}"#
            ),
            Hearth_Tasks_V1_Activity.self
        )
        // Offers are off until turned on.
        _ = try await typed(
            Hearth_Tasks_V1_Activities.Method.setOfferPreferences.name,
            try Hearth_Tasks_V1_SetOfferPreferencesRequest(jsonString: #"{"timeZone": "UTC"}"#),
            Hearth_Tasks_V1_OfferPreferences.self
        )
        let report = try await typed(
            Hearth_Tasks_V1_Activities.Method.reportLocationEvent.name,
            try Hearth_Tasks_V1_ReportLocationEventRequest(
                jsonString:
                    #"{"activityId": "\#(activity.id)", "trigger": "LEAVE", "occurredAt": "\#(recent)", "appState": "FOREGROUND", "clientEventId": "seed"}"#
            ),
            Hearth_Tasks_V1_ReportLocationEventResponse.self
        )
        ids.offer = report.offer.offerID
        _ = try await typed(
            Hearth_Safety_V1_Safety.Method.upsertProfile.name,
            try Hearth_Safety_V1_UpsertProfileRequest(
                jsonString:
                    #"{"name": "\#(marker) Olivia", "email": "olivia@example.com", "thresholdHours": 24, "preferredLanguage": "en", "timeZone": "UTC"}"#
            ),
            Hearth_Safety_V1_Profile.self
        )
        ids.contact = try await typed(
            Hearth_Safety_V1_Safety.Method.addContact.name,
            try Hearth_Safety_V1_AddContactRequest(
                jsonString: #"{"email": "brother@example.com", "name": "\#(marker) Wei"}"#
            ),
            Hearth_Safety_V1_Contact.self
        ).id
        return ids
    }

    /// What the owner reads of each piece, as text.
    static func ownerView(_ client: RPCClient, _ ids: Ids, methods: [String: RPCMethod]) async throws
        -> [String: String]
    {
        let options = CallOptions(
            timeout: .seconds(10),
            metadata: [TrustedMetadata.credential: Self.secret, TrustedMetadata.user: "olivia"]
        )
        var view: [String: String] = [:]
        for (method, json) in [
            (Hearth_Checkins_V1_Checkins.Method.getNest.name, #"{"nestId": "\#(ids.nest)"}"#),
            (Hearth_Checkins_V1_Checkins.Method.listCheckIns.name, #"{"sessionId": "\#(ids.session)"}"#),
            (Hearth_Checkins_V1_Checkins.Method.listTemplates.name, #"{"nestId": "\#(ids.nest)"}"#),
            (Hearth_Routines_V1_Routines.Method.getRoutine.name, #"{"routineId": "\#(ids.routine)"}"#),
            (Hearth_Tasks_V1_Tasks.Method.getTask.name, #"{"taskId": "\#(ids.task)"}"#),
            (Hearth_Tasks_V1_Activities.Method.getActivity.name, #"{"activityId": "\#(ids.activity)"}"#),
            (Hearth_Safety_V1_Safety.Method.getProfile.name, "{}"),
            (Hearth_Safety_V1_Safety.Method.listContacts.name, "{}"),
        ] {
            _ = try #require(methods[method])
            let requestType = Self.requestType(of: method)
            let data = try await client.callRaw(
                method,
                payload: try requestType.init(jsonString: json).serializedData(),
                options: options
            )
            view[method] = String(decoding: data, as: UTF8.self)
        }
        return view
    }
}

extension Result where Failure == RPCError {
    var failureCode: StatusCode? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

extension AuthorizationMatrixTests {
    /// A method's request type, from the generated contracts.
    static func requestType(of method: String) -> any SwiftProtobuf.Message.Type {
        Contracts.services.flatMap(\.methods).first { $0.name == method }!.requestType
    }
}
