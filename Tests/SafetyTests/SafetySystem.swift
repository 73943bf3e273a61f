import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthMail
import HearthPostgres
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Synchronization
import Testing

@testable import SafetyService

/// Runs `body` with the safety service on a new file store (``SafetySystem``), and stops it (its
/// schedulers, the webhook, the SMTP sink) afterwards, awaited, whether `body` throws or not.
/// - Parameters:
///   - start: the clock's time at first.
///   - smtpPort: where emails go; the sink's port unless given.
func withSafetySystem<T>(
    store: StoreKind = .sqlite,
    start: Date = SafetySystem.start,
    smtpPort: Int? = nil,
    _ body: (SafetySystem) async throws -> T
) async throws -> T {
    try await using(
        SafetySystem(store: store, start: start, smtpPort: smtpPort),
        teardown: { await $0.stop() },
        body
    )
}

/// Which store the service runs on: its SQLite file, or a real PostgreSQL server of the test's.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { self.rawValue }
}

/// The safety service on a file store with its schedulers running on a clock the test moves;
/// emails go to a real SMTP server (aiosmtpd), pushes to a real webhook. Made by
/// ``withSafetySystem(start:smtpPort:_:)``.
final class SafetySystem: Sendable {
    /// 2026-03-10 12:00 UTC.
    static let start = Date(timeIntervalSince1970: 1_773_144_000)

    let clock: ManualClock
    let sink: SMTPSink
    let webhook: WebhookListener
    let file: TemporaryStoreFile
    /// The PostgreSQL server the store is on; nil on the SQLite file.
    let postgres: PostgresServer?
    /// Where emails go: the sink's port unless the test names another server.
    let smtpPort: Int
    /// The service and its running schedulers; replaced by a restart.
    private let state: Mutex<(service: SafetyService, running: Task<Void, any Error>)>

    var service: SafetyService { self.state.withLock { $0.service } }

    fileprivate init(store: StoreKind, start: Date, smtpPort: Int?) async throws {
        self.clock = ManualClock(start)
        self.sink = try await SMTPSink()
        self.webhook = try await WebhookListener()
        self.smtpPort = smtpPort ?? self.sink.port
        self.file = try TemporaryStoreFile()
        self.postgres = store == .postgres ? try await PostgresServer() : nil
        try DataKeyRing.generate().text.write(to: Self.keyFile(of: self.file), atomically: true, encoding: .utf8)
        let started = try await Self.start(self.file, self.postgres, self.clock, self.smtpPort, self.webhook)
        self.state = Mutex((started.0, started.1))
    }

    var storePath: String { self.file.path }
    /// The data key file safety is started with (a rotation rewrites it).
    var keyFile: URL { Self.keyFile(of: self.file) }

    private static func keyFile(of file: TemporaryStoreFile) -> URL {
        file.folder.appendingPathComponent("data.key")
    }

