import Foundation
import HearthContracts
import HearthRPC
import SwiftProtobuf
import Synchronization

/// What one simulated user's calls refer to: the nest it owns and the session in it, the session
/// it sits (in the next user's nest), its routine, task and activities.
struct SimulatedWorld: Sendable {
    var nest = ""
    var ownSession = ""
    var sittingSession = ""
    var routine = ""
    var actions: [String] = []
    var task = ""
    var activities: [String] = []
}

/// The simulated users: each made as an app's user would be (through the gateway, with a token
/// of its own), then driven one call at a time by the schedule. User `u` owns a nest whose
/// session user `u - 1` sits, and sits the session in user `u + 1`'s nest: everyone posts
/// check-ins and reads those posted for them.
final class SimulatedUsers: Sendable {
    let run: String
    let count: Int
    let photo: Data?
    /// Each user's call options: a token of its own (renewed before the replay).
    private let tokens: Mutex<[CallOptions]>
    private let checkins: Hearth_Checkins_V1_Checkins.Client
    private let tasks: Hearth_Tasks_V1_Tasks.Client
    private let activities: Hearth_Tasks_V1_Activities.Client
    private let routines: Hearth_Routines_V1_Routines.Client
    private let safety: Hearth_Safety_V1_Safety.Client
    private let worlds: Mutex<[SimulatedWorld]>
    /// The newest check-in posted in each user's own session: what the owner marks viewed.
    private let latestCheckIn: Mutex<[String]>
    /// How many SetActionDone calls each user has made.
    private let ticks: Mutex<[Int]>

    init(run: String, options: [CallOptions], client: RPCClient, photo: Data?) {
        self.run = run
        self.count = options.count
        self.tokens = Mutex(options)
        self.photo = photo
        self.checkins = .init(client)
        self.tasks = .init(client)
        self.activities = .init(client)
        self.routines = .init(client)
        self.safety = .init(client)
        self.worlds = Mutex(Array(repeating: SimulatedWorld(), count: options.count))
        self.latestCheckIn = Mutex(Array(repeating: "", count: options.count))
        self.ticks = Mutex(Array(repeating: 0, count: options.count))
    }

    /// Replaces every user's options (fresh tokens), in user order.
    func renew(_ options: [CallOptions]) {
        precondition(options.count == self.count)
        self.tokens.withLock { $0 = options }
    }

    private func options(of user: Int) -> CallOptions { self.tokens.withLock { $0[user] } }

    func id(of user: Int) -> String { "sim-\(self.run)-\(user)" }

    // MARK: setting up

    /// Everything a user makes before its day: a safety profile with one contact (invited by
    /// email), a nest, a routine of five actions in it, a task with two prompts a day for 30
    /// days, offers turned on and three activities with a place rule.
    func makeOwnWorld(of user: Int) async throws {
        let options = self.options(of: user)
        var world = SimulatedWorld()
        _ = try await self.safety.upsertProfile(
            .with {
                $0.name = "User \(user)"
                $0.email = "user\(user)@sim.example"
                $0.thresholdHours = 72
                $0.preferredLanguage = "en"
                $0.timeZone = "UTC"
                $0.pushToken = "sim-\(user)"
            },
            options: options
        )
        _ = try await self.safety.addContact(
            .with {
                $0.email = "contact\(user)@sim.example"
                $0.name = "Contact \(user)"
            },
            options: options
        )
        world.nest = try await self.checkins.createNest(.with { $0.name = "Home \(user)" }, options: options).id
        let routine = try await self.routines.createRoutine(
            .with {
                $0.nestID = world.nest
                $0.title = "Evening"
                $0.category = "Evening"
                $0.actions = ["Feed the cat", "Water the plants", "Lock the door", "Lights off", "Set the alarm"]
            },
            options: options
        )
        world.routine = routine.id
        world.actions = routine.actions.map(\.id)
        world.task = try await self.tasks.createTask(
            .with {
                $0.title = "Should we move?"
                $0.checkInTimes = [.with { $0.preset = .morning }, .with { $0.preset = .evening }]
                $0.durationDays = 30
                $0.timeZone = "UTC"
                $0.clientRequestID = "\(self.run)-task-\(user)"
            },
            options: options
        ).task.id
        _ = try await self.activities.setOfferPreferences(
            .with {
                $0.enabled = true
                $0.dailyCap = 5
                $0.timeZone = "UTC"
            },
            options: options
        )
        for place in 0..<3 {
            let activity = try await self.activities.createActivity(
                .with {
                    $0.title = "Errand \(place)"
                    $0.repeat = .daily
                    $0.priority = UInt32(place + 1)
                },
                options: options
            )
            _ = try await self.activities.setLocationRule(
                .with {
                    $0.activityID = activity.id
                    $0.place = .with {
                        $0.label = "Place \(place)"
                        $0.latitude = 51.5 + Double(place) / 100
                        $0.longitude = -0.1 - Double(user % 1000) / 10000
                        $0.radiusM = 150
                    }
                    $0.trigger = .arrive
                },
                options: options
            )
            world.activities.append(activity.id)
        }
        self.worlds.withLock { $0[user] = world }
    }

