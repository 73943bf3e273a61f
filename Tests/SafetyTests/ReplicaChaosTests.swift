import Foundation
import HearthCore
import HearthPostgres
import HearthStore
import HearthTestSupport
import Logging
import Synchronization
import Testing

@testable import SafetyService

/// Three real `hearth serve safety` processes on one PostgreSQL, one of them killed with SIGKILL
/// every 3 s (as a group's alarms are being sent) and started again, while 1,000 switches fall
/// due within a minute: every alarm reaches the SMTP server, none later than a claim's lease and
/// a second, and one arrives twice only when a kill came as the server took it (the process died
/// before it could write that it was sent; the copy has the same Message-ID).
@Suite("Safety replicas killed at random", .timeLimit(.minutes(5)))
struct ReplicaChaosTests {
    static let users = 1_000
    /// Switches fall due in groups this far apart, the first some seconds after it is seeded.
    static let groups = 20
    static let groupSpacing: TimeInterval = 3
    static let replicas = 3
    static let day: TimeInterval = 24 * 3600

    @Test("1,000 alarms due within a minute over three processes, one killed every few seconds: each arrives, on time")
    func killedReplicas() async throws {
        try await withPostgresServer { server in
            let sink = try await SMTPSink()
            defer { sink.stop() }
            try await withScratchFolder("hearth-replica-chaos") { folder in
                let cluster = try await ChaosCluster(server: server, sink: sink, folder: folder)
                try await using(cluster, teardown: { await $0.stop() }) { cluster in
                    try await self.run(cluster, sink: sink)
                }
            }
        }
    }

    private func run(_ cluster: ChaosCluster, sink: SMTPSink) async throws {
        for index in 0..<Self.replicas { try cluster.start(index) }
        // The killer runs while the first half of the groups fall due: their lapsed claims are
        // taken back (a lease later) while the second half fall due and no process dies. A
        // message whose second holder dies too waits a second lease (seen when kills went on).
        let killing = Task { try await cluster.killAtRandom(groups: Self.groups / 2) }
        let dues = try await cluster.seed(users: Self.users, groups: Self.groups, spacing: Self.groupSpacing)
        let kills = try await killing.value
        try await eventually("every alarm arrived", within: .seconds(Int(SafetyService.replicaLease) + 30)) {
            Set(try cluster.alarms().map(\.recipient)).count >= Self.users
        }
        #expect(cluster.runningCount == Self.replicas, "no process died but those killed")

        let alarms = try cluster.alarms()
        let byID = Dictionary(grouping: alarms, by: \.messageID)
        #expect(byID.count == Self.users, "one Message-ID per alarm")
        #expect(Set(alarms.map(\.recipient)) == Set(dues.keys), "every contact, no other")
        // Late by at most a lease (a process died holding the claim) and a second, beyond what
        // the alarms due after the last kill took (a debug build on two cores: about a second).
        let late = alarms.map { alarm in alarm.receivedAt.timeIntervalSince(dues[alarm.recipient] ?? .distantFuture) }
        // What an alarm takes when no process dies: those of the groups due after the kills.
        let killedUntil = kills.max() ?? .distantPast
        let ordinary =
            alarms.filter { (dues[$0.recipient] ?? .distantPast) > killedUntil.addingTimeInterval(2) }
            .map { $0.receivedAt.timeIntervalSince(dues[$0.recipient] ?? .distantFuture) }.max() ?? 0
        let latest = late.max() ?? 0
        #expect(late.allSatisfy { $0 >= 0 }, "none before its time")
        #expect(ordinary <= 10, "an alarm no kill held back took \(ordinary) s")
        #expect(latest <= SafetyService.replicaLease + 1 + ordinary, "latest \(latest) s after due")
        // A repeat only when a process was killed as the first copy arrived: the server took it,
        // and the process died before it could write so (or before it read the answer).
        let repeats = byID.values.filter { $0.count > 1 }
        for copies in repeats {
            let first = copies.map(\.receivedAt).min() ?? .distantPast
            #expect(
                kills.contains { abs($0.timeIntervalSince(first)) <= 2 },
                "\(copies[0].messageID) arrived \(copies.count) times, with no kill near its first"
            )
        }
        let sorted = late.sorted()
        let taken = late.filter { $0 >= SafetyService.replicaLease }.count
        let seconds = { (value: Double) in String(format: "%.2f s", value) }
        print(
            "replica chaos: \(kills.count) kills, \(alarms.count) alarm emails for \(byID.count) alarms "
                + "(\(repeats.count) repeated), \(taken) sent after a lease ran out; after due: "
                + "p50 \(seconds(sorted[sorted.count / 2])), not held back at most \(seconds(ordinary)), "
                + "latest \(seconds(latest))"
        )
    }
}

/// An alarm email as the SMTP server received it.
struct ReceivedAlarm {
    var messageID: String
    var recipient: String
    var receivedAt: Date
}

/// The processes, their folders and the store the test seeds through.
final class ChaosCluster: Sendable {
    let server: PostgresServer
    let sink: SMTPSink
    let folder: URL
    let hearth: URL
    let seeder: PostgresSafetyStore
    let clock: ManualClock
    private let pool: Task<Void, any Error>
    private let processes = Mutex<[Int: ChildProcess]>([:])
    /// About how long seeding 1,000 switches takes here (debug build, two cores).
    static let seedingTime: TimeInterval = 40
    /// When each group seeded so far falls due.
    private let dueTimes = Mutex<[Date]>([])

