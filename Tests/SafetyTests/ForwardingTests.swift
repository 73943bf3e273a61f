import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthRelay
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Testing

@testable import CheckinsService
@testable import RoutinesService
@testable import SafetyService

/// Checkins and routines forward each check-in or tick to safety through their relays; safety
/// counts it for a user who opted in. Real RPC servers, a manual clock.
@Suite("Activity forwarded to safety", .timeLimit(.minutes(1)), .serialized)
struct ForwardingTests {
    static let secret = "forwarding-test-internal-credential-0123456789"

    /// `relay` delivering to safety on `port`, until the task is cancelled; close the client after.
    func relaying(_ relay: Relay, to port: Int) -> (RPCClient, DueTimeScheduler, Task<Void, any Error>) {
        let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
        let deliverer = relay.deliverer(client: client, credential: Self.secret, logger: Logger(label: "relay"))
        return (client, deliverer, Task { try await deliverer.run() })
    }

    func safetyService(_ clock: ManualClock) throws -> SafetyService {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let channels = AlertChannels(
            mail: LogMailTransport(logger: logger),
            from: MailAddress("alerts@hearth.example"),
            push: LogPushSender(logger: logger)
        )
        return try SafetyService(location: .inMemory, keys: .random(), channels: channels, clock: clock, logger: logger)
    }

    func optIn(_ safety: SafetyService, _ user: String, counts: Bool) async throws {
        var profile = Hearth_Safety_V1_UpsertProfileRequest()
        profile.name = "Sam"
        profile.email = "sam@example.com"
        profile.thresholdHours = 24
        profile.preferredLanguage = "en"
        profile.timeZone = "Asia/Taipei"
        profile.countActivityAsCheckIn = counts
        _ = try await safety.upsertProfile(profile, callContext(user))
    }

    /// A nest, a session for sam (begun an hour ago), and a check-in by sam taken `ago`
    /// seconds before it is sent.
    func checkIn(_ checkins: CheckinsService, _ clock: ManualClock, takenAgo ago: TimeInterval = 0) async throws {
        var nest = Hearth_Checkins_V1_CreateNestRequest()
        nest.name = "Home"
        let created = try await checkins.createNest(nest, callContext("olivia"))
        var session = Hearth_Checkins_V1_CreateSessionRequest()
        session.nestID = created.id
        session.sitterUserID = "sam"
        session.startsAt = Google_Protobuf_Timestamp(date: clock.now() - 3600)
        session.endsAt = Google_Protobuf_Timestamp(date: clock.now() + 86_400)
        session.timeZone = "Asia/Taipei"
        let sitting = try await checkins.createSession(session, callContext("olivia"))
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = sitting.id
        request.caption = "All good"
        request.capturedAt = Google_Protobuf_Timestamp(date: clock.now() - ago)
        request.clientRequestID = UUID().uuidString
        _ = try await checkins.createCheckIn(request, callContext("sam"))
    }

    func lastCheckIn(_ safety: SafetyService, _ user: String) async throws -> Date? {
        let status = try await safety.getStatus(Hearth_Safety_V1_GetStatusRequest(), callContext(user))
        return status.hasLastCheckInAt ? status.lastCheckInAt.date : nil
    }

