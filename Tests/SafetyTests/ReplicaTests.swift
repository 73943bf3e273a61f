import Foundation
import HearthCore
import HearthMail
import HearthPostgres
import HearthPush
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import Synchronization
import Testing

@testable import SafetyService

/// Several safety processes on one PostgreSQL database: each due alarm is sent once, whichever
/// process claims it, and a message a process claimed and never finished (it died) is sent by
/// another once the claim's lease has run out, with the same Message-ID.
@Suite("Safety replicas on one PostgreSQL", .timeLimit(.minutes(2)), .serialized)
struct ReplicaTests {
    static let t0 = Date(timeIntervalSince1970: 1_773_144_000)
    static let hour: TimeInterval = 3600
    static let lease: TimeInterval = 30

    @Test("two replicas decide and send 30 due alarms: each exactly once")
    func eachAlarmOnce() async throws {
        try await withReplicas(count: 2) { replicas in
            let users = (0..<30).map { "user-\($0)" }
            // Set up before the schedulers run: a sender would take an invitation first.
            for user in users {
                try await replicas.setUpSwitch(user, on: replicas.stores[Int.random(in: 0..<2)])
            }
            replicas.start()
            try await replicas.advance(to: Self.t0 + 24 * Self.hour + 1)
            try await eventually("every alarm sent") { try replicas.alarmIDs().count >= users.count }
            try await replicas.advance(to: Self.t0 + 24 * Self.hour + 120)
            let ids = try replicas.alarmIDs()
            #expect(ids.count == users.count, "one email per switch")
            #expect(Set(ids).count == ids.count, "no Message-ID twice")
            #expect(Set(try replicas.sink.messages().compactMap { $0["to"] as? String }).count == users.count)
        }
    }

    @Test("an alarm claimed by a process that died is sent by another when the lease runs out, once")
    func lapsedClaimTakenOver() async throws {
        try await withReplicas(count: 1) { replicas in
            // A process that died: it decided and claimed the alarm, and never sent it.
            let dead = try await replicas.openStore()
            try await replicas.setUpSwitch("mei", on: dead)
            replicas.clock.set(Self.t0 + 24 * Self.hour)
            #expect(try await dead.decideDue(now: replicas.clock.now(), limit: 10) == 1)
            let claimed = try await dead.claimDue(.email, now: replicas.clock.now(), limit: 10, lease: Self.lease)
            let alarm = try #require(claimed.first { $0.alert.kind == MessageKind.alert }?.alert)
            // The other process starts only now: it cannot have taken the alarm first.
            replicas.start()

            try await replicas.advance(to: Self.t0 + 24 * Self.hour + Self.lease - 1)
            #expect(try replicas.alarmIDs().isEmpty, "not before the lease runs out")
            try await replicas.advance(to: Self.t0 + 24 * Self.hour + Self.lease)
            try await eventually("the other process sends it") { try replicas.alarmIDs().count == 1 }
            #expect(try replicas.alarmIDs() == ["<\(alarm.id)@hearth.local>"], "the same Message-ID")
            let stored = try #require(try await replicas.stores[0].messages(of: "mei").first { $0.id == alarm.id })
            #expect(stored.state == .sent)
            #expect(stored.mayHaveArrived, "the dead process may have sent it")
            #expect(stored.attempts == 1, "its unfinished attempt does not count toward giving up")
            try await replicas.advance(to: Self.t0 + 24 * Self.hour + 3 * Self.lease)
            #expect(try replicas.alarmIDs().count == 1)
        }
    }

    @Test("a send a check-in cancelled keeps its claim while renewed past its first lease; then its outcome is written")
    func cancelledSendKeepsItsRenewedLease() async throws {
        try await withReplicas(count: 0) { replicas in
            let (sender, other) = (try await replicas.openStore(), try await replicas.openStore())
            let alarm = try await Self.claimedAlarm(of: "mei", by: sender, replicas)
            let due = Self.t0 + 24 * Self.hour
            // The user checks in while the email is under way: the alarm is cancelled.
            replicas.clock.set(due + 5)
            _ = try await other.recordHeartbeat("mei", timeZone: nil, deviceInfo: "", requestID: "late", source: "app")
            replicas.clock.set(due + 20)
            try await sender.extendClaims([alarm.claim], lease: Self.lease, now: replicas.clock.now())
            // Past the first lease, within the renewed one: no other process takes it back.
            replicas.clock.set(due + Self.lease + 10)
            _ = try await other.claimDue(.email, now: replicas.clock.now(), limit: 10, lease: Self.lease)
            let held = try #require(try await other.messages(of: "mei").first { $0.id == alarm.alert.id })
            #expect(held.state == .cancelled)
            #expect(held.claimedAt == alarm.alert.claimedAt, "still the sender's")
            #expect(try await sender.record(alarm.claim, attempt: .success(""), now: replicas.clock.now()))
            let sent = try #require(try await other.messages(of: "mei").first { $0.id == alarm.alert.id })
            #expect(sent.state == .sent && sent.claimedAt == nil)
        }
    }

