import Foundation
import HearthContracts
public import HearthCore
public import HearthPush
public import HearthRPC
public import HearthRelay
public import HearthScheduler
public import HearthStore
public import Logging
import SwiftProtobuf

/// `hearth.tasks.v1.Tasks`: multi-day tasks that prompt their owner at chosen times of day.
///
/// Every call acts for the verified user; only a task's owner sees or answers anything of
/// it (anyone else gets NOT_FOUND). Prompts are generated with the task; when one falls due
/// the due-time scheduler puts its push in the outbox, and answering records the check-in.
public struct TasksService: Hearth_Tasks_V1_Tasks.Handler {
    let store: TaskStore
    /// Runs beside the server: decides the push of each prompt that falls due.
    public let scheduler: DueTimeScheduler
    /// Deletes location events and offers older than any rule reads, hourly.
    let housekeeping: DueTimeScheduler
    public var schedulers: [DueTimeScheduler] { [self.scheduler, self.housekeeping] }

    /// Opens (and migrates) the service's store.
    public init(location: StoreLocation, clock: any WallClock = SystemClock(), logger: Logger) throws {
        self.store = try TaskStore(location: location, clock: clock)
        self.scheduler = DueTimeScheduler(work: PromptPushWork(store: self.store), clock: clock, logger: logger)
        let activities = ActivityStore(base: self.store.base)
        self.housekeeping = DueTimeScheduler(
            work: Housekeeping(start: clock.now(), logger: logger) { now in
                try await activities.pruneHistory(now: now)
            },
            clock: clock,
            logger: logger
        )
    }

    /// "Check-in due" pushes.
    public var outbox: Outbox { self.store.outbox }

    /// Calls this service owes other services (activity for safety).
    public var relay: Relay { self.store.relay }

    // MARK: Tasks

    public func createTask(_ request: Hearth_Tasks_V1_CreateTaskRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_CreateTaskResponse
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        let requestID = request.clientRequestID.isEmpty ? nil : request.clientRequestID
        let made: (task: TaskRecord, prompts: [PromptRecord])
        let draft = TaskDraft(request, language: context.language ?? .english)
        switch TaskRules.newTask(draft, now: now) {
        case .success(let new):
            let planned = TaskRules.prompts(for: new, now: now)
            switch try await self.store.createTask(
                new,
                prompts: planned,
                user: user,
                clientRequestID: requestID,
                now: now
            ) {
            case .made(let task, let prompts):
                made = (task, prompts)
            case .tooManyActive:
                throw RPCError(
                    .resourceExhausted,
                    "a user has at most \(TaskRules.maxActiveTasks) active tasks; cancel one or wait for one to end"
                )
            case .tooManyToday(let retryAfter):
                throw RPCError(
                    .resourceExhausted,
                    "a user makes at most \(TaskRules.maxTasksPerDay) tasks a day",
                    retryAfter: .retryAfter(seconds: retryAfter, minimum: 1)
                )
            }
        case .failure(let error):
            // A retry of a task already made gets the first answer even once it no longer fits
            // (its start date has passed, say).
            guard let requestID, FieldChecks.fits(requestID, characters: TaskRules.maxClientRequestIDCharacters),
                let earlier = try await self.store.earlierTask(user: user, clientRequestID: requestID)
            else { throw error }
            made = earlier
        }
        let (task, prompts) = made
        if let requestID, !TaskRules.canBeRetry(draft, of: (task.title, task.durationDays, task.timeZone)) {
            throw RPCError(.alreadyExists, "client_request_id \(requestID) was already used for a different task")
        }
        self.scheduler.wake()
        var response = Hearth_Tasks_V1_CreateTaskResponse()
        response.task = task.message(now: now)
        response.promptsScheduled = UInt32(prompts.count)
        if let first = prompts.first { response.nextPrompt = first.message(now: now) }
        return response
    }