    @Test("a check-in counts at safety for a user who opted in, not for one who did not")
    func forwarded() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let safety = try self.safetyService(clock)
        try await self.optIn(safety, "sam", counts: true)
        try await withServer(configuration: ServerConfiguration(callers: .anyMethod(Self.secret)), services: [safety]) {
            _,
            port in
            let checkins = try CheckinsService(location: .inMemory, clock: clock)
            let (client, _, running) = self.relaying(checkins.relay, to: port)
            clock.advance(by: 3600)
            // Taken 20 minutes before the upload queue sent it: counted from when it was taken.
            try await self.checkIn(checkins, clock, takenAgo: 1200)
            try await eventually("safety counted the check-in") {
                try await self.lastCheckIn(safety, "sam") == clock.now() - 1200
            }
            try await eventually("nothing left to relay") { try await checkins.relay.pending() == 0 }

            try await self.optIn(safety, "sam", counts: false)
            clock.advance(by: 3600)
            try await self.checkIn(checkins, clock)
            try await eventually("relayed") { try await checkins.relay.pending() == 0 }
            #expect(try await self.lastCheckIn(safety, "sam") == clock.now() - 4800, "not opted in: not counted")
            running.cancel()
            await client.close()
        }
    }

    @Test("a routine tick counts at safety whatever the length of the user id, for each user who ticks the action")
    func routineTicks() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let safety = try self.safetyService(clock)
        let checkins = try CheckinsService(location: .inMemory, clock: clock)
        // As long as a Sign in with Apple id and more: with it in the event id, safety refused it.
        let sitter = "001234." + String(repeating: "0123456789abcdef", count: 8) + ".1234"
        for user in ["olivia", sitter] { try await self.optIn(safety, user, counts: true) }
        try await withServer(
            configuration: ServerConfiguration(callers: .anyMethod(Self.secret)),
            services: [safety, checkins]
        ) { _, port in
            let client = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
            let roles = CheckinsNestRoles(client: client, internalCredential: Self.secret, timeout: .seconds(15))
            let routines = try RoutinesService(location: .inMemory, roles: roles, clock: clock)
            let deliverer = routines.relay.deliverer(
                client: client,
                credential: Self.secret,
                logger: Logger(label: "relay")
            )
            let running = Task { try await deliverer.run() }

            var nest = Hearth_Checkins_V1_CreateNestRequest()
            nest.name = "Home"
            let created = try await checkins.createNest(nest, callContext("olivia"))
            var session = Hearth_Checkins_V1_CreateSessionRequest()
            session.nestID = created.id
            session.sitterUserID = sitter
            session.startsAt = Google_Protobuf_Timestamp(date: clock.now() - 3600)
            session.endsAt = Google_Protobuf_Timestamp(date: clock.now() + 86_400)
            session.timeZone = "Asia/Taipei"
            _ = try await checkins.createSession(session, callContext("olivia"))
            var routine = Hearth_Routines_V1_CreateRoutineRequest()
            routine.nestID = created.id
            routine.title = "Bedtime"
            routine.actions = ["Teeth"]
            let bedtime = try await routines.createRoutine(routine, callContext("olivia"))

            clock.advance(by: 60)
            // The owner and the sitter tick the same action the same day: two users, two check-ins.
            for user in ["olivia", sitter] {
                var tick = Hearth_Routines_V1_SetActionDoneRequest()
                tick.routineID = bedtime.id
                tick.actionID = bedtime.actions[0].id
                tick.done = true
                tick.timeZone = "Asia/Taipei"
                _ = try await routines.setActionDone(tick, callContext(user))
            }
            try await eventually("nothing left to relay") { try await routines.relay.pending() == 0 }
            for user in ["olivia", sitter] {
                #expect(try await self.lastCheckIn(safety, user) == clock.now(), "\(user.prefix(10))")
            }
            running.cancel()
            await client.close()
        }
    }

    @Test("with safety down the check-in still succeeds; the forward waits and goes through once safety is back")
    func safetyDown() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let safety = try self.safetyService(clock)
        try await self.optIn(safety, "sam", counts: true)
        // A port nobody listens on yet.
        let port = try await withServer(services: []) { _, port in port }
        let checkins = try CheckinsService(location: .inMemory, clock: clock)
        let (client, deliverer, running) = self.relaying(checkins.relay, to: port)
        clock.advance(by: 60)
        let checkedInAt = clock.now()
        try await self.checkIn(checkins, clock)
        try await eventually("the first attempt failed and waits") { deliverer.passCount >= 2 && deliverer.isSleeping }
        #expect(try await checkins.relay.pending() == 1)
        try await withServer(
            configuration: ServerConfiguration(port: port, callers: .anyMethod(Self.secret)),
            services: [safety]
        ) { _, _ in
            // The relay retries on its clock; the client reconnects after its own (real) backoff.
            try await eventually("delivered after safety came back") {
                clock.advance(by: 10)
                return try await checkins.relay.pending() == 0
            }
            #expect(try await self.lastCheckIn(safety, "sam") == checkedInAt)
        }
        running.cancel()
        await client.close()
    }

    @Test("an outcome the relay cannot write fails its pass: the scheduler waits its pause, not calls again at once")
    func unrecordedOutcomeWaits() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let checkins = try CheckinsService(location: .inMemory, clock: clock)
        try await checkins.store.base.writer.write { db in
            try Relay.forwardActivity(source: "checkins", eventID: "e1", user: "sam", at: clock.now(), in: db)
            // The disk is "full" for whatever the relay writes.
            try db.execute(
                sql: """
                    CREATE TRIGGER disk_full BEFORE UPDATE ON relay_outbox
                    BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END
                    """
            )
        }
        let port = try await withServer(services: []) { _, port in port }
        let (client, deliverer, running) = self.relaying(checkins.relay, to: port)
        // Before, the pass "succeeded", the call was still due, and the next pass began at once.
        try await eventually("the failed pass waits for its retry") { deliverer.isSleeping }
        #expect(deliverer.passCount == 1)
        running.cancel()
        await client.close()
    }
}
