import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthRPC
import SwiftProtobuf

/// `hearth bench-safety`: RecordHeartbeat, a durable write, from many armed users (each with
/// a profile and a contact), each call a new request, users taken round-robin. With at least as
/// many users as calls (warm-up included) every heartbeat is a new check-in that is written;
/// with fewer, a user's next one may come within the 5 s coalescing window and only be
/// answered as a repeat, which writes nothing.
public struct BenchSafety: AsyncParsableCommand, Sendable {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "bench-safety",
        abstract: "Load-test the safety process with RecordHeartbeat from many armed users.",
        discussion: """
              hearth bench-safety --internal-secret "$(cat data/secrets/gateway-safety.key)" --users 20000 --total 20000
            """
    )

    @Option(help: "HOST:PORT of the safety process.")
    var target = Target(host: "127.0.0.1", port: ProcessName.safety.defaultPort)

    @Option(
        help:
            "The gateway's link credential (DATA/secrets/gateway-safety.key): the benchmark calls the service directly."
    )
    var internalSecret: String

    @Option(help: "Armed users to check in for, round-robin.")
    var users = 20_000

    @Option(help: "User ids are PREFIX-0, PREFIX-1, ... Default: a new prefix each run.")
    var prefix: String?

    @Flag(inversion: .prefixedNo, help: "Create the users' profiles and contacts first (--no-arm: an earlier run did).")
    var arm = true

    @Option(
        help: """
            A folder where an SMTP sink keeps the emails safety sent, one JSON file each with the decoded \
            "body" (Tests/HearthTestSupport/smtp_sink.py): each new contact's invitation there is confirmed \
            from its link, as the contact would, so that the switches are armed. Without it they stay NOT_ARMED.
            """
    )
    var confirmFrom: String?

    @Option(help: "Calls in flight at once.")
    var concurrency = 16

    @Option(help: "Measured calls.")
    var total = 20_000

    @Option(help: "Calls made first and not recorded.")
    var warmup = 1000

    @OptionGroup var server: ServerProcessOptions

    @Option(help: "Also write the report as JSON to this file.")
    var json: String?

    public func validate() throws {
        guard self.users >= 1, self.concurrency >= 1, self.total >= 1, self.warmup >= 0 else {
            throw ValidationError("--users, --concurrency and --total must be at least 1")
        }
    }

    public func run() async throws {
        let (client, executor) = BenchRunner.makeClient(.init(host: self.target.host, port: self.target.port))
        let run = String(UUID().uuidString.prefix(8))
        let prefix = self.prefix ?? "bench-\(run)"
        let users = (0..<self.users).map { "\(prefix)-\($0)" }
        if self.arm {
            try await self.arm(users, client: client)
            if let folder = self.confirmFrom {
                try await InvitationConfirmer(folder: folder, secret: self.internalSecret)
                    .confirm(count: users.count, client: client)
            }
        }

        let count = users.count
        var runner = BenchRunner(
            client: client,
            executor: executor,
            method: Hearth_Safety_V1_Safety.Method.recordHeartbeat.name,
            request: { index in
                var request = Hearth_Safety_V1_RecordHeartbeatRequest()
                request.clientRequestID = "\(run)-\(index)"
                request.deviceInfo = "bench"
                return try! request.serializedData()
            },
            options: BenchUser(id: users[0], secret: self.internalSecret).options,
            user: { index in users[index % count] },
            concurrency: self.concurrency,
            limit: .total(self.total),
            warmup: .total(self.warmup)
        )
        runner.server = self.server.process
        try await runner.runAndReport(
            method: "RecordHeartbeat",
            target: self.target,
            concurrency: self.concurrency,
            json: self.json,
            client: client
        )
    }

    /// A profile and a contact for every user, 32 at a time.
    private func arm(_ users: [String], client: RPCClient) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let workers = 32
            for worker in 0..<workers {
                group.addTask {
                    for index in stride(from: worker, to: users.count, by: workers) {
                        let options = BenchUser(id: users[index], secret: self.internalSecret).options
                        var profile = Hearth_Safety_V1_UpsertProfileRequest()
                        profile.name = "Bench \(index)"
                        profile.email = "user\(index)@bench.example"
                        profile.thresholdHours = 72
                        profile.preferredLanguage = "en"
                        profile.timeZone = "UTC"
                        profile.pushToken = "bench-\(index)"
                        _ = try await Hearth_Safety_V1_Safety.Client(client).upsertProfile(profile, options: options)
                        var contact = Hearth_Safety_V1_AddContactRequest()
                        contact.email = "contact\(index)@bench.example"
                        _ = try await Hearth_Safety_V1_Safety.Client(client).addContact(contact, options: options)
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