    init(server: PostgresServer, sink: SMTPSink, folder: URL) async throws {
        self.server = server
        self.sink = sink
        self.folder = folder
        self.hearth = try builtProduct(named: "hearth")
        let secrets = folder.appendingPathComponent("secrets")
        let made = try await runProcess(self.hearth, ["make-secrets", "--out", secrets.path])
        try #require(made.status == 0, "\(made.stderr)")
        let keyFile = secrets.appendingPathComponent("data.key")
        try DataKeyRing.generate().text.write(to: keyFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        // Seeding sets the time each switch's user checked in: a day before it falls due.
        self.clock = ManualClock(Date())
        self.seeder = try await PostgresSafetyStore.open(
            server.location,
            keys: try DataKeys(file: keyFile),
            clock: self.clock,
            logger: Replicas.logger
        )
        let seeder = self.seeder
        self.pool = Task { try await seeder.database.run() }
    }

    /// Starts process `index` (again), as on a machine of its own: its own data folder, the
    /// shared secrets.
    func start(_ index: Int) throws {
        let data = self.folder.appendingPathComponent("replica-\(index)")
        if !FileManager.default.fileExists(atPath: data.path) {
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                at: self.folder.appendingPathComponent("secrets"),
                to: data.appendingPathComponent("secrets")
            )
        }
        let process = try ChildProcess(
            self.hearth,
            [
                "serve", "safety", "--port", "0", "--data", data.path,
                "--store", "\(self.server.location)",
                "--smtp-host", "127.0.0.1", "--smtp-port", "\(self.sink.port)", "--smtp-security", "none",
                "--log-level", "error",
            ]
        )
        self.processes.withLock { $0[index] = process }
    }

    var runningCount: Int { self.processes.withLock { $0.values.filter(\.isRunning).count } }

    /// Kills a process at random as the first alarm of each group arrives (the group's others
    /// are under way; groups are 3 s apart) and starts it again half a second later; answers
    /// when each kill was.
    func killAtRandom(groups: Int) async throws -> [Date] {
        var kills: [Date] = []
        for group in 0..<groups {
            try await eventually("group \(group) is seeded", within: .seconds(120)) {
                self.dueTimes.withLock { $0.count > group }
            }
            let due = self.dueTimes.withLock { $0[group] }
            try await Task.sleep(for: .milliseconds(Int(max(0, due.timeIntervalSinceNow) * 1000)))
            // As its first alarm arrives: the others are under way.
            let received = try self.sink.messageCount()
            try await eventually("group \(group)'s first alarm arrives") { try self.sink.messageCount() > received }
            let index = Int.random(in: 0..<ReplicaChaosTests.replicas)
            guard let process = self.processes.withLock({ $0[index] }) else { continue }
            process.send(SIGKILL)
            kills.append(Date())
            try await eventually("the killed process is gone") { !process.isRunning }
            try await Task.sleep(for: .milliseconds(500))
            try self.start(index)
        }
        return kills
    }

    /// Seeds `users` armed switches (one confirmed contact each) in `groups`: a group falls due
    /// `spacing` after the one before, and at least 10 s after it is seeded. Answers each
    /// contact's address and when its alarm is due.
    func seed(users: Int, groups: Int, spacing: TimeInterval) async throws -> [String: Date] {
        var dues: [String: Date] = [:]
        // The first group falls due once all are likely seeded (the seeding competes with the
        // sends for the two cores otherwise); a later one at least 10 s after it is seeded.
        var due = Date().addingTimeInterval(Self.seedingTime - spacing)
        let perGroup = users / groups
        for group in 0..<groups {
            due = max(due.addingTimeInterval(spacing), Date().addingTimeInterval(10))
            self.clock.set(due.addingTimeInterval(-ReplicaChaosTests.day))
            let checkedIn = self.seeder.now
            let seeder = self.seeder
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for index in 0..<perGroup {
                    let user = "user-\(group)-\(index)"
                    tasks.addTask {
                        _ = try await seeder.upsertProfile(user) { profile in
                            profile.name = SealedText(user)
                            profile.email = "\(user)@example.com"
                            profile.thresholdHours = 24
                            profile.timeZone = "UTC"
                        }
                        guard
                            case .added = try await seeder.addContact(user, email: "\(user)@contacts.example", name: "")
                        else { throw ContactNotAdded(email: user) }
                        try await seeder.confirmWithoutMail(user)
                        _ = try await seeder.recordHeartbeat(
                            user,
                            timeZone: nil,
                            deviceInfo: "",
                            requestID: "first",
                            source: "app"
                        )
                    }
                }
                try await tasks.waitForAll()
            }
            for index in 0..<perGroup {
                dues["user-\(group)-\(index)@contacts.example"] = checkedIn.addingTimeInterval(ReplicaChaosTests.day)
            }
            self.dueTimes.withLock { $0.append(checkedIn.addingTimeInterval(ReplicaChaosTests.day)) }
        }
        return dues
    }

    /// The alarm emails received so far.
    func alarms() throws -> [ReceivedAlarm] {
        try self.sink.messages().compactMap { message in
            guard (message["subject"] as? String)?.contains("Alert") == true,
                let id = message["message_id"] as? String,
                let recipient = (message["rcpt_tos"] as? [String])?.first,
                let received = message["received_at"] as? Double
            else { return nil }
            return ReceivedAlarm(
                messageID: id,
                recipient: recipient,
                receivedAt: Date(timeIntervalSince1970: received)
            )
        }
    }

    func stop() async {
        for process in self.processes.withLock({ Array($0.values) }) {
            process.send(SIGKILL)
            _ = try? await eventually("stopped") { !process.isRunning }
        }
        self.pool.cancel()
        _ = try? await self.pool.value
    }
}
