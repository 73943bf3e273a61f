import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthRPC
import SwiftProtobuf

/// `hearth bench-tasks`: the tasks benchmark, each call a different request.
/// - `create`: CreateTask with 4 times x 90 days (360 prompts each), starting tomorrow.
/// - `pending`: ListPendingPrompts for a user with due prompts (made first: tasks whose one
///   prompt falls due at the next whole minute, which the command waits for).
/// - `respond`: RespondToPrompt, each call answering a different due prompt (made the same way).
/// - `report`: ReportLocationEvent over stored activities (made first, `--activities` of them
///   spread over `--users` users, each with a LEAVE rule), each call a new event.
public struct BenchTasks: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "bench-tasks",
        abstract: "Load-test the tasks process: CreateTask, ListPendingPrompts or RespondToPrompt.",
        discussion: """
              hearth bench-tasks --internal-secret "$SECRET" --user ana --concurrency 1 --total 300 create
              hearth bench-tasks --internal-secret "$SECRET" --user ana pending
              hearth bench-tasks --internal-secret "$SECRET" respond
              hearth bench-tasks --internal-secret "$SECRET" --activities 10000 --users 100 report
            """
    )

    enum Scenario: String, ExpressibleByArgument, CaseIterable {
        case create, pending, respond, report
    }

    @Option(help: "HOST:PORT of the tasks process.")
    var target = Target(host: "127.0.0.1", port: ProcessName.tasks.defaultPort)

    @Option(
        help:
            "The gateway's link credential (DATA/secrets/gateway-tasks.key): the benchmark calls the service directly."
    )
    var internalSecret: String

    @Option(help: "The user who calls. Default: a new one each run.")
    var user: String?

    @Option(help: "With pending: how many prompts the user has due.")
    var due = 20

    @Option(help: "With report: activities to store first, each with a location rule.")
    var activities = 10_000

    @Option(help: "With report: the users the activities belong to (round-robin).")
    var users = 100

    @Option(help: "Calls in flight at once.")
    var concurrency = 16

    @Option(help: "Measured calls.")
    var total = 2000

    @Option(help: "Calls made first and not recorded.")
    var warmup = 100

    @OptionGroup var server: ServerProcessOptions

    @Option(help: "Also write the report as JSON to this file.")
    var json: String?

    @Argument(help: "create, pending or respond.")
    var scenario: Scenario

    public func validate() throws {
        guard self.concurrency >= 1, self.total >= 1, self.due >= 1, self.activities >= 1, self.users >= 1 else {
            throw ValidationError("--concurrency, --total, --due, --activities and --users must be at least 1")
        }
        guard self.warmup >= 0 else { throw ValidationError("--warmup must not be negative") }
    }

    public func run() async throws {
        let (client, executor) = BenchRunner.makeClient(.init(host: self.target.host, port: self.target.port))
        let user = BenchUser(id: self.user ?? "bench-\(UUID().uuidString.prefix(8))", secret: self.internalSecret)
        let method: String
        let request: @Sendable (Int) -> Data
        var caller: (@Sendable (Int) -> String)?
        switch self.scenario {
        case .create:
            method = Hearth_Tasks_V1_Tasks.Method.createTask.name
            let payload = try Self.longTask().serializedData()
            request = { _ in payload }
            let base = user.id
            caller = { index in Self.owner(of: index, base: base) }
        case .pending:
            _ = try await self.promptsDueSoon(self.due, user: user, client: client)
            method = Hearth_Tasks_V1_Tasks.Method.listPendingPrompts.name
            let payload = try Hearth_Tasks_V1_ListPendingPromptsRequest().serializedData()
            request = { _ in payload }
        case .report:
            let (owners, ids) = try await self.storeActivities(client: client)
            let run = String(UUID().uuidString.prefix(8))
            method = Hearth_Tasks_V1_Activities.Method.reportLocationEvent.name
            caller = { index in owners[index % owners.count] }
            request = { index in
                var event = Hearth_Tasks_V1_ReportLocationEventRequest()
                event.activityID = ids[index % ids.count]
                event.trigger = .leave
                event.occurredAt = Google_Protobuf_Timestamp(date: Date())
                event.appState = index % 2 == 0 ? .foreground : .background
                event.clientEventID = "\(run)-\(index)"
                return try! event.serializedData()
            }
        case .respond:
            let prompts = try await self.promptsDueSoon(self.warmup + self.total, user: user, client: client)
            method = Hearth_Tasks_V1_Tasks.Method.respondToPrompt.name
            let base = user.id
            caller = { index in Self.owner(of: index % prompts.count, base: base) }
            request = { index in
                var answer = Hearth_Tasks_V1_RespondToPromptRequest()
                answer.promptID = prompts[index % prompts.count]
                answer.responseText = "Leaning towards yes; the numbers work if the second chair is busy."
                answer.energy = 4
                answer.mood = 3
                answer.insights = ["ask the bank about terms"]
                return try! answer.serializedData()
            }
        }
        var runner = BenchRunner(
            client: client,
            executor: executor,
            method: method,
            request: request,
            options: user.options,
            user: caller,
            concurrency: self.concurrency,
            limit: .total(self.total),
            warmup: .total(self.warmup)
        )
        runner.server = self.server.process
        try await runner.runAndReport(
            method: String(method.split(separator: "/").last ?? ""),
            target: self.target,
            concurrency: self.concurrency,
            json: self.json,
            client: client
        )
    }

    /// The figure: 4 times a day for 90 days, from tomorrow (none skipped).
    static func longTask() -> Hearth_Tasks_V1_CreateTaskRequest {
        var request = Hearth_Tasks_V1_CreateTaskRequest()
        request.title = "Should I expand my dental practice?"
        request.checkInTimes = [.morning, .afternoon, .evening, .lateNight].map { part in .with { $0.preset = part } }
        request.durationDays = 90
        request.timeZone = "UTC"
        request.startDate = Self.utcDate(Date().addingTimeInterval(86_400))
        return request
    }

    /// Who makes the task numbered `index`: a user has at most 50 tasks under way, so `base`
    /// makes the first 50, `base-1` the next 50, and so on.
    static func owner(of index: Int, base: String) -> String {
        index < 50 ? base : "\(base)-\(index / 50)"
    }

    /// Makes `count` tasks, each with one prompt at the next whole UTC minute (at least 2 s
    /// away), task `i` by ``owner(of:base:)``, 32 at a time; waits until that minute has come;
    /// answers the prompts' ids, in task order.
    private func promptsDueSoon(_ count: Int, user: BenchUser, client: RPCClient) async throws -> [String] {
        let minute = (Date().timeIntervalSince1970 / 60 + 1).rounded(.down) * 60
        let dueAt = Date(timeIntervalSince1970: minute < Date().timeIntervalSince1970 + 2 ? minute + 60 : minute)
        var request = Hearth_Tasks_V1_CreateTaskRequest()
        request.title = "Benchmark prompt"
        request.checkInTimes = [.with { $0.custom = Self.utcTime(dueAt) }]
        request.durationDays = 1
        request.timeZone = "UTC"
        request.startDate = Self.utcDate(dueAt)
        let create = request
        let made = try await withThrowingTaskGroup(of: [(Int, String)].self) { group in
            let workers = 32
            for worker in 0..<workers {
                group.addTask {
                    var made: [(Int, String)] = []
                    for index in stride(from: worker, to: count, by: workers) {
                        let options = BenchUser(id: Self.owner(of: index, base: user.id), secret: user.secret).options
                        let created = try await Hearth_Tasks_V1_Tasks.Client(client).createTask(
                            create,
                            options: options
                        )
                        made.append((index, created.nextPrompt.id))
                    }
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let ids = made.sorted { $0.0 < $1.0 }.map(\.1)
        let wait = dueAt.timeIntervalSinceNow
        if wait > 0 { try await Task.sleep(for: .seconds(wait + 0.1)) }
        return ids
    }

    /// `--activities` activities over `--users` users, each with a LEAVE rule at a place of
    /// its own, 32 calls at a time; answers each activity's owner and id, in the same order.
    private func storeActivities(client: RPCClient) async throws -> (owners: [String], ids: [String]) {
        let prefix = "bench-\(UUID().uuidString.prefix(8))"
        let count = self.activities
        let users = self.users
        let secret = self.internalSecret
        // Offers on (they are off until a user turns them on), every other preference its default.
        for user in 0..<min(users, count) {
            var preferences = Hearth_Tasks_V1_SetOfferPreferencesRequest()
            preferences.timeZone = "UTC"
            _ = try await Hearth_Tasks_V1_Activities.Client(client).setOfferPreferences(
                preferences,
                options: BenchUser(id: "\(prefix)-\(user)", secret: secret).options
            )
        }
        let made = try await withThrowingTaskGroup(of: [(Int, String, String)].self) { group in
            let workers = 32
            for worker in 0..<workers {
                group.addTask {
                    var made: [(Int, String, String)] = []
                    for index in stride(from: worker, to: count, by: workers) {
                        let owner = "\(prefix)-\(index % users)"
                        let options = BenchUser(id: owner, secret: secret).options
                        var create = Hearth_Tasks_V1_CreateActivityRequest()
                        create.title = "Errand \(index)"
                        create.repeat = index % 2 == 0 ? .none : .daily
                        create.priority = UInt32(index % 3 + 1)
                        let activity = try await Hearth_Tasks_V1_Activities.Client(client).createActivity(
                            create,
                            options: options
                        )
                        var rule = Hearth_Tasks_V1_SetLocationRuleRequest()
                        rule.activityID = activity.id
                        rule.place = .with {
                            $0.label = "Place \(index)"
                            $0.latitude = 40 + Double(index % 1000) / 1000
                            $0.longitude = -74 + Double(index / 1000) / 100
                            $0.radiusM = 150
                        }
                        rule.trigger = .leave
                        _ = try await Hearth_Tasks_V1_Activities.Client(client).setLocationRule(rule, options: options)
                        made.append((index, owner, activity.id))
                    }
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.0 < $1.0 }
        }
        return (made.map(\.1), made.map(\.2))
    }

    private static func utcDate(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day())
    }

    private static func utcTime(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour!, parts.minute!)
    }
}
