import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthRPC
import SwiftProtobuf

/// `hearth bench-checkins`: the checkins benchmark. Unlike `hearth bench`, every call is a
/// different request: each CreateCheckIn has its own `client_request_id` and a capture time
/// that keeps each session under its daily cap, ListCheckIns walks the pages of a session of
/// 1,000 check-ins, and each MarkViewed marks a check-in not seen before.
public struct BenchCheckins: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "bench-checkins",
        abstract:
            "Load-test the checkins process: CreateCheckIn (with or without a photo), ListCheckIns or MarkViewed.",
        discussion: """
              hearth bench-checkins --internal-secret "$(cat data/secrets/gateway-checkins.key)" create
              hearth bench-checkins --internal-secret "$SECRET" --photo photo.jpg --concurrency 4 --total 200 create
              hearth bench-checkins --internal-secret "$SECRET" list
              hearth bench-checkins --internal-secret "$SECRET" --total 5000 view
            """
    )

    enum Scenario: String, ExpressibleByArgument, CaseIterable {
        /// CreateCheckIn, each a new check-in (with `--photo`, each carrying that photo).
        case create
        /// ListCheckIns, pages of 50 over one session of 1,000 check-ins, newest first.
        case list
        /// MarkViewed, each call a check-in not viewed yet (all made first, not measured).
        case view
    }

    @Option(help: "HOST:PORT of the checkins process.")
    var target = Target(host: "127.0.0.1", port: ProcessName.checkins.defaultPort)

    @Option(
        help:
            "The gateway's link credential (DATA/secrets/gateway-checkins.key): the benchmark calls the service directly."
    )
    var internalSecret: String

    @Option(help: "With create: a JPEG or PNG file that every check-in carries.")
    var photo: String?

    @Option(help: "Calls in flight at once.")
    var concurrency = 16

    @Option(help: "Measured calls.")
    var total = 2000

    @Option(help: "Calls made first and not recorded.")
    var warmup = 200

    @OptionGroup var server: ServerProcessOptions

    @Option(help: "Also write the report as JSON to this file.")
    var json: String?

    @Argument(help: "create, list or view.")
    var scenario: Scenario

    public func validate() throws {
        guard self.concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        guard self.total >= 1 else { throw ValidationError("--total must be at least 1") }
        guard self.warmup >= 0 else { throw ValidationError("--warmup must not be negative") }
        if self.photo != nil, self.scenario != .create { throw ValidationError("--photo goes with create") }
    }

    public func run() async throws {
        let (client, executor) = BenchRunner.makeClient(.init(host: self.target.host, port: self.target.port))
        let run = String(UUID().uuidString.prefix(8))
        let owner = BenchUser(id: "bench-owner-\(run)", secret: self.internalSecret)
        let sitter = BenchUser(id: "bench-sitter-\(run)", secret: self.internalSecret)
        let setup = CheckinsBenchSetup(client: client, owner: owner, sitter: sitter)

        let method: String
        let request: @Sendable (Int) -> Data
        let caller: BenchUser
        switch self.scenario {
        case .create:
            let photo = try self.photo.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            let plan = CheckInPlan(now: Date())
            let sessions = try await setup.sessions(
                count: plan.sessionsNeeded(forCalls: self.warmup + self.total),
                startsAt: plan.startsAt,
                endsAt: plan.endsAt
            )
            method = Hearth_Checkins_V1_Checkins.Method.createCheckIn.name
            request = { index in plan.request(index, sessions: sessions, photo: photo, run: run) }
            caller = sitter
        case .list:
            let pages = try await setup.pageRequests(overCheckIns: 1000, pageSize: 50)
            method = Hearth_Checkins_V1_Checkins.Method.listCheckIns.name
            request = { index in pages[index % pages.count] }
            caller = owner
        case .view:
            let unseen = try await setup.checkIns(count: self.warmup + self.total).map(\.id)
            method = Hearth_Checkins_V1_Checkins.Method.markViewed.name
            request = { index in
                var request = Hearth_Checkins_V1_MarkViewedRequest()
                request.checkInID = unseen[index % unseen.count]
                return try! request.serializedData()
            }
            caller = owner
        }

        var runner = BenchRunner(
            client: client,
            executor: executor,
            method: method,
            request: request,
            options: caller.options,
            concurrency: self.concurrency,
            limit: .total(self.total),
            warmup: .total(self.warmup)
        )
        runner.server = self.server.process
        let name =
            switch self.scenario {
            case .create: self.photo == nil ? "CreateCheckIn" : "CreateCheckIn+photo"
            case .list: "ListCheckIns"
            case .view: "MarkViewed"
            }
        try await runner.runAndReport(
            method: name,
            target: self.target,
            concurrency: self.concurrency,
            json: self.json,
            client: client
        )
    }
}

/// A user the benchmark acts as, calling the service directly.
struct BenchUser: Sendable {
    let id: String
    let secret: String

