import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthGateway
import HearthRPC
import HearthScheduler
import HearthTestSupport
import Logging
import NIOCore
import ServiceLifecycle
import SwiftProtobuf
import Testing

@testable import HearthCommands

/// Processes as `hearth serve` builds them (makeProcess), each holding only the credentials of
/// its own links, on free loopback ports, each with its store in a folder of its own.
@Suite("One credential per link between processes, over real processes", .timeLimit(.minutes(2)))
struct LinkCredentialTests {
    static let createNest = Hearth_Checkins_V1_Checkins.Method.createNest.name
    static let getProfile = Hearth_Safety_V1_Safety.Method.getProfile.name

    static var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// Runs `body` with a scratch folder and a task group for the processes it starts; then
    /// cancels them all and waits until every one has stopped, before the folder goes. (When
    /// `body` throws, the group cancels and awaits what it still runs by itself.)
    static func withProcesses(
        _ body: (inout ThrowingTaskGroup<Void, any Error>, URL) async throws -> Void
    ) async throws {
        try await withScratchFolder("hearth-link-credentials") { root in
            try await withThrowingTaskGroup(of: Void.self) { group in
                try await body(&group, root)
                group.cancelAll()
                // Whatever each answers to cancellation: what matters is that it stopped.
                while await group.nextResult() != nil {}
            }
        }
    }

    /// Starts `name` in `group`: its server on a free loopback port and its companions (the
    /// schedulers that deliver relays and erasures, the gateway's prober) beside it, its store
    /// under `root`/`name`. Answers the port.
    static func start(
        _ name: ProcessName,
        under root: URL,
        logger: Logger? = nil,
        in group: inout ThrowingTaskGroup<Void, any Error>,
        _ configure: (inout ProcessSettings) throws -> Void = { _ in }
    ) async throws -> Int {
        let data = root.appendingPathComponent(name.rawValue)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        var settings = try ProcessWiringTests.settings(data: data, logger: logger ?? Self.quiet)
        // What `hearth serve` loads: the credentials of the process's own links only, and the
        // token secret for the gateway only. A process that needed another's would fail here.
        settings.secrets = Secrets(
            links: Secrets.forTests.links.filter { ProcessLink.touching(name).contains($0.key) },
            jwtSecret: name == .gateway ? Secrets.forTests.jwtSecret : nil
        )
        try configure(&settings)
        let process = try await makeProcess(name, settings: settings)
        for companion in process.companions {
            group.addTask { try await companion.run() }
        }
        group.addTask { try await process.server.run() }
        return try await process.server.localAddress.port!
    }

    /// Where a process finds the services among `ports` (started already) that it calls.
    static func peers(_ ports: [ProcessName: Int]) throws -> PeerOptions {
        var peers = try PeerOptions.parse([])
        if let port = ports[.checkins] { peers.checkins = Target(host: "127.0.0.1", port: port) }
        if let port = ports[.routines] { peers.routines = Target(host: "127.0.0.1", port: port) }
        if let port = ports[.safety] { peers.safety = Target(host: "127.0.0.1", port: port) }
        return peers
    }

    /// The gateway's routes to `ports`, as `hearth up` makes them: each service's packages
    /// (`hearth.account.` to tasks too).
    static func routes(to ports: [ProcessName: Int]) throws -> GatewaySettings {
        let backends = ports.flatMap { process in
            process.key.packages.flatMap { ["--backend", "\($0)=127.0.0.1:\(process.value)"] }
        }
        // `eventually` polls every few milliseconds: over the 50 calls a second one user may
        // make by default, and a refusal would end the wait.
        return try GatewaySettings.parse(backends + ["--rate-limit", "10000", "--burst", "10000"])
    }