    private static func start(
        _ file: TemporaryStoreFile,
        _ postgres: PostgresServer?,
        _ clock: ManualClock,
        _ smtpPort: Int,
        _ webhook: WebhookListener
    ) async throws -> (SafetyService, Task<Void, any Error>) {
        var logger = Logger(label: "safety-test")
        logger.logLevel = .critical
        let channels = AlertChannels(
            mail: SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: smtpPort, security: .none)),
            from: MailAddress("alerts@hearth.example", name: "Hearth"),
            push: WebhookPushSender(url: "http://127.0.0.1:\(webhook.port)/push")
        )
        let keys = try DataKeys(file: Self.keyFile(of: file))
        guard let postgres else {
            let service = try SafetyService(
                location: file.location,
                keys: keys,
                channels: channels,
                clock: clock,
                logger: logger
            )
            return (service, Task { try await service.schedulers.runAll() })
        }
        let store = try await PostgresSafetyStore.open(postgres.location, keys: keys, clock: clock, logger: logger)
        let service = SafetyService(
            store: store,
            channels: channels,
            clock: clock,
            logger: logger,
            messageDomain: "hearth.local"
        )
        // The pool stops last, as in a process: the schedulers' last sends record their outcomes.
        let running = Task {
            let pool = Task { try await store.database.run() }
            let work = Task { try await service.schedulers.runAll() }
            let schedulers = await withTaskCancellationHandler {
                await work.result
            } onCancel: {
                work.cancel()
            }
            pool.cancel()
            _ = await pool.result
            try schedulers.get()
        }
        return (service, running)
    }

    /// Stops the process (its schedulers) and starts it again on the same file.
    func restart(after change: () -> Void = {}) async throws {
        await self.halt()
        change()
        let started = try await Self.start(self.file, self.postgres, self.clock, self.smtpPort, self.webhook)
        self.state.withLock { $0 = (started.0, started.1) }
    }

    /// Stops the process (its schedulers), runs `body` on its service, and starts it again on
    /// the same file.
    func whileStopped(_ body: (SafetyService) async throws -> Void) async throws {
        await self.halt()
        try await body(self.service)
        let started = try await Self.start(self.file, self.postgres, self.clock, self.smtpPort, self.webhook)
        self.state.withLock { $0 = (started.0, started.1) }
    }

    private func halt() async {
        let running = self.state.withLock { $0.running }
        running.cancel()
        _ = try? await running.value
    }

    fileprivate func stop() async {
        await self.halt()
        await self.postgres?.remove()
        await self.webhook.close()
        self.sink.stop()
    }

    /// Moves the clock, then waits until the schedulers have handled everything due by then.
    func advance(to date: Date) async throws {
        self.clock.set(date)
        try await self.settle()
    }

    /// Makes the schedulers look (as a change that schedules something does) and waits until
    /// each has finished a pass begun since, and the senders one after what the decider woke
    /// them for.
    func settle() async throws {
        let now = self.clock.now()
        // The decider first: it wakes the senders before it sleeps.
        let schedulers = self.service.schedulers
        for scheduler in schedulers { scheduler.wake() }
        try await eventually("the schedulers have handled what is due by now") {
            schedulers.allSatisfy { $0.hasHandled(upTo: now) }
        }
    }

    func profile(
        _ user: String = "mei",
        name: String = "Mei Chen",
        threshold: UInt32 = 24,
        language: String = "en",
        zone: String = "America/Los_Angeles",
        contacts: [String] = ["brother@example.com"],
        reminder: (hour: UInt32, minute: UInt32)? = nil,
        countActivity: Bool = false,
        active: Bool? = nil,
        confirmedByEmail: Bool = true
    ) async throws {
        var request = Hearth_Safety_V1_UpsertProfileRequest()
        request.countActivityAsCheckIn = countActivity
        if let active { request.isActive = active }
        if let reminder {
            request.dailyReminder = .with {
                $0.enabled = true
                $0.hour = reminder.hour
                $0.minute = reminder.minute
            }
        }
        request.name = name
        request.email = "\(user)@example.com"
        request.thresholdHours = threshold
        request.preferredLanguage = language
        request.timeZone = zone
        request.pushToken = "device-\(user)"
        _ = try await self.service.upsertProfile(request, callContext(user))
        // They agree, from the links in their invitations; or, for a mail server that must get
        // nothing but alarms, from links made in the store, their invitations never sent (added
        // through the store, which wakes no sender, and cancelled before any looks).
        guard confirmedByEmail else {
            // With the schedulers stopped, so that no sender claims an invitation first.
            try await self.whileStopped { service in
                for email in contacts { _ = try await service.store.addContact(user, email: email, name: "") }
                try await service.confirmWithoutMail(user)
            }
            return
        }
        for email in contacts {
            var contact = Hearth_Safety_V1_AddContactRequest()
            contact.email = email
            _ = try await self.service.addContact(contact, callContext(user))
        }
        if !contacts.isEmpty { try await self.confirmInvitations() }
    }

    /// Heartbeat rows kept without counting toward the rate limit.
    func uncountedHeartbeats() async throws -> Int {
        try await self.service.uncountedHeartbeats()
    }

    @discardableResult
    func checkIn(_ user: String = "mei", id: String = UUID().uuidString) async throws -> Hearth_Safety_V1_Status {
        var request = Hearth_Safety_V1_RecordHeartbeatRequest()
        request.clientRequestID = id
        request.deviceInfo = "test phone"
        return try await self.service.recordHeartbeat(request, callContext(user))
    }

    /// An answered task prompt, as the tasks service forwards it; whether it counted.
    @discardableResult
    func forwardTaskAnswer(_ eventID: String, at: Date, user: String = "mei") async throws -> Bool {
        try await self.service.forwardActivity(
            .with {
                $0.source = "tasks"
                $0.eventID = eventID
                $0.occurredAt = Google_Protobuf_Timestamp(date: at)
            },
            callContext(user)
        ).counted
    }

    func status(_ user: String = "mei") async throws -> Hearth_Safety_V1_Status {
        try await self.service.getStatus(Hearth_Safety_V1_GetStatusRequest(), callContext(user))
    }

    /// Push kinds received so far, e.g. `safety.warning_180`, but the user's news of their
    /// contacts (`safety.contact_confirmed`, ...: ``contactPushes()``).
    func pushes() throws -> [String] {
        try self.allPushes().filter { !$0.hasPrefix("safety.contact_") }
    }

    /// The user's news of their contacts received so far, e.g. `safety.contact_confirmed`.
    func contactPushes() throws -> [String] {
        try self.allPushes().filter { $0.hasPrefix("safety.contact_") }
    }

    private func allPushes() throws -> [String] {
        try self.webhook.received.map { request in
            let json = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
            return json?["kind"] as? String ?? "?"
        }
    }

    /// The emails received so far, invitations aside (``invitationTokens()``).
    func emails() throws -> [(to: String, subject: String, body: String)] {
        try self.sink.messages().map {
            (($0["rcpt_tos"] as? [String])?.first ?? "", $0["subject"] as? String ?? "", $0["body"] as? String ?? "")
        }.filter { !$0.body.contains("/contact/confirm?t=") }
    }
}
