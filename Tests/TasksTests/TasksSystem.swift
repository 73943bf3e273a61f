import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Synchronization
import Testing

@testable import TasksService

/// Runs `body` with the tasks service on a new file store (``TasksSystem``), and stops it (its
/// schedulers, the webhook, the folder) afterwards, awaited, whether `body` throws or not.
/// - Parameter webhookStatuses: what the push webhook answers first (then 200).
func withTasksSystem<T>(now: Date, webhookStatuses: [Int] = [], _ body: (TasksSystem) async throws -> T)
    async throws -> T
{
    try await using(TasksSystem(now: now, webhookStatuses: webhookStatuses), teardown: { await $0.stop() }, body)
}

/// The tasks service on a file store, with its prompt scheduler and push outbox running on a
/// clock the test moves; pushes go to a real webhook. Made by ``withTasksSystem(now:webhookStatuses:_:)``.
final class TasksSystem: Sendable {
    let clock: ManualClock
    let webhook: WebhookListener
    let folder: URL
    /// The service and its running schedulers; replaced by a restart.
    private let state: Mutex<(service: TasksService, running: [Task<Void, any Error>])>

    var service: TasksService { self.state.withLock { $0.service } }

    fileprivate init(now: Date, webhookStatuses: [Int]) async throws {
        self.clock = ManualClock(now)
        self.webhook = try await WebhookListener(statuses: webhookStatuses)
        self.folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tasks-\(UUID())")
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
        let started = try Self.start(self.folder, self.clock, self.webhook)
        self.state = Mutex((started.0, started.1))
    }

    private static func start(_ folder: URL, _ clock: ManualClock, _ webhook: WebhookListener) throws -> (
        TasksService, [Task<Void, any Error>]
    ) {
        var logger = Logger(label: "tasks-test")
        logger.logLevel = .critical
        let service = try TasksService(
            location: .file(folder.appendingPathComponent("tasks.sqlite").path),
            clock: clock,
            logger: logger
        )
        let prompts = service.scheduler
        let pushes = service.outbox.deliverer(
            sender: WebhookPushSender(url: "http://127.0.0.1:\(webhook.port)/push"),
            logger: logger
        )
        return (service, [Task { try await prompts.run() }, Task { try await pushes.run() }])
    }

    /// Stops the process (its schedulers), lets `whileDown` happen, and starts it again on the
    /// same file.
    func restart(whileDown: () -> Void = {}) async throws {
        await self.halt()
        whileDown()
        let started = try Self.start(self.folder, self.clock, self.webhook)
        self.state.withLock { $0 = (started.0, started.1) }
    }

    private func halt() async {
        let running = self.state.withLock { $0.running }
        for task in running { task.cancel() }
        for task in running { _ = try? await task.value }
    }

    fileprivate func stop() async {
        await self.halt()
        await self.webhook.close()
        try? FileManager.default.removeItem(at: self.folder)
    }

    /// Moves the clock, then waits until every push due by then has been decided and sent.
    func advance(to date: Date) async throws {
        self.clock.set(date)
        try await self.settle()
    }

    func advance(by interval: TimeInterval) async throws {
        try await self.advance(to: self.clock.now().addingTimeInterval(interval))
    }

    /// Waits until the prompt scheduler has looked at what is due now and the outbox has
    /// sent what that produced.
    func settle() async throws {
        let prompts = self.service.scheduler
        let now = self.clock.now()
        prompts.wake()
        try await eventually("the prompt scheduler has handled what is due by now") { prompts.hasHandled(upTo: now) }
        try await eventually("every push due by now was sent") {
            try await self.service.store.base.writer.read { db in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM push_outbox
                        WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
                        """,
                    arguments: [now]
                )
            } == 0
        }
    }

    /// Push kinds and prompt ids received so far, in order.
    func pushes() throws -> [(kind: String, promptID: String, key: String)] {
        try self.webhook.received.map { request in
            let json = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
            let data = json?["data"] as? [String: String]
            return (
                json?["kind"] as? String ?? "?", data?["prompt_id"] ?? "?", request.headers["idempotency-key"] ?? "?"
            )
        }
    }

    // MARK: Calls

    static func time(_ preset: Hearth_Tasks_V1_TimeOfDay) -> Hearth_Tasks_V1_CheckInTime {
        .with { $0.preset = preset }
    }

    static func time(_ custom: String) -> Hearth_Tasks_V1_CheckInTime {
        .with { $0.custom = custom }
    }

    func create(
        _ user: String = "ana",
        title: String = "Should I expand my dental practice?",
        times: [Hearth_Tasks_V1_CheckInTime] = [time(.morning), time(.evening)],
        days: UInt32 = 5,
        zone: String = "America/New_York",
        start: String = "",
        requestID: String = ""
    ) async throws -> Hearth_Tasks_V1_CreateTaskResponse {
        var request = Hearth_Tasks_V1_CreateTaskRequest()
        request.clientRequestID = requestID
        request.title = title
        request.checkInTimes = times
        request.durationDays = days
        request.timeZone = zone
        request.startDate = start
        return try await self.service.createTask(request, callContext(user))
    }

    func prompts(_ taskID: String, user: String = "ana") async throws -> [Hearth_Tasks_V1_Prompt] {
        try await self.service.listPrompts(.with { $0.taskID = taskID }, callContext(user)).prompts
    }

    func pending(_ user: String = "ana", limit: UInt32 = 0, task: String? = nil, upcoming: Bool = false) async throws
        -> Hearth_Tasks_V1_ListPendingPromptsResponse
    {
        var request = Hearth_Tasks_V1_ListPendingPromptsRequest()
        request.limit = limit
        request.includeUpcoming = upcoming
        if let task { request.taskID = task }
        return try await self.service.listPendingPrompts(request, callContext(user))
    }

    func respond(
        _ promptID: String,
        _ text: String = "Leaning towards yes",
        user: String = "ana",
        energy: UInt32? = 4,
        mood: UInt32? = 3,
        focus: UInt32? = nil,
        insights: [String] = []
    ) async throws -> Hearth_Tasks_V1_RespondToPromptResponse {
        var request = Hearth_Tasks_V1_RespondToPromptRequest()
        request.promptID = promptID
        request.responseText = text
        if let energy { request.energy = energy }
        if let mood { request.mood = mood }
        if let focus { request.focus = focus }
        request.insights = insights
        return try await self.service.respondToPrompt(request, callContext(user))
    }

    func task(_ id: String, user: String = "ana") async throws -> Hearth_Tasks_V1_GetTaskResponse {
        try await self.service.getTask(.with { $0.taskID = id }, callContext(user))
    }
}

extension Google_Protobuf_Timestamp {
    /// ISO 8601 in UTC, for readable expectations.
    var iso: String { self.date.formatted(.iso8601) }
}

/// An instant written as ISO 8601 (UTC).
func at(_ text: String) -> Date {
    try! Date(text, strategy: .iso8601)
}
