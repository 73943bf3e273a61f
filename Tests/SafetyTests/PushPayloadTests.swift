import Foundation
import HearthContracts
import HearthCore
import HearthPush
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

@Suite("Safety's pushes: critical warnings with buttons, and every payload against the webhook's schema")
struct PushPayloadTests {
    let hour: TimeInterval = 3600

    @Test(
        "the last warning is critical, the earlier time-sensitive, both with I'm safe and Snooze; the reminder I'm safe"
    )
    func presentation() {
        let english = AlertTexts(language: "en", name: "Mei", timeZone: .gmt, product: "Hearth")
        let last = english.presentation(ofPush: "warning_10")
        #expect(last.urgency == .critical && last.category == "SAFETY_WARNING" && last.opensCheckIn)
        #expect(last.actions.map(\.kind) == [.imSafe, .snooze])
        #expect(last.actions.map(\.title) == ["I'm safe", "Snooze 24 h"])
        for earlier in ["warning_180", "warning_60"] {
            #expect(english.presentation(ofPush: earlier).urgency == .timeSensitive)
        }
        let reminder = english.presentation(ofPush: "reminder")
        #expect(reminder.urgency == .active && reminder.actions.map(\.kind) == [.imSafe] && reminder.opensCheckIn)
        for plain in ["test", "contact_confirmed", "contact_grace_ended", "alert"] {
            #expect(english.presentation(ofPush: plain) == .plain)
        }
        let hant = AlertTexts(language: "zh-Hant", name: "Mei", timeZone: .gmt, product: "Hearth")
        #expect(hant.presentation(ofPush: "warning_60").actions.map(\.title) == ["我很安全", "延後 24 小時"])
        let hans = AlertTexts(language: "zh-Hans", name: "Mei", timeZone: .gmt, product: "Hearth")
        #expect(hans.presentation(ofPush: "warning_60").actions.map(\.title) == ["我很安全", "延后 24 小时"])
    }

    /// The webhook's JSON bodies, parsed.
    func payloads(_ system: SafetySystem) throws -> [[String: Any]] {
        try system.webhook.received.compactMap { try JSONSerialization.jsonObject(with: $0.body) as? [String: Any] }
    }

    @Test(
        "what the webhook receives: the warnings' level, buttons (with the call each makes) and deep link",
        arguments: StoreKind.allCases
    )
    func warningsAsSent(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(language: "zh-Hans", reminder: (6, 0))
            let t0 = system.clock.now()
            try await system.checkIn()
            for at in [21 * hour, 23 * hour, 24 * hour - 600] { try await system.advance(to: t0 + at) }
            try await eventually("three warnings") {
                try system.pushes().filter { $0.hasPrefix("safety.warning") }.count == 3
            }
            let byKind = Dictionary(
                try self.payloads(system).map { ($0["kind"] as? String ?? "", $0) },
                uniquingKeysWith: { first, _ in first }
            )
            let last = try #require(byKind["safety.warning_10"])
            #expect(last["interruptionLevel"] as? String == "critical")
            #expect(last["category"] as? String == "SAFETY_WARNING")
            #expect(last["deepLink"] as? String == "hearth://safety/check-in")
            let actions = try #require(last["actions"] as? [[String: String]])
            #expect(actions.map { $0["id"] } == ["IM_SAFE", "SNOOZE"])
            #expect(actions.map { $0["title"] } == ["我很安全", "延后 24 小时"])
            #expect(
                actions.map { $0["method"] } == [
                    "hearth.safety.v1.Safety/RecordHeartbeat", "hearth.safety.v1.Safety/Snooze",
                ]
            )
            #expect(byKind["safety.warning_180"]?["interruptionLevel"] as? String == "time-sensitive")
            #expect(byKind["safety.warning_60"]?["interruptionLevel"] as? String == "time-sensitive")
            // The test push is plain: no category, buttons or link.
            _ = try await system.service.sendTest(.with { $0.channel = .push }, callContext("mei"))
            try await system.settle()
            try await eventually("the test push") { try system.pushes().contains("safety.test") }
            let test = try #require(try self.payloads(system).first { $0["kind"] as? String == "safety.test" })
            #expect(test["interruptionLevel"] as? String == "active")
            #expect(test["category"] == nil && test["actions"] == nil && test["deepLink"] == nil)
        }
    }

    @Test(
        "every payload safety sends, and one as checkins and tasks send them, passes the schema; a wrong one fails",
        arguments: StoreKind.allCases
    )
    func schema(store: StoreKind) async throws {
        try await withScratchFolder("hearth-push-schema") { folder in
            var files: [String] = []
            var kinds: Set<String> = []
            func keep(_ body: Data, _ name: String) throws {
                let file = folder.appendingPathComponent("\(name).json")
                try body.write(to: file)
                files.append(file.path)
                let json = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                kinds.insert(json?["kind"] as? String ?? "?")
            }
            try await withSafetySystem(store: store) { system in
                try await system.profile(reminder: (6, 0))
                let t0 = system.clock.now()
                try await system.advance(to: t0 + hour)
                for at in [21 * hour, 23 * hour, 24 * hour - 600] { try await system.advance(to: t0 + at) }
                _ = try await system.service.sendTest(.with { $0.channel = .push }, callContext("mei"))
                try await system.settle()
                try await eventually("the reminder, three warnings and the test") { try system.pushes().count == 5 }
                for (index, request) in system.webhook.received.enumerated() {
                    try keep(request.body, "safety-\(index)")
                }
            }
            // A message with none of the optional fields, as checkins and tasks send theirs, through
            // the same sender.
            let webhook = try await WebhookListener()
            try await WebhookPushSender(url: "http://127.0.0.1:\(webhook.port)/push").send(
                PushMessage(
                    userID: "ana",
                    kind: "checkin.created",
                    title: "New check-in",
                    body: "Your sitter: fed the cat",
                    data: ["session_id": "s-1"],
                    createdAt: Date(timeIntervalSince1970: 1_780_000_000.25)
                )
            )
            try keep(try #require(webhook.received.first).body, "checkins")
            await webhook.close()

            let schema = repositoryRoot.appendingPathComponent("schemas/push-webhook.schema.json").path
            let check = repositoryRoot.appendingPathComponent("scripts/check-json-schema")
            let valid = try await runProcess(check, [schema] + files)
            #expect(valid.status == 0, "\(valid.stdout)\(valid.stderr)")
            #expect(
                kinds == [
                    "safety.reminder", "safety.warning_180", "safety.warning_60", "safety.warning_10", "safety.test",
                    "safety.contact_confirmed", "checkin.created",
                ]
            )

            // The check can fail: a level the schema does not name, a button without its call.
            var wrong = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: files[1])))
                    as? [String: Any]
            )
            wrong["interruptionLevel"] = "loud"
            wrong["actions"] = [["id": "IM_SAFE", "title": "I'm safe"]]
            try keep(try JSONSerialization.data(withJSONObject: wrong), "wrong")
            let invalid = try await runProcess(check, [schema, files.last!])
            #expect(invalid.status == 1)
            #expect(invalid.stdout.contains("interruptionLevel") && invalid.stdout.contains("'method' is a required"))
        }
    }
}
