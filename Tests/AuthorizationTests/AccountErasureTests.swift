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
        let account: AccountService
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
            self.account = AccountService(sharingStoreOf: self.tasks)
            self.safety = try AuthorizationMatrixTests.safety(location: file("safety"), logger: logger)
            self.folder = folder
            self.logger = logger
        }

        /// The erasures' worker, asking `checkins`, `routines` and `safety` for their parts.
        func eraser(checkins: RPCClient, routines: RPCClient, safety: RPCClient) -> DueTimeScheduler {
            self.account.eraser(
                checkins: checkins,
                routines: routines,
                safety: safety,
                credential: AccountErasureTests.secret,
                logger: self.logger
            )
        }

        func routines(roles client: RPCClient) throws -> RoutinesService {
            try RoutinesService(
                location: .file(self.folder.appendingPathComponent("routines.sqlite").path),
                roles: CheckinsNestRoles(client: client, internalCredential: AccountErasureTests.secret)
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

    @Test("one call erases the owner's data in every service; the files keep none of it; others' data stays")
    func eraseEverywhere() async throws {
        try await withScratchFolder("hearth-erasure") { folder in
            let services = try Services(folder: folder, now: Date())
            let configuration = ServerConfiguration(internalCredential: Self.secret)
            try await withServer(configuration: configuration, services: [services.checkins]) { _, checkinsPort in
                try await withClient(port: checkinsPort) { rolesClient in
                    let routines = try services.routines(roles: rolesClient)
                    let all: [any RPCService] = [
                        services.checkins, services.tasks, ActivitiesService(sharingStoreOf: services.tasks),
                        services.safety, routines, services.account,
                    ]
                    try await withServer(configuration: configuration, services: all) { _, port in
                        try await withClient(port: port) { client in
                            _ = try await AuthorizationMatrixTests.seed(client, now: services.clock.now())
                            // Someone else's nest, untouched by olivia's erasure.
                            let other = try await Hearth_Checkins_V1_Checkins.Client(client).createNest(
                                .with { $0.name = "KAI-OWN home" },
                                options: Self.options("kai")
                            )
                            // The control: it is there (in checkins, tasks and routines; safety seals it).
                            #expect(try services.files(holding: Self.marker).count >= 3)

                            let eraser = services.eraser(checkins: client, routines: client, safety: client)
                            let running = Task { try await eraser.run() }
                            let account = Hearth_Account_V1_Account.Client(client)
                            let accepted = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                            #expect(accepted.services.map(\.service) == ["checkins", "tasks", "safety", "routines"])
                            #expect(accepted.services.first { $0.service == "tasks" }?.state == .done)
                            let erasure = try await Self.erased(account, clock: services.clock)
                            running.cancel()
                            _ = await running.result
                            #expect(erasure.services.allSatisfy { $0.state == .done && $0.hasDoneAt })

                            let checkins = Hearth_Checkins_V1_Checkins.Client(client)
                            #expect(
                                try await checkins.listMyNests(.init(), options: Self.options("olivia")).nests.isEmpty
                            )
                            #expect(try await checkins.listMyNests(.init(), options: Self.options("sam")).nests.isEmpty)
                            #expect(
                                try await checkins.listMyNests(.init(), options: Self.options("kai")).nests.map(\.id)
                                    == [other.id]
                            )
                            #expect(
                                try await Hearth_Tasks_V1_Tasks.Client(client).listTasks(
                                    .init(),
                                    options: Self.options("olivia")
                                ).tasks.isEmpty
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
        }
    }

    @Test("a service down when the erasure is asked for is asked again until it answers")
    func serviceDown() async throws {
        try await withScratchFolder("hearth-erasure") { folder in
            let services = try Services(folder: folder, now: Date())
            let configuration = ServerConfiguration(internalCredential: Self.secret)
            // Where safety will listen: a port taken, then freed while safety is "down".
            let safetyPort = try await withServer(configuration: configuration, services: []) { _, port in port }
            try await withServer(configuration: configuration, services: [services.checkins]) { _, checkinsPort in
                try await withClient(port: checkinsPort) { rolesClient in
                    let routines = try services.routines(roles: rolesClient)
                    let others: [any RPCService] = [services.checkins, services.tasks, routines, services.account]
                    try await withServer(configuration: configuration, services: others) { _, port in
                        try await withClient(port: port) { client in
                            try await withClient(port: safetyPort) { safetyClient in
                                _ = try await Hearth_Tasks_V1_Tasks.Client(client).listTasks(
                                    .init(),
                                    options: Self.options("olivia")
                                )
                                let eraser = services.eraser(checkins: client, routines: client, safety: safetyClient)
                                let running = Task { try await eraser.run() }
                                let account = Hearth_Account_V1_Account.Client(client)
                                _ = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                                try await eventually("the others' parts are done, safety's failed a few times") {
                                    services.clock.advance(by: 1)
                                    let parts = try await account.getErasure(.init(), options: Self.options("olivia"))
                                        .services
                                    let safety = parts.first { $0.service == "safety" }
                                    return (safety?.attempts ?? 0) >= 2 && safety?.state == .pending
                                        && parts.filter { $0.state == .done }.count == 3
                                }
                                let waiting = try await account.getErasure(.init(), options: Self.options("olivia"))
                                #expect(waiting.done == false)
                                #expect(
                                    waiting.services.filter { $0.state == .done }.map(\.service).sorted()
                                        == ["checkins", "routines", "tasks"]
                                )
                                #expect(waiting.services.first { $0.service == "safety" }?.lastError.isEmpty == false)
                                // Asked again meanwhile: the same erasure, unchanged.
                                let same = try await account.eraseAccount(.init(), options: Self.options("olivia"))
                                #expect(same.requestedAt == waiting.requestedAt)

                                var safetyConfiguration = configuration
                                safetyConfiguration.port = safetyPort
                                try await withServer(configuration: safetyConfiguration, services: [services.safety]) {
                                    _,
                                    _ in
                                    let erasure = try await Self.erased(account, clock: services.clock)
                                    #expect(erasure.services.allSatisfy { $0.state == .done })
                                }
                                running.cancel()
                                _ = await running.result
                            }
                        }
                    }
                }
            }
        }
    }
}