    public func getTask(_ request: Hearth_Tasks_V1_GetTaskRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_GetTaskResponse
    {
        let user = try context.verifiedUser()
        let page = try PageRequest(
            size: request.checkInsPageSize,
            token: request.checkInsPageToken,
            defaultSize: 100,
            maxSize: 100,
            fields: ("check_ins_page_size", "check_ins_page_token")
        )
        guard
            let detail = try await self.store.taskDetail(
                request.taskID,
                user: user,
                checkInsAfter: page.after,
                limit: page.limit
            )
        else { throw RPCError.notFound("task", request.taskID) }
        let now = self.store.now
        let summary = TaskRules.summary(
            prompts: detail.prompts.map { ($0.state(now: now), $0.timeHasCome(at: now)) },
            checkIns: detail.scores
        )
        // A check-in's text is counted in characters, not bytes: a page ends early rather than
        // outgrow the frame.
        let (checkIns, nextToken) = page.page(
            of: detail.checkIns.map { (record: $0, message: $0.message) },
            cursor: { PageCursor(time: $0.record.recordedAt, id: $0.record.id) },
            bytes: { $0.message.encodedSize },
            budget: Self.checkInsBudget
        )
        var response = Hearth_Tasks_V1_GetTaskResponse()
        response.task = detail.task.message(now: now)
        response.checkIns = checkIns.map(\.message)
        response.summary = summary.message
        response.nextCheckInsPageToken = nextToken
        return response
    }

    /// The most bytes of check-ins one GetTask answer holds: half the frame limit leaves room
    /// for the task and its summary.
    static let checkInsBudget = ServerConfiguration.defaultMaxFrameSize / 2

    public func listTasks(_ request: Hearth_Tasks_V1_ListTasksRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_ListTasksResponse
    {
        let user = try context.verifiedUser()
        let state = request.hasState ? request.state : nil
        var violations: [FieldViolation] = []
        if let state, ![.active, .completed, .cancelled].contains(state) {
            violations.append(
                FieldViolation(field: "state", description: "must be ACTIVE, COMPLETED or CANCELLED when given")
            )
        }
        let page = try PageRequest(
            size: request.pageSize,
            token: request.pageToken,
            defaultSize: 20,
            maxSize: 100,
            alongWith: violations
        )
        let now = self.store.now
        let tasks = try await self.store.tasks(
            user: user,
            state: state?.filter,
            after: page.after,
            limit: page.limit,
            now: now
        )
        let (shown, nextToken) = page.page(of: tasks) { PageCursor(time: $0.createdAt, id: $0.id) }
        var response = Hearth_Tasks_V1_ListTasksResponse()
        response.tasks = shown.map { $0.message(now: now) }
        response.nextPageToken = nextToken
        return response
    }

    public func cancelTask(_ request: Hearth_Tasks_V1_CancelTaskRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_CancelTaskResponse
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        var response = Hearth_Tasks_V1_CancelTaskResponse()
        switch try await self.store.cancelTask(request.taskID, user: user, now: now) {
        case .cancelled(let task, let count):
            response.task = task.message(now: now)
            response.promptsCancelled = UInt32(count)
        case .alreadyCancelled(let task):
            response.task = task.message(now: now)
        case .completed(let task):
            throw RPCError(.failedPrecondition, "task \(task.id) already completed on \(task.endDate)")
        case .missing:
            throw RPCError.notFound("task", request.taskID)
        }
        return response
    }

    // MARK: Prompts

    public func listPendingPrompts(_ request: Hearth_Tasks_V1_ListPendingPromptsRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_ListPendingPromptsResponse
    {
        let user = try context.verifiedUser()
        let limit = request.limit == 0 ? TaskRules.defaultPendingLimit : Int(request.limit)
        guard TaskRules.pendingLimit.contains(limit) else {
            throw FieldViolation(
                field: "limit",
                description:
                    "must be \(TaskRules.pendingLimit.lowerBound) to \(TaskRules.pendingLimit.upperBound) (is \(limit))"
            )
        }
        if request.hasTaskID { _ = try await self.ownedTask(request.taskID, context) }
        let now = self.store.now
        let (prompts, total) = try await self.store.pendingPrompts(
            user: user,
            taskID: request.hasTaskID ? request.taskID : nil,
            now: now,
            limit: limit,
            upcoming: request.includeUpcoming
        )
        var response = Hearth_Tasks_V1_ListPendingPromptsResponse()
        response.prompts = prompts.map { $0.message(now: now) }
        response.total = UInt32(total)
        return response
    }

    public func listPrompts(_ request: Hearth_Tasks_V1_ListPromptsRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_ListPromptsResponse
    {
        let task = try await self.ownedTask(request.taskID, context)
        let now = self.store.now
        var response = Hearth_Tasks_V1_ListPromptsResponse()
        response.prompts = try await self.store.prompts(taskID: task.id).map { $0.message(now: now) }
        return response
    }

    public func respondToPrompt(_ request: Hearth_Tasks_V1_RespondToPromptRequest, _ context: RPCContext)
        async throws -> Hearth_Tasks_V1_RespondToPromptResponse
    {
        let user = try context.verifiedUser()
        let answer = try TaskRules.answer(request).get()
        let now = self.store.now
        switch try await self.store.respond(promptID: request.promptID, user: user, answer: answer, now: now) {
        case .answered(let prompt, let checkIn, let new):
            if new { self.relay.wake() }
            var response = Hearth_Tasks_V1_RespondToPromptResponse()
            response.prompt = prompt.message(now: now)
            response.checkIn = checkIn.message
            return response
        case let refused:
            throw Self.refusal(refused, promptID: request.promptID)
        }
    }

    /// Why a prompt was not answered.
    static func refusal(_ outcome: TaskStore.RespondOutcome, promptID: String) -> RPCError {
        switch outcome {
        case .answered:
            RPCError(.internal, "prompt \(promptID) was answered")
        case .differentAnswer(let earlier):
            RPCError(
                .alreadyExists,
                "prompt \(promptID) was already answered differently at \(Self.text(earlier.recordedAt))"
            )
        case .notDue(let prompt):
            RPCError(
                .failedPrecondition,
                "prompt \(prompt.id) is not due yet; it opens at \(Self.text(prompt.scheduledAt))"
            )
        case .expired(let prompt):
            RPCError(.failedPrecondition, "prompt \(prompt.id) expired at \(Self.text(prompt.expiresAt))")
        case .dismissed(let prompt):
            RPCError(.failedPrecondition, "prompt \(prompt.id) was dismissed")
        case .cancelled(let prompt):
            RPCError(.failedPrecondition, "prompt \(prompt.id) was cancelled with its task")
        case .otherTask(let prompt):
            .invalidArgument([
                FieldViolation(field: "prompt_id", description: "is a prompt of task \(prompt.taskID), not of task_id")
            ])
        case .missing:
            RPCError.notFound("prompt", promptID)
        }
    }

    public func recordCheckIn(_ request: Hearth_Tasks_V1_RecordCheckInRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_CheckIn
    {
        let user = try context.verifiedUser()
        // Every bad field at once: the answer's, then the request id's.
        var violations: [FieldViolation] = []
        let checked = TaskRules.answer(request)
        if case .failure(let error) = checked { violations = error.violations }
        let clientRequestID =
            request.clientRequestID.isEmpty
            ? nil
            : FieldChecks.trimmed(request.clientRequestID, field: "client_request_id", characters: 1...100)
                .value(collecting: &violations)
        guard violations.isEmpty, case .success(let answer) = checked else {
            throw RPCError.invalidArgument(violations)
        }
        let now = self.store.now
        if !request.promptID.isEmpty {
            // The plan's second step, after RespondToPrompt recorded the check-in: no second one.
            // The task first: another user's is NOT_FOUND, as without a prompt. (Its
            // client_request_id is not needed: the prompt makes the call idempotent.)
            _ = try await self.ownedTask(request.taskID, context)
            let outcome = try await self.store.respond(
                promptID: request.promptID,
                user: user,
                answer: answer,
                now: now,
                ofTask: request.taskID,
                earlierStands: true
            )
            guard case .answered(_, let checkIn, let new) = outcome else {
                throw Self.refusal(outcome, promptID: request.promptID)
            }
            if new { self.relay.wake() }
            return checkIn.message
        }
        switch try await self.store.recordCheckIn(
            taskID: request.taskID,
            user: user,
            answer: answer,
            clientRequestID: clientRequestID,
            now: now
        ) {
        case .recorded(let checkIn, let new):
            if new { self.relay.wake() }
            return checkIn.message
        case .differentAnswer:
            throw RPCError(
                .alreadyExists,
                "client_request_id \(request.clientRequestID) was already used for a different check-in"
            )
        case .taskCancelled:
            throw RPCError(.failedPrecondition, "task \(request.taskID) was cancelled")
        case .full:
            throw RPCError(
                .failedPrecondition,
                "a task holds at most \(TaskRules.maxExtraCheckIns) check-ins outside its prompts"
            )
        case .missing:
            throw RPCError.notFound("task", request.taskID)
        }
    }

    public func dismissPrompt(_ request: Hearth_Tasks_V1_DismissPromptRequest, _ context: RPCContext) async throws
        -> Hearth_Tasks_V1_Prompt
    {
        let user = try context.verifiedUser()
        let now = self.store.now
        switch try await self.store.dismiss(promptID: request.promptID, user: user, now: now) {
        case .dismissed(let prompt):
            return prompt.message(now: now)
        case .responded(let prompt):
            throw RPCError(.failedPrecondition, "prompt \(prompt.id) was already answered")
        case .expired(let prompt):
            throw RPCError(.failedPrecondition, "prompt \(prompt.id) expired at \(Self.text(prompt.expiresAt))")
        case .cancelled(let prompt):
            throw RPCError(.failedPrecondition, "prompt \(prompt.id) was cancelled with its task")
        case .missing:
            throw RPCError.notFound("prompt", request.promptID)
        }
    }

    // MARK: Helpers

    /// The caller's task; NOT_FOUND when it does not exist or is someone else's.
    private func ownedTask(_ id: String, _ context: RPCContext) async throws -> TaskRecord {
        guard let task = try await self.store.task(id, user: try context.verifiedUser()) else {
            throw RPCError.notFound("task", id)
        }
        return task
    }

    private static func text(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