    /// The session in `user`'s nest, sat by the previous user from yesterday for 30 days, and a
    /// first check-in in it (what its owner marks viewed until the day brings newer ones).
    func makeSession(of user: Int) async throws {
        let sitter = (user + self.count - 1) % self.count
        let nest = self.worlds.withLock { $0[user].nest }
        let now = Date()
        let session = try await self.checkins.createSession(
            .with {
                $0.nestID = nest
                $0.sitterUserID = self.id(of: sitter)
                $0.startsAt = Google_Protobuf_Timestamp(millisecondsOf: now.addingTimeInterval(-86_400))
                $0.endsAt = Google_Protobuf_Timestamp(millisecondsOf: now.addingTimeInterval(30 * 86_400))
                $0.timeZone = "UTC"
            },
            options: self.options(of: user)
        )
        self.worlds.withLock {
            $0[user].ownSession = session.id
            $0[sitter].sittingSession = session.id
        }
        let first = try await self.checkins.createCheckIn(
            .with {
                $0.sessionID = session.id
                $0.caption = "Arrived, all well"
                $0.capturedAt = Google_Protobuf_Timestamp(millisecondsOf: now)
                $0.clientRequestID = "\(self.run)-first-\(user)"
            },
            options: self.options(of: sitter)
        )
        self.latestCheckIn.withLock { $0[user] = first.id }
    }

    // MARK: the day's calls

    /// Makes call number `sequence` of the day, `call` by `user`.
    func perform(_ call: SimulatedCall, by user: Int, sequence: Int) async throws {
        let options = self.options(of: user)
        let world = self.worlds.withLock { $0[user] }
        let requestID = "\(self.run)-\(sequence)"
        let now = Google_Protobuf_Timestamp(millisecondsOf: Date())
        switch call {
        case .recordHeartbeat:
            _ = try await self.safety.recordHeartbeat(
                .with {
                    $0.clientRequestID = requestID
                    $0.deviceInfo = "simulated"
                },
                options: options
            )
        case .getStatus:
            _ = try await self.safety.getStatus(options: options)
        case .createCheckIn, .createPhotoCheckIn:
            let checkIn = try await self.checkins.createCheckIn(
                .with {
                    $0.sessionID = world.sittingSession
                    $0.caption = "Update \(sequence): fed, walked, all calm"
                    $0.capturedAt = now
                    $0.clientRequestID = requestID
                    if call == .createPhotoCheckIn, let photo = self.photo { $0.photo = photo }
                },
                options: options
            )
            let owner = (user + 1) % self.count
            self.latestCheckIn.withLock { $0[owner] = checkIn.id }
        case .listCheckIns:
            _ = try await self.checkins.listCheckIns(
                .with {
                    $0.sessionID = world.ownSession
                    $0.order = .newestFirst
                    $0.pageSize = 20
                },
                options: options
            )
        case .markViewed:
            let latest = self.latestCheckIn.withLock { $0[user] }
            _ = try await self.checkins.markViewed(.with { $0.checkInID = latest }, options: options)
        case .recordTaskCheckIn:
            _ = try await self.tasks.recordCheckIn(
                .with {
                    $0.taskID = world.task
                    $0.responseText = "Thought \(sequence): the numbers work if the rent stays put."
                    $0.energy = UInt32(sequence % 5 + 1)
                    $0.mood = UInt32((sequence + 2) % 5 + 1)
                    $0.clientRequestID = requestID
                },
                options: options
            )
        case .listPendingPrompts:
            _ = try await self.tasks.listPendingPrompts(options: options)
        case .listTasks:
            _ = try await self.tasks.listTasks(options: options)
        case .setActionDone:
            // The user's actions in turn, ticked on one pass and unticked on the next: every call a
            // change.
            let tick = self.ticks.withLock { ticks in
                defer { ticks[user] += 1 }
                return ticks[user]
            }
            _ = try await self.routines.setActionDone(
                .with {
                    $0.routineID = world.routine
                    $0.actionID = world.actions[tick % world.actions.count]
                    $0.done = (tick / world.actions.count) % 2 == 0
                    $0.timeZone = "UTC"
                },
                options: options
            )
        case .getProgress:
            _ = try await self.routines.getProgress(
                .with {
                    $0.routineID = world.routine
                    $0.timeZone = "UTC"
                },
                options: options
            )
        case .reportLocationEvent:
            _ = try await self.activities.reportLocationEvent(
                .with {
                    $0.activityID = world.activities[sequence % world.activities.count]
                    $0.trigger = .arrive
                    $0.occurredAt = now
                    $0.appState = .background
                    $0.clientEventID = requestID
                },
                options: options
            )
        case .listPendingOffers:
            _ = try await self.activities.listPendingOffers(options: options)
        }
    }
}