    var options: CallOptions {
        CallOptions(timeout: .seconds(30), metadata: ["x-hearth-internal": self.secret, "x-hearth-user": self.id])
    }
}

/// Which session and capture time check-in number `index` gets: sessions that began 401
/// days ago, 10 check-ins on each of their first 400 UTC days (the daily cap), one a minute
/// from 01:00. The benchmarks and the fault writer (`hearth fault-writer --service checkins`)
/// place their check-ins with it.
struct CheckInPlan: Sendable {
    static let days = 400
    /// The service's cap: check-ins per session per local day.
    static let perDay = 10
    static let perSession = days * perDay

    let startsAt: Date
    let endsAt: Date

    init(now: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        self.startsAt = calendar.startOfDay(for: now).addingTimeInterval(-Double(Self.days + 1) * 86_400)
        self.endsAt = now.addingTimeInterval(86_400)
    }

    func sessionsNeeded(forCalls calls: Int) -> Int { (calls + Self.perSession - 1) / Self.perSession }

    /// The capture time of a session's check-in number `slot`: its day's 01:00 UTC, and a
    /// minute more for each before it that day.
    func capturedAt(_ slot: Int) -> Date {
        self.startsAt.addingTimeInterval(
            Double(slot / Self.perDay) * 86_400 + 3600 + Double(slot % Self.perDay) * 60
        )
    }

    /// The first slot of the day after `slot`'s.
    static func nextDay(after slot: Int) -> Int { (slot / Self.perDay + 1) * Self.perDay }

    func request(_ index: Int, sessions: [String], photo: Data?, run: String) -> Data {
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = sessions[index / Self.perSession]
        request.caption = "Update \(index): all good, walk done"
        request.clientRequestID = "bench-\(run)-\(index)"
        request.capturedAt = Google_Protobuf_Timestamp(date: self.capturedAt(index % Self.perSession))
        if let photo {
            request.photo = photo
            request.photoAltText = "The dog asleep on the sofa"
        }
        return try! request.serializedData()
    }
}

/// Nests, sessions and check-ins the scenarios start from.
private struct CheckinsBenchSetup {
    let client: RPCClient
    let owner: BenchUser
    let sitter: BenchUser

    func sessions(count: Int, startsAt: Date, endsAt: Date) async throws -> [String] {
        var nest = Hearth_Checkins_V1_CreateNestRequest()
        nest.name = "Benchmark home"
        let nestID = try await Hearth_Checkins_V1_Checkins.Client(self.client).createNest(
            nest,
            options: self.owner.options
        ).id
        var ids: [String] = []
        for _ in 0..<count {
            var session = Hearth_Checkins_V1_CreateSessionRequest()
            session.nestID = nestID
            session.sitterUserID = self.sitter.id
            session.startsAt = Google_Protobuf_Timestamp(date: startsAt)
            session.endsAt = Google_Protobuf_Timestamp(date: endsAt)
            session.timeZone = "UTC"
            ids.append(
                try await Hearth_Checkins_V1_Checkins.Client(self.client).createSession(
                    session,
                    options: self.owner.options
                ).id
            )
        }
        return ids
    }

    /// `count` new check-ins (8 calls in flight), in sessions of their own (one session for up
    /// to 4,000).
    func checkIns(count: Int) async throws -> [Hearth_Checkins_V1_CheckIn] {
        let plan = CheckInPlan(now: Date())
        let sessions = try await self.sessions(
            count: plan.sessionsNeeded(forCalls: count),
            startsAt: plan.startsAt,
            endsAt: plan.endsAt
        )
        let run = String(UUID().uuidString.prefix(8))
        return try await withThrowingTaskGroup(of: [Hearth_Checkins_V1_CheckIn].self) { group in
            let workers = 8
            for worker in 0..<workers {
                group.addTask {
                    var made: [Hearth_Checkins_V1_CheckIn] = []
                    for index in stride(from: worker, to: count, by: workers) {
                        made.append(
                            try await Hearth_Checkins_V1_Checkins.Client(self.client).createCheckIn(
                                Hearth_Checkins_V1_CreateCheckInRequest(
                                    serializedBytes: plan.request(index, sessions: sessions, photo: nil, run: run)
                                ),
                                options: self.sitter.options
                            )
                        )
                    }
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// The serialized ListCheckIns requests, newest first, for every page of a session with
    /// `count` check-ins.
    func pageRequests(overCheckIns count: Int, pageSize: Int) async throws -> [Data] {
        let session = try await self.checkIns(count: count)[0].sessionID
        var request = Hearth_Checkins_V1_ListCheckInsRequest()
        request.sessionID = session
        request.order = .newestFirst
        request.pageSize = UInt32(pageSize)
        var pages: [Data] = []
        while true {
            pages.append(try request.serializedData())
            let page = try await Hearth_Checkins_V1_Checkins.Client(self.client).listCheckIns(
                request,
                options: self.owner.options
            )
            guard !page.nextPageToken.isEmpty else { break }
            request.pageToken = page.nextPageToken
        }
        return pages
    }
}