    /// Call options acting as `user` through the gateway: a client token signed with the
    /// deployment's secret, valid an hour.
    static func acting(as user: String) async throws -> CallOptions {
        let now = Date()
        let signer = try await TokenSigner(hmacSecret: try #require(Secrets.forTests.jwtSecret))
        let token = try await signer.token(
            for: HearthClaims(subject: user, issuedAt: now, expiresAt: now.addingTimeInterval(3600))
        )
        return CallOptions(timeout: .seconds(30), metadata: ["authorization": "Bearer \(token)"])
    }

    /// Call options presenting `credential` (none when nil), acting for `user`: a handler
    /// without a user would answer UNAUTHENTICATED itself, hiding what the server decided.
    static func presenting(_ credential: String?, for user: String = "ada") -> CallOptions {
        var metadata = [TrustedMetadata.user: user]
        metadata[TrustedMetadata.credential] = credential
        return CallOptions(timeout: .seconds(30), metadata: metadata)
    }

    /// Call options of a call `caller` makes to `callee` with their link's credential.
    static func link(_ caller: ProcessName, to callee: ProcessName, for user: String = "ada") throws -> CallOptions {
        Self.presenting(try Secrets.forTests.credential(caller, to: callee), for: user)
    }

    /// A safety profile whose owner's activity elsewhere counts as a check-in: what makes safety
    /// record what the relays forward.
    static func profile(_ name: String) -> Hearth_Safety_V1_UpsertProfileRequest {
        .with {
            $0.name = name
            $0.email = "\(name)@example.org"
            $0.thresholdHours = 24
            $0.preferredLanguage = "en"
            $0.timeZone = "Asia/Taipei"
            $0.countActivityAsCheckIn = true
        }
    }

    /// ada asking about herself in a nest that does not exist: OK (NONE) once past the server.
    static var ownRole: Hearth_Checkins_V1_GetNestRoleRequest {
        .with {
            $0.nestID = "no-such-nest"
            $0.userID = "ada"
        }
    }

    static var activity: Hearth_Safety_V1_ForwardActivityRequest {
        .with {
            $0.source = "checkins"
            $0.eventID = "link-test-\(UUID().uuidString)"
            $0.occurredAt = Google_Protobuf_Timestamp(date: Date())
        }
    }

    @Test("a whole deployment works with one credential per link")
    func wholeDeployment() async throws {
        try await Self.withProcesses { group, root in
            // Each after the services it calls, as docker-compose starts them.
            var ports: [ProcessName: Int] = [:]
            for name in [ProcessName.safety, .checkins, .routines, .tasks, .echo] {
                let peers = try Self.peers(ports)
                ports[name] = try await Self.start(name, under: root, in: &group) { $0.peers = peers }
            }
            let routes = try Self.routes(to: ports)
            let gateway = try await Self.start(.gateway, under: root, in: &group) { $0.gateway = routes }
            let (olivia, sam, tom) = try await (
                Self.acting(as: "olivia"), Self.acting(as: "sam"), Self.acting(as: "tom")
            )

            try await withClient(port: gateway) { rpc in
                let checkins = Hearth_Checkins_V1_Checkins.Client(rpc)
                let routines = Hearth_Routines_V1_Routines.Client(rpc)
                let safety = Hearth_Safety_V1_Safety.Client(rpc)
                let tasks = Hearth_Tasks_V1_Tasks.Client(rpc)
                let account = Hearth_Account_V1_Account.Client(rpc)
                let echoed = try await Hearth_Echo_V1_Echo.Client(rpc).echo(.with { $0.text = "hi" }, options: olivia)
                #expect(echoed.text == "hi")
                // First: safety drops a forwarded activity from before the profile's first period.
                for (user, name) in [(olivia, "olivia"), (sam, "sam"), (tom, "tom")] {
                    _ = try await safety.upsertProfile(Self.profile(name), options: user)
                }

                // routines -> checkins: a routine is made only once checkins says olivia owns the
                // nest, and sam sees it once it says he sits there now.
                let nest = try await checkins.createNest(.with { $0.name = "Home" }, options: olivia)
                let routine = try await routines.createRoutine(
                    .with {
                        $0.nestID = nest.id
                        $0.title = "Bedtime"
                        $0.actions = ["Teeth"]
                    },
                    options: olivia
                )
                let now = Date()
                let session = try await checkins.createSession(
                    .with {
                        $0.nestID = nest.id
                        $0.sitterUserID = "sam"
                        $0.startsAt = Google_Protobuf_Timestamp(date: now - 60)
                        $0.endsAt = Google_Protobuf_Timestamp(date: now + 3600)
                        $0.timeZone = "Asia/Taipei"
                    },
                    options: olivia
                )
                #expect(
                    try await routines.getRoutine(.with { $0.routineID = routine.id }, options: sam).title == "Bedtime"
                )

                // The relays to safety, one user each (activities 5 s apart or less merge into one):
                // sam's check-in (checkins -> safety), olivia's tick (routines -> safety), tom's
                // answer to his task (tasks -> safety).
                _ = try await checkins.createCheckIn(
                    .with {
                        $0.sessionID = session.id
                        $0.caption = "All good"
                        $0.capturedAt = Google_Protobuf_Timestamp(date: Date())
                        $0.clientRequestID = UUID().uuidString
                    },
                    options: sam
                )
                let action = try #require(routine.actions.first)
                _ = try await routines.setActionDone(
                    .with {
                        $0.routineID = routine.id
                        $0.actionID = action.id
                        $0.done = true
                        $0.timeZone = "Asia/Taipei"
                    },
                    options: olivia
                )
                let task = try await tasks.createTask(
                    .with {
                        $0.title = "Read every day"
                        $0.checkInTimes = [Hearth_Tasks_V1_CheckInTime.with { $0.custom = "21:00" }]
                        $0.durationDays = 7
                        $0.timeZone = "Asia/Taipei"
                    },
                    options: tom
                ).task
                _ = try await tasks.recordCheckIn(
                    .with {
                        $0.taskID = task.id
                        $0.responseText = "Ten pages"
                        $0.clientRequestID = UUID().uuidString
                    },
                    options: tom
                )

                // tasks -> checkins, routines and safety: each user's export holds every service's
                // part, safety's with the check-in its relay brought.
                for (user, source) in [(sam, "checkins"), (olivia, "routines"), (tom, "tasks")] {
                    try await eventually("safety counted the activity \(source) relayed") {
                        try await safety.getStatus(options: user).hasLastCheckInAt
                    }
                    let export = try await account.exportAccount(options: user)
                    #expect(export.safety.checkIns.map(\.source).contains(source), "\(export.safety.checkIns)")
                }
                let export = try await account.exportAccount(options: olivia)
                #expect(export.checkins.nests.map(\.id) == [nest.id])
                #expect(export.routines.routines.map(\.id) == [routine.id])
                #expect(try await account.exportAccount(options: sam).checkins.checkIns.map(\.caption) == ["All good"])

                // An erasure: tasks asks checkins, routines and safety for their parts until each
                // confirms.
                _ = try await account.eraseAccount(options: olivia)
                var erasure = Hearth_Account_V1_Erasure()
                try await eventually("every part of olivia's erasure is done") {
                    erasure = try await account.getErasure(options: olivia)
                    return erasure.done
                }
                #expect(Set(erasure.services.map(\.service)) == ["checkins", "tasks", "safety", "routines"])
                #expect(erasure.services.allSatisfy { $0.state == .done }, "\(erasure.services)")
                let erased = try await account.exportAccount(options: olivia)
                #expect(erased.checkins.nests.isEmpty && erased.routines.routines.isEmpty)
                #expect(!erased.safety.hasProfile)
            }
        }
    }

