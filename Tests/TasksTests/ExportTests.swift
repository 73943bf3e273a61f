import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

@Suite("Tasks: a user's export", .timeLimit(.minutes(1)))
struct ExportTests {
    /// The offer an event made; nil when it was suppressed.
    static func offer(_ response: Hearth_Tasks_V1_ReportLocationEventResponse) -> Hearth_Tasks_V1_Offer? {
        if case .offer(let offer)? = response.decision { return offer }
        return nil
    }

    /// How many rows `query` counts for `user` (the one argument).
    static func count(_ query: String, of user: String, in system: TasksSystem) async throws -> Int {
        try await system.service.store.base.writer.read { db in
            try Int.fetchOne(db, sql: query, arguments: [user]) ?? -1
        }
    }

    @Test(
        "userExport: every task, prompt, check-in, activity, preference, offer and location event of mei's, as her calls answer them"
    )
    func exportsOneUser() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            let mei = try await system.create("mei", title: "Should I move to Lisbon?", days: 2)
            let kai = try await system.create("kai", title: "Should I sell the boat?", days: 2)
            let short = try await system.create(
                "mei",
                title: "Should I learn the cello?",
                times: [TasksSystem.time(.morning)],
                days: 1
            )
            let dropped = try await system.create(
                "mei",
                title: "Should I buy a van?",
                times: [TasksSystem.time(.morning)],
                days: 2
            )
            _ = try await system.service.cancelTask(.with { $0.taskID = dropped.task.id }, callContext("mei"))
            // 09:30 in New York: the morning prompts are due.
            let reportedAt = at("2026-06-01T13:30:00Z")
            try await system.advance(to: reportedAt)
            var gyms: [String: String] = [:]
            var offers: [String: Hearth_Tasks_V1_Offer] = [:]
            for (user, created) in [("mei", mei), ("kai", kai)] {
                let (activities, gym) = try await system.useEveryPart(user, created, activity: "Gym with \(user)")
                gyms[user] = gym
                let response = try await activities.report(gym, event: "e-1")
                let made: Hearth_Tasks_V1_Offer? = Self.offer(response)
                #expect(made != nil, "the event made an offer")
                offers[user] = made
            }
            let meiTasks = [mei.task.id, short.task.id, dropped.task.id]
            let meiGym = try #require(gyms["mei"])
            let meiOffer = try #require(offers["mei"])
            let kaiGym = try #require(gyms["kai"])
            let kaiOffer = try #require(offers["kai"])
            let a = Activities(system: system, user: "mei")
            // A minute later mei's phone reports e-1 again (a repeat, recorded apart); a minute
            // after that, an arrival at the gym, which her rule (on leaving) does not ask for.
            try await system.advance(by: 60)
            let repeatedAt = system.clock.now()
            #expect(try await a.reason(meiGym, event: "e-1") == .duplicateEvent)
            try await system.advance(by: 60)
            let arrivedAt = system.clock.now()
            #expect(try await a.reason(meiGym, .arrive, event: "e-2") == .triggerMismatch)

            let export = try await system.service.userExport(of: "mei", language: .english)

            // Tasks: oldest first, each as GetTask and ListTasks (newest first) answer it.
            #expect(export.tasks.map(\.id) == meiTasks)
            let listed = try await system.listTasks(user: "mei").tasks
            #expect(export.tasks == Array(listed.reversed()))
            let detail = try await system.task(mei.task.id, user: "mei")
            #expect(export.tasks.first == detail.task)
            #expect(export.tasks.map(\.state) == [.active, .active, .cancelled])
            // Prompts: all of them, every task's (the cancelled one's too), by due time, as
            // ListPrompts answers them.
            var prompts: [Hearth_Tasks_V1_Prompt] = []
            for id in meiTasks { prompts += try await system.prompts(id, user: "mei") }
            let byDueTime = prompts.sorted { ($0.scheduledAt.date, $0.id) < ($1.scheduledAt.date, $1.id) }
            #expect(export.prompts == byDueTime)
            let promptRows = try await Self.count(
                "SELECT COUNT(*) FROM prompt WHERE user_id = ?",
                of: "mei",
                in: system
            )
            #expect(export.prompts.count == promptRows)
            #expect(export.prompts.count == 7, "4 + 1 + 2")
            // Check-ins: the answer and the extra one, as GetTask answers them.
            #expect(export.checkIns == detail.checkIns)
            let checkInRows = try await Self.count(
                "SELECT COUNT(*) FROM check_in WHERE user_id = ?",
                of: "mei",
                in: system
            )
            #expect(export.checkIns.count == checkInRows)
            #expect(export.checkIns.count == 2)
            // Both recorded the same millisecond: in id order, as GetTask lists them.
            #expect(Set(export.checkIns.map(\.promptID)) == [mei.nextPrompt.id, ""])
            // The activity with its rule, as GetActivity answers it; the preferences; the offer.
            let gym = try await a.service.getActivity(.with { $0.activityID = meiGym }, a.context)
            #expect(export.activities == [gym])
            #expect(export.activities.first?.hasRule == true)
            #expect(export.hasOfferPreferences)
            let preferences = try await a.service.getOfferPreferences(.init(), a.context)
            #expect(export.offerPreferences == preferences)
            #expect(export.offerPreferences.timeZone == "America/New_York")
            #expect(export.permissions == preferences.permissions, "as last reported")
            #expect(export.permissions.location == .locationAlways)
            #expect(export.offers == [meiOffer])
            // Location events: each as first reported, with what came of it (the offer, or why
            // none), by when it occurred; the repeated report apart, with what it was answered.
            #expect(export.locationEvents.map(\.clientEventID) == ["e-1", "e-2"])
            #expect(export.locationEvents.map(\.activityID) == [meiGym, meiGym])
            #expect(export.locationEvents.map(\.trigger) == [.leave, .arrive])
            #expect(export.locationEvents.map(\.occurredAt.date) == [reportedAt, arrivedAt])
            #expect(export.locationEvents.map(\.receivedAt.date) == [reportedAt, arrivedAt])
            #expect(export.locationEvents.map(\.offerID) == [meiOffer.offerID, ""])
            #expect(export.locationEvents.map(\.suppressionReason) == [.unspecified, .triggerMismatch])
            let eventRows = try await Self.count(
                "SELECT COUNT(*) FROM location_event WHERE user_id = ?",
                of: "mei",
                in: system
            )
            #expect(export.locationEvents.count == eventRows)
            #expect(export.locationEventRepeats.map(\.clientEventID) == ["e-1"])
            #expect(export.locationEventRepeats.map(\.occurredAt.date) == [repeatedAt])
            #expect(export.locationEventRepeats.map(\.receivedAt.date) == [repeatedAt])
            #expect(export.locationEventRepeats.map(\.suppressionReason) == [.duplicateEvent])