    @Test("the outcome of a claim another process took over once its lease ran out is not written")
    func supersededOutcomeNotWritten() async throws {
        try await withReplicas(count: 0) { replicas in
            let (first, second) = (try await replicas.openStore(), try await replicas.openStore())
            let lapsed = try await Self.claimedAlarm(of: "mei", by: first, replicas)
            let due = Self.t0 + 24 * Self.hour
            replicas.clock.set(due + Self.lease)
            let taken = try #require(
                try await second.claimDue(.email, now: replicas.clock.now(), limit: 10, lease: Self.lease)
                    .first { $0.alert.id == lapsed.alert.id }
            )
            #expect(taken.claim != lapsed.claim)
            let failure = DeliveryFailure(message: "550 no such user", isPermanent: true, mayHaveArrived: false)
            #expect(try await !first.record(lapsed.claim, attempt: .failure(failure), now: replicas.clock.now()))
            try await first.extendClaims([lapsed.claim], lease: 3600, now: replicas.clock.now())
            let stillTaken = try #require(try await second.messages(of: "mei").first { $0.id == lapsed.alert.id })
            #expect(stillTaken.state == .pending && stillTaken.claimedAt == taken.alert.claimedAt)
            #expect(stillTaken.nextAttemptAt == replicas.clock.now() + Self.lease, "the old claim renews nothing")
            #expect(try await second.record(taken.claim, attempt: .success(""), now: replicas.clock.now()))
            #expect(try await second.messages(of: "mei").first { $0.id == lapsed.alert.id }?.state == .sent)
        }
    }

    /// `user`'s switch set up through `store`, its alarm decided when due and claimed by it.
    static func claimedAlarm(of user: String, by store: PostgresSafetyStore, _ replicas: Replicas) async throws
        -> ClaimedAlert
    {
        try await replicas.setUpSwitch(user, on: store)
        let due = Self.t0 + 24 * Self.hour
        replicas.clock.set(due)
        _ = try await store.decideDue(now: due, limit: 10)
        return try #require(
            try await store.claimDue(.email, now: due, limit: 10, lease: Self.lease)
                .first { $0.alert.kind == MessageKind.alert }
        )
    }
}

@Suite("A replica's clock against the database's", .timeLimit(.minutes(1)))
struct ReplicaClockTests {
    @Test("a process whose clock is a minute off the database's does not start; one within 5 s does")
    func skewedClockRefused() async throws {
        try await withPostgresServer { server in
            let keys = DataKeys(ring: DataKeyRing.generate())
            for offset: TimeInterval in [60, -60] {
                do {
                    _ = try await PostgresSafetyStore.open(
                        server.location,
                        keys: keys,
                        clock: ManualClock(Date().addingTimeInterval(offset)),
                        clockTolerance: SafetyService.replicaClockTolerance,
                        logger: Replicas.logger
                    )
                    Issue.record("a clock \(offset) s off was taken")
                } catch let skew as ClockSkew {
                    #expect(abs(skew.offset - offset) < 2)
                    #expect("\(skew)".contains(offset > 0 ? "ahead of the database's" : "behind the database's"))
                }
            }
            _ = try await PostgresSafetyStore.open(
                server.location,
                keys: keys,
                clock: SystemClock(),
                clockTolerance: SafetyService.replicaClockTolerance,
                logger: Replicas.logger
            )
        }
    }
}

/// Runs `body` with `count` safety services on one PostgreSQL server (each its own pool and
/// schedulers, one clock), emails to one SMTP sink; stops all of it afterwards, awaited.
func withReplicas<T>(count: Int, _ body: (Replicas) async throws -> T) async throws -> T {
    try await withPostgresServer { server in
        try await using(try await Replicas(server: server, count: count), teardown: { await $0.stop() }, body)
    }
}

