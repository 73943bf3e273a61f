import ArgumentParser
import Foundation
import HearthCommandLine
import HearthCore
import HearthGateway
import HearthRPC

/// `hearth simulate-day`: the capacity model's check (SCALING.md). Makes `--users` users through
/// the gateway as an app would, then replays a synthetic day of their calls (the profile's
/// counts, spread over the hours by its curve) at `--speedup` times real time, open loop: each
/// call starts at its moment whether the ones before it have answered or not, so a system that
/// falls behind shows as calls started late and slow answers, not as a slower offered rate.
public struct SimulateDay: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "simulate-day",
        abstract: "Replay a synthetic day of N users through the gateway, faster than real time.",
        discussion: """
            The processes' own timed work (prompts falling due, safety's deadlines) runs on the real
            clock, not the simulated one. scripts/simulate-day runs this against `hearth up` and
            compares what the machine spent with what the capacity model predicts.
              hearth simulate-day --profile deploy/capacity/usage-profile.json --users 1000 --speedup 60
              hearth simulate-day --profile P --users 5000 --speedup 240 --from-hour 17 --hours 4 \\
                --confirm-from mail/ --photo photo.jpg --json day.json
            """
    )

    @Option(help: "HOST:PORT of the gateway.")
    var target = Target(host: "127.0.0.1", port: ProcessName.gateway.defaultPort)

    @Option(help: "Folder holding the default secrets (the token key; the gateway's credential to safety).")
    var data = "./data"

    @OptionGroup var secrets: SecretOptions

    @Option(help: "The usage profile (JSON): calls per user per day, the hours' weights.")
    var profile: String

    @Option(help: "Simulated users.")
    var users = 1000

    @Option(help: "Simulated seconds per real second.")
    var speedup = 60.0

    @Option(help: "The first simulated hour replayed (0-23).")
    var fromHour = 0

    @Option(help: "How many simulated hours to replay.")
    var hours = 24

    @Option(help: "The seed of the day's schedule: the same seed, the same day.")
    var seed: UInt64 = 1

    @Option(help: "A JPEG or PNG that check-ins with a photo carry (needed when the profile has them).")
    var photo: String?

    @Option(
        help: """
            A folder where an SMTP sink keeps safety's emails: each contact confirms from the link in its \
            invitation (through safety at --safety, as the contact page does), so every switch is armed.
            """
    )
    var confirmFrom: String?

    @Option(help: "HOST:PORT of safety itself, for --confirm-from.")
    var safety = Target(host: "127.0.0.1", port: ProcessName.safety.defaultPort)

    @Option(
        name: .customLong("quiet-pid"),
        help: """
            A process on this machine (repeatable) that must be quiet (under 20 ms of CPU in a second, 120 s \
            at most) before the replay: what setting up queued (invitations, confirmations' pushes) is done.
            """
    )
    var quietPIDs: [Int32] = []

    @Option(help: "Connections to the gateway the calls share.")
    var connections = 16

    @Option(help: "Calls in flight at most; a call due while that many are running waits (and starts late).")
    var maxInFlight = 512

    @Option(help: "Users set up at once.")
    var setupConcurrency = 32

    @Option(help: "The deadline of each call.")
    var callTimeout = DurationArgument(.seconds(10))

    @Option(help: "Also write the report as JSON to this file.")
    var json: String?

    public func validate() throws {
        guard self.users >= 2 else { throw ValidationError("--users must be at least 2 (each sits another's nest)") }
        guard self.speedup > 0, self.speedup.isFinite else { throw ValidationError("--speedup must be positive") }
        guard (0..<24).contains(self.fromHour), (1...24).contains(self.hours), self.fromHour + self.hours <= 24 else {
            throw ValidationError("--from-hour and --hours must stay within one day (0-24)")
        }
        guard self.connections >= 1, self.maxInFlight >= 1, self.setupConcurrency >= 1 else {
            throw ValidationError("--connections, --max-in-flight and --setup-concurrency must be at least 1")
        }
        // A token lives a day at most (the gateway's limit): the replay must end within one.
        guard Double(self.hours * 3600) / self.speedup <= Self.longestReplay else {
            throw ValidationError(
                "the replay would last \(Int(Double(self.hours * 3600) / self.speedup)) s; at most "
                    + "\(Int(Self.longestReplay)) s (a token's day): raise --speedup or replay fewer --hours"
            )
        }
    }

    public func run() async throws {
        guard let profileData = FileManager.default.contents(atPath: self.profile) else {
            throw ValidationError("cannot read --profile \(self.profile)")
        }
        let profile: UsageProfile
        do {
            profile = try JSONDecoder().decode(UsageProfile.self, from: profileData)
        } catch {
            throw ValidationError("--profile \(self.profile) is not a usage profile: \(error)")
        }
        if profile.callsPerUserPerDay[.createPhotoCheckIn, default: 0] > 0, self.photo == nil {
            throw ValidationError("the profile has check-ins with a photo: give --photo FILE")
        }
        let photo = try self.photo.map { path in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("cannot read --photo \(path)")
            }
            return data
        }
        let schedule = DaySchedule(
            profile: profile,
            users: self.users,
            fromHour: self.fromHour,
            hours: self.hours,
            seed: self.seed
        )
        // The gateway's credential to safety only confirms contacts: read only when asked to.
        let secrets = try self.secrets.load(
            dataDirectory: URL(fileURLWithPath: self.data),
            links: self.confirmFrom == nil ? [] : [ProcessLink(.gateway, .safety)],
            includingJWT: true,
            creating: false
        )
        let signer = try await TokenSigner(hmacSecret: secrets.jwtSecret ?? "")
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        // Tokens for setting up, and new ones for the replay, each living as long as the gateway
        // allows (a day): however long setup takes, the replay's tokens outlive it.
        let tokens = { @Sendable () async throws -> [CallOptions] in
            var options: [CallOptions] = []
            for user in 0..<self.users {
                options.append(
                    try await signer.options(
                        as: "sim-\(run)-\(user)",
                        lifetime: Self.tokenLifetime,
                        timeout: self.callTimeout.duration
                    )
                )
            }
            return options
        }
        var configuration = RPCClient.Configuration(
            host: self.target.host,
            port: self.target.port,
            connections: self.connections
        )
        configuration.maxFrameSizeBeforeAuthentication = RPCClient.gatewayFrameSizeBeforeAuthentication
        let client = RPCClient(configuration: configuration)
        let outcome: Result<SimulationRecord.Report, any Error>
        do {
            let users = SimulatedUsers(run: run, options: try await tokens(), client: client, photo: photo)
            let setupStarted = Date()
            try await self.setUp(
                users,
                credential: self.confirmFrom == nil ? "" : try secrets.credential(.gateway, to: .safety)
            )
            let setupSeconds = Date().timeIntervalSince(setupStarted)
            await Self.waitQuiet(self.quietPIDs.map(ProcessCPUTime.init(pid:)))
            users.renew(try await tokens())
            outcome = .success(
                await self.replay(
                    schedule,
                    users: users,
                    setupSeconds: setupSeconds,
                    quietSeconds: Date().timeIntervalSince(setupStarted) - setupSeconds
                )
            )
        } catch {
            outcome = .failure(error)
        }
        await client.close()
        let report = try outcome.get()
        print(report.text)
        if let json = self.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
    }

    /// Every user's own world, then the sessions (which name another user), then the contacts'
    /// confirmations when a sink keeps the invitations.
    private func setUp(_ users: SimulatedUsers, credential: String) async throws {
        try await forEachUser(users.count) { try await users.makeOwnWorld(of: $0) }
        try await forEachUser(users.count) { try await users.makeSession(of: $0) }
        if let folder = self.confirmFrom {
            let direct = RPCClient(configuration: .init(host: self.safety.host, port: self.safety.port))
            do {
                try await InvitationConfirmer(folder: folder, secret: credential).confirm(
                    count: users.count,
                    client: direct
                )
            } catch {
                await direct.close()
                throw error
            }
            await direct.close()
        }
    }

    /// The longest replay: a token's day less the margin the gateway's clock check leaves.
    static let longestReplay: Double = 85_000
    /// The gateway takes no token living longer than a day (with 60 s of leeway for clocks).
    static let tokenLifetime: TimeInterval = 86_000

    /// Waits until each of `processes` spends under 20 ms of CPU in a second, two minutes at most
    /// for them all; says which it could not read or which stayed busy.
    private static func waitQuiet(_ processes: [ProcessCPUTime]) async {
        await withTaskGroup(of: Void.self) { group in
            for process in processes {
                group.addTask {
                    var last = process.read()
                    for _ in 0..<120 {
                        guard let before = last else {
                            Self.warn("process \(process.pid) cannot be read (gone?); not waiting for it")
                            return
                        }
                        try? await Task.sleep(for: .seconds(1))
                        last = process.read()
                        if let after = last, after - before < .milliseconds(20) { return }
                    }
                    Self.warn("process \(process.pid) still busy after 120 s; replaying anyway")
                }
            }
        }
    }

    private static func warn(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func forEachUser(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        let workers = min(self.setupConcurrency, count)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    for user in stride(from: worker, to: count, by: workers) { try await body(user) }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Starts each call at its moment (at most `maxInFlight` running) and gathers how each went.
    private func replay(_ schedule: DaySchedule, users: SimulatedUsers, setupSeconds: Double, quietSeconds: Double)
        async -> SimulationRecord.Report
    {
        let clock = ContinuousClock()
        let speedup = self.speedup
        let start = clock.now + .milliseconds(100)
        let startedAt = Date().addingTimeInterval(0.1)
        var record = SimulationRecord(
            fromHour: self.fromHour,
            hours: self.hours,
            startedAt: startedAt,
            speedup: speedup
        )
        let window = schedule.window.lowerBound
        await withTaskGroup(of: CallOutcome.self) { group in
            var running = 0
            for (sequence, scheduled) in schedule.calls.enumerated() {
                // Finished calls wait in the group until collected: `running` counts both, and only
                // calls really running make `next()` wait.
                if running >= self.maxInFlight, let done = await group.next() {
                    record.add(done)
                    running -= 1
                }
                let due = start + .microseconds(Int64((scheduled.at - window) / speedup * 1e6))
                try? await Task.sleep(until: due, clock: clock)
                running += 1
                group.addTask {
                    let began = clock.now
                    let code: StatusCode
                    do {
                        try await users.perform(scheduled.call, by: scheduled.user, sequence: sequence)
                        code = .ok
                    } catch {
                        code = RPCError(answering: error).code
                    }
                    return CallOutcome(
                        call: scheduled.call,
                        hour: Int(scheduled.at / 3600),
                        lateMicros: UInt64(max((began - due).microseconds, 0)),
                        latencyMicros: UInt64(max((clock.now - began).microseconds, 0)),
                        code: code
                    )
                }
            }
            for await done in group { record.add(done) }
        }
        return record.report(
            users: self.users,
            speedup: speedup,
            fromHour: self.fromHour,
            hours: self.hours,
            setupSeconds: setupSeconds,
            quietSeconds: quietSeconds,
            replayStartedAt: startedAt,
            replaySeconds: (clock.now - start).seconds
        )
    }
}
