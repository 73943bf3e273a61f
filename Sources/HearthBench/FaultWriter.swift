import ArgumentParser
import Foundation
import HearthCommandLine
import HearthGateway
import HearthRPC

/// `hearth fault-writer`: the client of the fault-injection run (scripts/faults). Writers, each
/// acting as users of their own with tokens minted from the deployment's secret, write to one
/// service through the gateway for a while and log every call as a JSON line (time, user, what
/// it wrote, outcome, acknowledged id, latency). `--verify` reads such a log back and checks, as
/// each user, that every acknowledged write is stored.
///
/// What each service's writers write (`--service`):
/// - tasks: activities (a new user at a user's 200);
/// - safety: a profile for each user, then heartbeats, each user's at least 6 s apart (safety
///   merges one within 5 s of the last into it), and every 20th write an emergency contact;
/// - checkins: a nest and a session for each writer's owner, then check-ins with a photo posted
///   by the session's sitter (a new session when one's days are full).
public struct FaultWriter: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "fault-writer",
        abstract: "Write through the gateway, logging every acknowledged write; or verify a log.",
        discussion: """
            The check reads as each user through the gateway; safety's heartbeats only its Internal
            ExportUser shows, so --verify of a safety log also calls safety itself (--direct) with the
            credential of the gateway's link to it.
              hearth fault-writer --writers 8 --duration 60s --out writes.jsonl
              hearth fault-writer --verify writes.jsonl
              hearth fault-writer --service safety --duration 60s --out writes.jsonl
              hearth fault-writer --service safety --direct 127.0.0.1:7103 --verify writes.jsonl
            """
    )

    @Option(help: "HOST:PORT of the gateway.")
    var target = Target(host: "127.0.0.1", port: ProcessName.gateway.defaultPort)

    @Option(help: "The service written to: tasks (activities), safety (profiles, heartbeats, contacts) or checkins.")
    var service = FaultService.tasks

    @Option(
        help: """
            HOST:PORT of the service itself, for what only its Internal methods read (with --verify of a \
            safety log: ExportUser, the heartbeats kept). Called with the gateway's link credential.
            """
    )
    var direct: Target?

    @Option(help: "Folder holding the default secrets.")
    var data = "./data"

    @OptionGroup var secrets: SecretOptions

    @Option(help: "Writers at once, each acting as users of its own.")
    var writers = 8

    @Option(help: "How long to write.")
    var duration = DurationArgument(.seconds(30))

    @Option(help: "The log to write (JSON lines).")
    var out: String?

    @Option(help: "A log to verify instead of writing.")
    var verify: String?

    @Option(help: "The deadline of each call (a write, or a read of the check).")
    var callTimeout = DurationArgument(.seconds(2))

    /// What a call wrote.
    enum Kind: String, Codable, Sendable, CaseIterable {
        case activity, profile, heartbeat, contact, nest, session
        case checkIn = "check-in"
    }

    /// One call, as the log keeps it (one JSON object a line).
    struct Entry: Codable, Sendable {
        /// Seconds since the Unix epoch, when the call began.
        var t: Double
        /// Whose data it is: the user the check reads as. A check-in is posted by the sitter of
        /// a session of this owner's.
        var user: String
        var ok: Bool
        /// Absent in logs written before the other services: an activity.
        var kind: Kind?
        /// Acknowledged: what the check looks for (an activity's, contact's, nest's, session's or
        /// check-in's id, a heartbeat's request id, the user id of a profile).
        var id: String?
        /// Failed: the status code's name.
        var code: String?
        var ms: Double
    }

    public func validate() throws {
        guard (self.out == nil) != (self.verify == nil) else {
            throw ValidationError("give either --out (write) or --verify (check a log)")
        }
        guard self.writers >= 1 else { throw ValidationError("--writers must be at least 1") }
        if self.verify != nil, self.service == .safety, self.direct == nil {
            throw ValidationError("--verify of a safety log needs --direct HOST:PORT of the safety process")
        }
    }

    public func run() async throws {
        // Calls made to the service itself go as the gateway's would.
        let secrets = try self.secrets.load(
            dataDirectory: URL(fileURLWithPath: self.data),
            links: [ProcessLink(.gateway, self.service.process)],
            includingJWT: true,
            // The deployment's own, made by its processes: an operator's tool makes none.
            creating: false
        )
        let signer = try await TokenSigner(hmacSecret: secrets.jwtSecret ?? "")
        var gateway = RPCClient.Configuration(host: self.target.host, port: self.target.port)
        gateway.maxFrameSizeBeforeAuthentication = RPCClient.gatewayFrameSizeBeforeAuthentication
        let client = RPCClient(configuration: gateway)
        let direct = self.direct.map { RPCClient(configuration: .init(host: $0.host, port: $0.port)) }
        let outcome: Result<Void, any Error>
        do {
            try await self.perform(client: client, direct: direct, signer: signer, secrets: secrets)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await client.close()
        await direct?.close()
        try outcome.get()
    }

    private func perform(client: RPCClient, direct: RPCClient?, signer: TokenSigner, secrets: Secrets) async throws {
        if let verify {
            let check = FaultCheck(
                client: client,
                direct: direct,
                signer: signer,
                internalCredential: try secrets.credential(.gateway, to: self.service.process),
                callTimeout: self.callTimeout.duration
            )
            try await self.verify(log: verify, check: check)
        } else if let out {
            let run = FaultRun(
                id: String(UUID().uuidString.prefix(8)).lowercased(),
                end: Date().addingTimeInterval(self.duration.seconds),
                client: client,
                signer: signer,
                callTimeout: self.callTimeout.duration
            )
            try await self.write(to: out, run: run)
        }
    }

    private func write(to path: String, run: FaultRun) async throws {
        // A check-in's photo, made once: every check-in carries the same bytes.
        // A 32x32 colour gradient: a real PNG, decoded and stored like any upload.
        let photo = PNGFile.rgb(width: 32, height: 32) { x, y in (UInt8(x * 255 / 31), UInt8(y * 255 / 31), 0x80) }
        let service = self.service
        let entries = try await withThrowingTaskGroup(of: [Entry].self) { group in
            for writer in 0..<self.writers {
                group.addTask {
                    switch service {
                    case .tasks: return try await run.writeActivities(writer: writer)
                    case .safety: return try await run.writeSafety(writer: writer)
                    case .checkins: return try await run.writeCheckIns(writer: writer, photo: photo)
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.t < $1.t }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var text = ""
        for entry in entries {
            text += String(decoding: try encoder.encode(entry), as: UTF8.self) + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let acknowledged = entries.filter(\.ok).count
        print(
            "\(service.rawValue): calls \(entries.count), acknowledged \(acknowledged), "
                + "failed \(entries.count - acknowledged)"
        )
    }

    private func verify(log path: String, check: FaultCheck) async throws {
        let decoder = JSONDecoder()
        let entries = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try decoder.decode(Entry.self, from: Data($0.utf8))
        }
        // Every acknowledged id, by user and by what it was.
        var acknowledged: [String: [Kind: Set<String>]] = [:]
        for entry in entries where entry.ok {
            guard let id = entry.id else { continue }
            acknowledged[entry.user, default: [:]][entry.kind ?? .activity, default: []].insert(id)
        }
        var verdict = FaultVerdict(service: self.service)
        for (user, ids) in acknowledged.sorted(by: { $0.key < $1.key }) {
            switch self.service {
            case .tasks: try await check.activities(of: user, acknowledged: ids, into: &verdict)
            case .safety: try await check.safety(of: user, acknowledged: ids, into: &verdict)
            case .checkins: try await check.checkIns(of: user, acknowledged: ids, into: &verdict)
            }
        }
        print(try verdict.json())
        if verdict.missingTotal > 0 { throw ExitCode(1) }
    }
}

/// The services a fault run writes to and kills.
enum FaultService: String, ExpressibleByArgument, CaseIterable, Sendable {
    case tasks, safety, checkins

    /// The process that serves it.
    var process: ProcessName {
        switch self {
        case .tasks: .tasks
        case .safety: .safety
        case .checkins: .checkins
        }
    }
}