    @Test("a link's credential calls only what its link allows; another method is PERMISSION_DENIED and logged")
    func methodsPerLink() async throws {
        let checkinsLog = RecordedLog()
        let safetyLog = RecordedLog()
        try await Self.withProcesses { group, root in
            let safety = try await Self.start(
                .safety,
                under: root,
                logger: safetyLog.logger(level: .warning),
                in: &group
            )
            let peers = try Self.peers([.safety: safety])
            let checkins = try await Self.start(
                .checkins,
                under: root,
                logger: checkinsLog.logger(level: .warning),
                in: &group
            ) { $0.peers = peers }

            try await withClient(port: checkins) { rpc in
                let client = Hearth_Checkins_V1_Checkins.Client(rpc)
                let asRoutines = try Self.link(.routines, to: .checkins)
                // Routines may ask who a user is to a nest: served.
                let role = try await client.getNestRole(Self.ownRole, options: asRoutines)
                #expect(role.role == Hearth_Checkins_V1_NestRole.none)
                // And nothing else, though the server knows the credential.
                let refused = await #expect(throws: RPCError.self) {
                    _ = try await client.createNest(.with { $0.name = "Home" }, options: asRoutines)
                }
                #expect(refused?.code == .permissionDenied)
                #expect(refused?.message == "the routines credential may not call \(Self.createNest)")
                // A caller misconfigured or taken over: the operator hears which, and what it tried.
                let warnings = checkinsLog.all.filter { $0.metadata["caller"] != nil }
                #expect(warnings.count == 1)
                #expect(warnings.first?.level == .warning)
                #expect(warnings.first?.metadata["caller"] == "routines")
                #expect(warnings.first?.metadata["method"] == Self.createNest)

                // The gateway's link may call every method.
                let nest = try await client.createNest(
                    .with { $0.name = "Home" },
                    options: try Self.link(.gateway, to: .checkins)
                )
                #expect(nest.ownerUserID == "ada")

                // No credential, or one of no link: refused before any method is looked at, and
                // not logged as a caller's misuse (there is no caller to name).
                let unknown: [String?] = [nil, "not-the-credential-of-any-link-0123456789abcdef"]
                for credential in unknown {
                    await expectCode(.unauthenticated) {
                        _ = try await client.getNestRole(Self.ownRole, options: Self.presenting(credential))
                    }
                }
                #expect(checkinsLog.all.filter { $0.metadata["caller"] != nil }.count == 1)
            }

            try await withClient(port: safety) { rpc in
                let client = Hearth_Safety_V1_Safety.Client(rpc)
                let asCheckins = try Self.link(.checkins, to: .safety)
                // Checkins may forward activity: served (ada has no profile, so it counts for nothing).
                #expect(try await client.forwardActivity(Self.activity, options: asCheckins).counted == false)
                let refused = await #expect(throws: RPCError.self) {
                    _ = try await client.getProfile(options: asCheckins)
                }
                #expect(refused?.code == .permissionDenied)
                #expect(refused?.message == "the checkins credential may not call \(Self.getProfile)")
                let warnings = safetyLog.all.filter { $0.metadata["caller"] != nil }
                #expect(warnings.map(\.metadata["caller"]) == ["checkins"])
                #expect(warnings.map(\.metadata["method"]) == [Self.getProfile])
            }
        }
    }

    @Test("a link's credential opens only its callee; health checks need none")
    func credentialPerCallee() async throws {
        try await Self.withProcesses { group, root in
            let safety = try await Self.start(.safety, under: root, in: &group)
            let peers = try Self.peers([.safety: safety])
            let checkins = try await Self.start(.checkins, under: root, in: &group) { $0.peers = peers }

            try await withClient(port: safety) { rpc in
                let client = Hearth_Safety_V1_Safety.Client(rpc)
                // What checkins is called with, held by the gateway, routines and tasks: a process
                // taken over cannot reach safety with it, not even for what its own link to safety
                // allows (ForwardActivity).
                for link in ProcessLink.all where link.callee == .checkins {
                    let options = Self.presenting(Secrets.forTests.links[link])
                    await expectCode(.unauthenticated) { _ = try await client.getProfile(options: options) }
                    await expectCode(.unauthenticated) {
                        _ = try await client.forwardActivity(Self.activity, options: options)
                    }
                }
                // The gateway's own link to safety opens it: past the server, ada has no profile.
                let asGateway = try Self.link(.gateway, to: .safety)
                await expectCode(.notFound) { _ = try await client.getProfile(options: asGateway) }
                #expect(try await HealthClient(client: rpc).check() == .serving)
            }

            try await withClient(port: checkins) { rpc in
                // The credential checkins calls safety with does not open checkins itself.
                let asCheckins = try Self.link(.checkins, to: .safety)
                await expectCode(.unauthenticated) {
                    _ = try await Hearth_Checkins_V1_Checkins.Client(rpc).getNestRole(Self.ownRole, options: asCheckins)
                }
                #expect(try await HealthClient(client: rpc).check() == .serving)
            }
        }
    }
}
