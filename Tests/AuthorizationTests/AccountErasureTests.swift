import CheckinsService
import Foundation
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import RoutinesService
import SafetyService
import SwiftProtobuf
import TasksService
import Testing

/// One call erases a user everywhere: every service on a real SQLite file behind real TCP, the
/// owner's data seeded as AuthorizationMatrixTests seeds it (each piece carrying a marker).
@Suite("Account erasure")
struct AccountErasureTests {
    static let secret = AuthorizationMatrixTests.secret
    static let marker = AuthorizationMatrixTests.marker

    /// The services of a deployment, each on its own file in `folder`.
    struct Services {
        let checkins: CheckinsService
        let tasks: TasksService
        let safety: SafetyService
        let clock: ManualClock
        let folder: URL
        let logger: Logger

        init(folder: URL, now: Date) throws {
            var logger = Logger(label: "erasure")
            logger.logLevel = .critical
            let file = { (name: String) in StoreLocation.file(folder.appendingPathComponent("\(name).sqlite").path) }
            self.clock = ManualClock(now)
            self.checkins = try CheckinsService(location: file("checkins"))
            self.tasks = try TasksService(location: file("tasks"), clock: self.clock, logger: logger)
            self.safety = try AuthorizationMatrixTests.safety(location: file("safety"), logger: logger)
            self.folder = folder
            self.logger = logger
        }

        /// The account service, asking `checkins`, `routines` and `safety` for their parts.
        func account(checkins: RPCClient, routines: RPCClient, safety: RPCClient) -> AccountService {
            AccountService(
                sharingStoreOf: self.tasks,
                peers: AccountPeers(
                    checkins: checkins,
                    routines: routines,
                    safety: safety,
                    credentials: .init(
                        checkins: AccountErasureTests.secret,
                        routines: AccountErasureTests.secret,
                        safety: AccountErasureTests.secret
                    )
                )
            )
        }

        func routines(roles client: RPCClient) throws -> RoutinesService {
            try RoutinesService(
                location: .file(self.folder.appendingPathComponent("routines.sqlite").path),
                // A generous timeout, as the matrix's: the whole suite runs meanwhile on two cores.
                roles: CheckinsNestRoles(
                    client: client,
                    internalCredential: AccountErasureTests.secret,
                    timeout: .seconds(15)
                )
            )
        }

