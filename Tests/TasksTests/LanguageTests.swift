import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

@Suite("Tasks in the user's language: prompts, their pushes, offers", .timeLimit(.minutes(1)))
struct TaskLanguageTests {
    @Test("the catalog has every key in en, zh-Hans and zh-Hant, with the same placeholders")
    func catalogWhole() {
        #expect(TaskText.catalog.gaps == [])
    }

    @Test("a task created in zh-TW: its prompts and their push in Traditional Chinese; without a language, English")
    func prompts() async throws {
        try await withTasksSystem(now: earlyMonday) { system in
            var request = Hearth_Tasks_V1_CreateTaskRequest()
            request.title = "要不要搬到里斯本？"
            request.checkInTimes = [TasksSystem.time(.morning), TasksSystem.time(.evening)]
            request.durationDays = 2
            request.timeZone = "America/New_York"
            let created = try await system.service.createTask(request, callContext("ana", language: "zh-TW,zh;q=0.9"))
            let prompts = try await system.prompts(created.task.id)
            #expect(prompts[0].question == "早安！來看看「要不要搬到里斯本？」。今天關於它，什麼最重要？")
            #expect(prompts[0].context == "第 1 天（共 2 天）：「要不要搬到里斯本？」的早晨記錄")
            #expect(prompts[1].question.hasPrefix("晚上好！回顧今天"))
            try await system.advance(to: at("2026-06-01T13:00:00Z"))
            let body =
                try JSONSerialization.jsonObject(with: try #require(system.webhook.received.first).body)
                as? [String: Any]
            #expect(body?["title"] as? String == "該記錄一下了" && body?["body"] as? String == prompts[0].question)

            let english = try await system.create("ben", days: 1)
            #expect(english.nextPrompt.question.hasPrefix("Good "))
            #expect(english.nextPrompt.context.hasPrefix("Day 1 of 1: "))
        }
    }

    @Test("an offer's words are in the language of the call that reads it")
    func offers() async throws {
        try await withTasksSystem(now: noon) { system in
            let a = Activities(system: system)
            try await a.preferences()
            let gymID = try await a.create("健身")
            try await a.rule(gymID)
            var event = Hearth_Tasks_V1_ReportLocationEventRequest()
            event.activityID = gymID
            event.trigger = .leave
            event.occurredAt = Google_Protobuf_Timestamp(date: noon)
            event.appState = .foreground
            event.clientEventID = "e-1"
            let made = try await a.service.reportLocationEvent(event, callContext("ana", language: "zh-CN"))
            #expect(made.offer.title == "标记为完成？" && made.offer.body == "你完成“健身”了吗？")
            let listed = try await a.service.listPendingOffers(.init(), callContext("ana", language: "zh-Hant"))
            #expect(listed.offers.map(\.title) == ["標記為完成？"])
            #expect(try await a.pending().map(\.title) == ["Mark done?"], "no language: English")
        }
    }
}

@Suite("Text catalogs")
struct TextCatalogTests {
    enum Key: CaseIterable, Sendable { case greeting, farewell }

    @Test("a catalog missing a language, an empty text or a placeholder is told; values go in once")
    func gaps() {
        let broken = TextCatalog<Key>([
            .greeting: [.english: "Hi {name}", .simplifiedChinese: "你好", .traditionalChinese: "你好 {name}"],
            .farewell: [.english: "Bye", .simplifiedChinese: ""],
        ])
        #expect(
            broken.gaps == [
                "greeting in zh-Hans has placeholders [], not [\"name\"]",
                "farewell has no zh-Hans text",
                "farewell has no zh-Hant text",
            ]
        )
        // A value holding a placeholder is not filled again; an unknown one stays.
        #expect(broken.text(.greeting, .english, ["name": "{name}"]) == "Hi {name}")
        #expect(broken.text(.greeting, .traditionalChinese) == "你好 {name}")
        #expect(broken.text(.farewell, .traditionalChinese) == "Bye", "English when a language lacks it")
    }

    @Test("Accept-Language as apps send it picks the language; none Hearth writes gives nil")
    func acceptLanguage() {
        #expect(UserLanguage.fromAcceptLanguage("zh-TW,zh;q=0.9,en;q=0.8") == .traditionalChinese)
        #expect(UserLanguage.fromAcceptLanguage("zh-Hans-CN") == .simplifiedChinese)
        #expect(UserLanguage.fromAcceptLanguage("fr-FR, en;q=0.5") == .english)
        #expect(UserLanguage.fromAcceptLanguage("fr-FR") == nil)
        #expect(callContext("ana", language: "zh-HK").language == .traditionalChinese)
        #expect(callContext("ana").language == nil)
    }
}