final class Replicas: Sendable {
    let server: PostgresServer
    let clock = ManualClock(ReplicaTests.t0)
    let sink: SMTPSink
    let webhook: WebhookListener
    let keyFolder: URL
    let stores: [PostgresSafetyStore]
    let services: [SafetyService]
    private let running = Mutex<[Task<Void, any Error>]>([])
    /// The stores' pools, stopped after the schedulers.
    private let extraPools = Mutex<[Task<Void, any Error>]>([])

    init(server: PostgresServer, count: Int) async throws {
        self.server = server
        self.sink = try await SMTPSink()
        self.webhook = try await WebhookListener()
        let keyFolder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-replicas-\(UUID())")
        self.keyFolder = keyFolder
        try FileManager.default.createDirectory(at: keyFolder, withIntermediateDirectories: true)
        let keyFile = keyFolder.appendingPathComponent("data.key")
        try DataKeyRing.generate().text.write(to: keyFile, atomically: true, encoding: .utf8)
        var stores: [PostgresSafetyStore] = []
        var services: [SafetyService] = []
        for _ in 0..<count {
            let store = try await Self.open(server, keyFile: keyFile, clock: self.clock)
            let service = SafetyService(
                store: store,
                channels: AlertChannels(
                    mail: SMTPClient(
                        configuration: SMTPConfiguration(host: "127.0.0.1", port: self.sink.port, security: .none)
                    ),
                    from: MailAddress("alerts@hearth.example", name: "Hearth"),
                    push: WebhookPushSender(url: "http://127.0.0.1:\(self.webhook.port)/push")
                ),
                clock: self.clock,
                logger: Self.logger,
                messageDomain: "hearth.local",
                lease: ReplicaTests.lease,
                lookAtLeastEvery: SafetyService.replicaLookEvery
            )
            stores.append(store)
            services.append(service)
            self.extraPools.withLock { $0.append(Task { try await store.database.run() }) }
        }
        self.stores = stores
        self.services = services
    }

    /// Starts every service's schedulers (their pools run from the start).
    func start() {
        for service in self.services {
            let task = Task { try await service.schedulers.runAll() }
            self.running.withLock { $0.append(task) }
        }
    }

    var keyFile: URL { self.keyFolder.appendingPathComponent("data.key") }

    static let logger: Logger = {
        var logger = Logger(label: "safety-replicas")
        logger.logLevel = .critical
        return logger
    }()

    private static func open(_ server: PostgresServer, keyFile: URL, clock: ManualClock) async throws
        -> PostgresSafetyStore
    {
        try await PostgresSafetyStore.open(
            server.location,
            keys: try DataKeys(file: keyFile),
            clock: clock,
            logger: Self.logger
        )
    }

    /// Another store on the database, its pool running until the test shuts it down.
    func openStore() async throws -> PostgresSafetyStore {
        let store = try await Self.open(self.server, keyFile: self.keyFile, clock: self.clock)
        let pool = Task { try await store.database.run() }
        self.extraPools.withLock { $0.append(pool) }
        return store
    }

    /// An armed switch for `user` (24 h, one confirmed contact at `USER@contacts.example`),
    /// checked in at the start, made through `store` (its invitation is not an alarm: left out
    /// of ``alarmIDs()``).
    func setUpSwitch(_ user: String, on store: PostgresSafetyStore) async throws {
        try await store.armSwitch(user)
    }

    /// Moves the clock and waits until every replica's schedulers handled what is due by then.
    func advance(to date: Date) async throws {
        self.clock.set(date)
        let schedulers = self.services.flatMap(\.schedulers)
        for scheduler in schedulers { scheduler.wake() }
        try await eventually("the replicas have handled what is due by now") {
            schedulers.allSatisfy { $0.hasHandled(upTo: date) }
        }
    }

    /// The Message-IDs of the alarm emails received.
    func alarmIDs() throws -> [String] {
        try self.sink.messages().filter { ($0["subject"] as? String)?.contains("Alert") == true }
            .compactMap { $0["message_id"] as? String }
    }

    func stop() async {
        let running = self.running.withLock { $0 }
        for task in running { task.cancel() }
        for task in running { _ = try? await task.value }
        for pool in self.extraPools.withLock({ $0 }) {
            pool.cancel()
            _ = try? await pool.value
        }
        await self.webhook.close()
        self.sink.stop()
        try? FileManager.default.removeItem(at: self.keyFolder)
    }
}