        /// The stores' files in which `text` appears, in any of their bytes (database, WAL).
        func files(holding text: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: self.folder.path).sorted().filter { name in
                guard name.contains(".sqlite") else { return false }
                let bytes = try Data(contentsOf: self.folder.appendingPathComponent(name))
                return bytes.range(of: Data(text.utf8)) != nil
            }
        }
    }

    static func options(_ user: String) -> CallOptions {
        CallOptions(
            timeout: .seconds(10),
            metadata: [TrustedMetadata.credential: Self.secret, TrustedMetadata.user: user]
        )
    }

    /// Polls `olivia`'s erasure until every part is done (bounded), moving the clock past any
    /// retry's pause.
    static func erased(_ account: Hearth_Account_V1_Account.Client, clock: ManualClock) async throws
        -> Hearth_Account_V1_Erasure
    {
        var last = Hearth_Account_V1_Erasure()
        try await eventually("olivia's erasure is done") {
            clock.advance(by: 1)
            last = try await account.getErasure(.init(), options: Self.options("olivia"))
            return last.done
        }
        return last
    }

    /// The account service on a server of its own, calling the others through `checkins`,
    /// `routines` and `safety` as the tasks process calls its peers, its erasure worker running,
    /// for the duration of `body`; the worker is stopped and awaited after.
    static func withAccount<T>(
        _ services: Services,
        checkins: RPCClient,
        routines: RPCClient,
        safety: RPCClient,
        _ body: (Hearth_Account_V1_Account.Client) async throws -> T
    ) async throws -> T {
        let account = services.account(checkins: checkins, routines: routines, safety: safety)
        let eraser = account.eraser(logger: services.logger)
        let running = Task { try await eraser.run() }
        let result: Result<T, any Error>
        do {
            result = .success(
                try await withServer(
                    configuration: ServerConfiguration(callers: .anyMethod(Self.secret)),
                    services: [account]
                ) { _, port in
                    try await withClient(port: port) { client in try await body(.init(client)) }
                }
            )
        } catch {
            result = .failure(error)
        }
        running.cancel()
        _ = await running.result
        return try result.get()
    }

    /// Every service but the account on one server (routines asking checkins on another), its
    /// client given to `body`; safety left out when `withSafety` is false; every call that server
    /// serves goes through `interceptors`.
    static func withServices<T>(
        _ services: Services,
        withSafety: Bool = true,
        interceptors: [any ServerInterceptor] = [],
        _ body: (RPCClient) async throws -> T
    ) async throws -> T {
        let configuration = ServerConfiguration(callers: .anyMethod(Self.secret))
        return try await withServer(configuration: configuration, services: [services.checkins]) { _, checkinsPort in
            try await withClient(port: checkinsPort) { rolesClient in
                let routines = try services.routines(roles: rolesClient)
                let all: [any RPCService] =
                    [
                        services.checkins, services.tasks, ActivitiesService(sharingStoreOf: services.tasks), routines,
                    ] + (withSafety ? [services.safety] : [])
                return try await withServer(
                    configuration: configuration,
                    services: all,
                    interceptors: interceptors
                ) { _, port in
                    try await withClient(port: port, body)
                }
            }
        }
    }

    @Test("one call erases the owner's data in every service; the files keep none of it; others' data stays")
    func eraseEverywhere() async throws {
        try await withScratchFolder("hearth-erasure") { folder in
            let services = try Services(folder: folder, now: Date())
            try await Self.withServices(services) { client in
                _ = try await AuthorizationMatrixTests.seed(client, now: services.clock.now())
                // Someone else's nest, untouched by olivia's erasure.
                let checkins = Hearth_Checkins_V1_Checkins.Client(client)
                let other = try await checkins.createNest(
                    .with { $0.name = "KAI-OWN home" },
                    options: Self.options("kai")
                )
                // The control: it is there (in checkins, tasks and routines; safety seals it).
                #expect(try services.files(holding: Self.marker).count >= 3)

                try await Self.withAccount(services, checkins: client, routines: client, safety: client) { account in
                    let accepted = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                    #expect(accepted.services.map(\.service) == ["checkins", "tasks", "safety", "routines"])
                    #expect(accepted.services.first { $0.service == "tasks" }?.state == .done)
                    let erasure = try await Self.erased(account, clock: services.clock)
                    #expect(erasure.services.allSatisfy { $0.state == .done && $0.hasDoneAt })

                    #expect(try await checkins.listMyNests(.init(), options: Self.options("olivia")).nests.isEmpty)
                    #expect(try await checkins.listMyNests(.init(), options: Self.options("sam")).nests.isEmpty)
                    #expect(
                        try await checkins.listMyNests(.init(), options: Self.options("kai")).nests.map(\.id) == [
                            other.id
                        ]
                    )
                    #expect(
                        try await Hearth_Tasks_V1_Tasks.Client(client).listTasks(
                            .init(),
                            options: Self.options("olivia")
                        )
                        .tasks.isEmpty
                    )
                    await #expect {
                        _ = try await Hearth_Safety_V1_Safety.Client(client).getProfile(
                            .init(),
                            options: Self.options("olivia")
                        )
                    } throws: { ($0 as? RPCError)?.code == .notFound }
                    #expect(try services.files(holding: Self.marker) == [], "no byte of it is left")
                    #expect(try services.files(holding: "KAI-OWN home") != [])

                    // Asked again once done: a new erasure (of what was written since).
                    let again = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                    #expect(again.done == false && again.requestedAt != erasure.requestedAt)
                }
            }
        }
    }

    @Test("a service down when the erasure is asked for is asked again until it answers")
    func serviceDown() async throws {
        try await withScratchFolder("hearth-erasure") { folder in
            let services = try Services(folder: folder, now: Date())
            let configuration = ServerConfiguration(callers: .anyMethod(Self.secret))
            // Where safety will listen: a port taken, then freed while safety is "down".
            let safetyPort = try await withServer(configuration: configuration, services: []) { _, port in port }
            try await Self.withServices(services, withSafety: false) { client in
                try await withClient(port: safetyPort) { safetyClient in
                    try await Self.withAccount(services, checkins: client, routines: client, safety: safetyClient) {
                        account in
                        _ = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                        try await eventually("the others' parts are done, safety's failed a few times") {
                            services.clock.advance(by: 1)
                            let parts = try await account.getErasure(.init(), options: Self.options("olivia")).services
                            let safety = parts.first { $0.service == "safety" }
                            return (safety?.attempts ?? 0) >= 2 && safety?.state == .pending
                                && parts.filter { $0.state == .done }.count == 3
                        }
                        let waiting = try await account.getErasure(.init(), options: Self.options("olivia"))
                        #expect(waiting.done == false)
                        // The code, never the peer's words: a connection failure would name a host and port.
                        let reason = try #require(waiting.services.first { $0.service == "safety" }?.lastError)
                        #expect(reason == "UNAVAILABLE: safety did not confirm its part; it is asked again")
                        #expect(!reason.contains("127.0.0.1"))
                        // Asked again meanwhile: the same erasure, unchanged.
                        let same = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                        #expect(same.requestedAt == waiting.requestedAt)
                        // An export meanwhile cannot be whole: refused, not half made.
                        await #expect {
                            _ = try await account.exportAccount(.init(), options: Self.options("olivia"))
                        } throws: { ($0 as? RPCError)?.code == .unavailable }

                        var safetyConfiguration = configuration
                        safetyConfiguration.port = safetyPort
                        try await withServer(configuration: safetyConfiguration, services: [services.safety]) { _, _ in
                            let erasure = try await Self.erased(account, clock: services.clock)
                            #expect(erasure.services.allSatisfy { $0.state == .done })
                        }
                    }
                }
            }
        }
    }

    @Test("one call exports the owner's data from every service, as each service's messages, nothing of others'")
    func exportEverything() async throws {
        try await withScratchFolder("hearth-export") { folder in
            let services = try Services(folder: folder, now: Date())
            try await Self.withServices(services) { client in
                let ids = try await AuthorizationMatrixTests.seed(client, now: services.clock.now())
                _ = try await Hearth_Checkins_V1_Checkins.Client(client).createNest(
                    .with { $0.name = "KAI-OWN home" },
                    options: Self.options("kai")
                )
                try await Self.withAccount(services, checkins: client, routines: client, safety: client) { account in
                    let export = try await account.exportAccount(.init(), options: Self.options("olivia"))
                    #expect(export.checkins.nests.map(\.id) == [ids.nest])
                    #expect(export.checkins.checkIns.map(\.id) == [ids.checkIn])
                    #expect(export.checkins.templates.contains { $0.id == ids.template })
                    #expect(export.tasks.tasks.map(\.id) == [ids.task])
                    #expect(export.tasks.activities.map(\.id) == [ids.activity])
                    #expect(export.tasks.offers.map(\.offerID) == [ids.offer])
                    #expect(export.safety.profile.name == "\(Self.marker) Olivia")
                    #expect(export.safety.contacts.map(\.id) == [ids.contact])
                    #expect(export.routines.routines.map(\.id) == [ids.routine])
                    // As JSON: protobuf's mapping, every service's part in it, kai's nest nowhere.
                    let json = try export.jsonString()
                    #expect(json.contains(Self.marker) && json.contains("\"routines\"") && json.contains("\"safety\""))
                    #expect(!json.contains("KAI-OWN"))
                }
            }
        }
    }
}