            // Nothing of kai's.
            #expect(export.prompts.allSatisfy { meiTasks.contains($0.taskID) })
            #expect(export.checkIns.allSatisfy { $0.taskID == mei.task.id })
            #expect(export.offers.allSatisfy { $0.activityID == meiGym })
            let bytes = try export.serializedData()
            for kais in ["Should I sell the boat?", "Gym with kai", kai.task.id, kaiGym, kaiOffer.offerID] {
                #expect(bytes.range(of: Data(kais.utf8)) == nil, "\(kais) is kai's")
            }
            let kais = try await system.service.userExport(of: "kai", language: .english)
            #expect(kais.tasks.map(\.id) == [kai.task.id])
            #expect(kais.activities.map(\.id) == [kaiGym])
            #expect(kais.offers == [kaiOffer])
            #expect(kais.checkIns.count == 2 && kais.prompts.count == 4)
            #expect(kais.locationEvents.map(\.clientEventID) == ["e-1"], "the same id as mei's, his own")
            #expect(kais.locationEvents.map(\.activityID) == [kaiGym])
            #expect(kais.locationEvents.map(\.offerID) == [kaiOffer.offerID])
            #expect(kais.locationEventRepeats.isEmpty)

            // A day later the one-day task has ended: there still, COMPLETED, as ListTasks says.
            try await system.advance(to: at("2026-06-02T05:00:00Z"))
            let later = try await system.service.userExport(of: "mei", language: .english)
            #expect(later.tasks.map(\.state) == [.active, .completed, .cancelled])
            let listedLater = try await system.listTasks(user: "mei").tasks
            #expect(later.tasks == Array(listedLater.reversed()))
            #expect(later.prompts.count == 7 && later.checkIns == export.checkIns)
            #expect(later.locationEvents == export.locationEvents)
            #expect(later.locationEventRepeats == export.locationEventRepeats)
        }
    }

    @Test("a user with nothing gets an empty export; preferences never set are unset, the activity read in UTC")
    func emptyExport() async throws {
        try await withTasksSystem(now: noon) { system in
            _ = try await system.create("kai")
            let kai = Activities(system: system, user: "kai")
            try await kai.preferences()
            _ = try await kai.create()

            #expect(
                try await system.service.userExport(of: "nobody", language: .english) == Hearth_Tasks_V1_UserExport()
            )

            let lee = Activities(system: system, user: "lee")
            let walk = try await lee.create("Walk the dog", repeat: .daily)
            _ = try await lee.service.completeActivity(.with { $0.activityID = walk }, lee.context)
            let export = try await system.service.userExport(of: "lee", language: .english)
            #expect(!export.hasOfferPreferences, "never set")
            let answered = try await lee.service.getActivity(.with { $0.activityID = walk }, lee.context)
            #expect(export.activities == [answered])
            #expect(export.activities.first?.done == true)
            #expect(export.tasks.isEmpty && export.prompts.isEmpty && export.checkIns.isEmpty && export.offers.isEmpty)
            #expect(export.locationEvents.isEmpty && export.locationEventRepeats.isEmpty)
        }
    }
}
