import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthGateway
import HearthRPC
import SwiftProtobuf

/// `hearth fault-writer`: the client of the fault-injection run (scripts/faults). Writers, each
/// a user of its own with a token minted from the deployment's secret, create activities
/// through the gateway for a while and log every call as a JSON line (time, user, outcome,
/// acknowledged id, latency). `--verify` reads such a log back and checks, as each user, that
/// every acknowledged write is stored.
public struct FaultWriter: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "fault-writer",
        abstract: "Write through the gateway, logging every acknowledged write; or verify a log.",
        discussion: """
              hearth fault-writer --writers 8 --duration 60s --out writes.jsonl
              hearth fault-writer --verify writes.jsonl
            """
    )

    @Option(help: "HOST:PORT of the gateway.")
    var target = Target(host: "127.0.0.1", port: ProcessName.gateway.defaultPort)

    @Option(help: "Folder holding the default secrets.")
    var data = "./data"

    @OptionGroup var secrets: SecretOptions

    @Option(help: "Writers at once, each its own user.")
    var writers = 8

    @Option(help: "How long to write.")
    var duration = DurationArgument(.seconds(30))

    @Option(help: "The log to write (JSON lines).")
    var out: String?

    @Option(help: "A log to verify instead of writing.")
    var verify: String?

    @Option(help: "The deadline of each call (a write, or a read of the check).")
    var callTimeout = DurationArgument(.seconds(2))

    struct Entry: Codable {
        /// Seconds since the Unix epoch, when the call began.
        var t: Double
        var user: String
        var ok: Bool
        var id: String?
        var code: String?
        var ms: Double
    }

    public func validate() throws {
        guard (self.out == nil) != (self.verify == nil) else {
            throw ValidationError("give either --out (write) or --verify (check a log)")
        }
        guard self.writers >= 1 else { throw ValidationError("--writers must be at least 1") }
    }

    public func run() async throws {
        let secrets = try self.secrets.load(dataDirectory: URL(fileURLWithPath: self.data), includingJWT: true)
        let signer = try await TokenSigner(hmacSecret: secrets.jwtSecret ?? "")
        let client = RPCClient(configuration: .init(host: self.target.host, port: self.target.port))
        defer { Task { await client.close() } }
        if let verify {
            try await self.verify(log: verify, client: client, signer: signer)
        } else if let out {
            try await self.write(to: out, client: client, signer: signer)
        }
    }

    private func options(_ user: String, _ signer: TokenSigner) async throws -> CallOptions {
        let now = Date()
        let token = try await signer.token(
            for: HearthClaims(subject: user, issuedAt: now, expiresAt: now.addingTimeInterval(3600))
        )
        return CallOptions(timeout: self.callTimeout.duration, metadata: ["authorization": "Bearer \(token)"])
    }

    private func write(to path: String, client: RPCClient, signer: TokenSigner) async throws {
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        let end = Date().addingTimeInterval(self.duration.seconds)
        let entries = try await withThrowingTaskGroup(of: [Entry].self) { group in
            for writer in 0..<self.writers {
                group.addTask {
                    // A user holds at most 200 activities: a writer that fills one goes on as a
                    // new user, so that a long run keeps writing (and restarts keep being seen).
                    var part = 0
                    var user = "fault-\(run)-\(writer)-\(part)"
                    var options = try await self.options(user, signer)
                    var entries: [Entry] = []
                    var n = 0
                    while Date() < end {
                        n += 1
                        var request = Hearth_Tasks_V1_CreateActivityRequest()
                        request.title = "fault write \(writer)-\(n)"
                        request.repeat = .none
                        let started = Date()
                        do {
                            let activity = try await Hearth_Tasks_V1_Activities.Client(client).createActivity(
                                request,
                                options: options
                            )
                            entries.append(
                                Entry(
                                    t: started.timeIntervalSince1970,
                                    user: user,
                                    ok: true,
                                    id: activity.id,
                                    ms: Date().timeIntervalSince(started) * 1000
                                )
                            )
                        } catch {
                            let code = RPCError(answering: error).code
                            entries.append(
                                Entry(
                                    t: started.timeIntervalSince1970,
                                    user: user,
                                    ok: false,
                                    code: code.name,
                                    ms: Date().timeIntervalSince(started) * 1000
                                )
                            )
                            if code == .resourceExhausted {
                                part += 1
                                user = "fault-\(run)-\(writer)-\(part)"
                                options = try await self.options(user, signer)
                            }
                            try? await Task.sleep(for: .milliseconds(10))
                        }
                        // Under the gateway's per-user limit (50 a second).
                        try? await Task.sleep(for: .milliseconds(25))
                    }
                    return entries
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
        print("calls \(entries.count), acknowledged \(acknowledged), failed \(entries.count - acknowledged)")
    }

    private func verify(log path: String, client: RPCClient, signer: TokenSigner) async throws {
        let decoder = JSONDecoder()
        let entries = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try decoder.decode(Entry.self, from: Data($0.utf8))
        }
        let acknowledged = Dictionary(grouping: entries.filter(\.ok), by: \.user).mapValues { Set($0.compactMap(\.id)) }
        var missing = 0
        for (user, ids) in acknowledged {
            let stored = try await Self.retryingUnanswered {
                try await Hearth_Tasks_V1_Activities.Client(client).listActivities(
                    Hearth_Tasks_V1_ListActivitiesRequest(),
                    options: try await self.options(user, signer)
                )
            }
            missing += ids.subtracting(stored.activities.map(\.id)).count
        }
        let total = acknowledged.values.map(\.count).reduce(0, +)
        print(#"{"acknowledged": \#(total), "missing": \#(missing)}"#)
        if missing > 0 { throw ExitCode(1) }
    }

    /// Runs `read` again while it fails with UNAVAILABLE or DEADLINE_EXCEEDED, for at most 60 s:
    /// the check reads what was stored, and the gateway may still be reconnecting to the service
    /// restarted last (its backoff), or a loaded machine answer late, which is no verdict on the
    /// data.
    private static func retryingUnanswered<T>(_ read: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await read()
            } catch let error as RPCError
                where [.unavailable, .deadlineExceeded].contains(error.code) && ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
