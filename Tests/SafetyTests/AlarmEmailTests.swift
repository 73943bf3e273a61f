import Foundation
import HearthContracts
import HearthCore
import HearthTestSupport
import Testing

@testable import SafetyService

@Suite("The alarm email: the plan's template, in every language", .timeLimit(.minutes(1)))
struct AlarmEmailTests {
    let hour: TimeInterval = 3600
    /// 2026-01-12 22:00 in Taipei.
    let lastCheckIn = Date(timeIntervalSince1970: 1_768_226_400)

    func texts(_ language: String) -> AlertTexts {
        AlertTexts(
            language: language,
            name: "Joey",
            timeZone: TimeZone(identifier: "Asia/Taipei")!,
            product: "Nest Guard"
        )
    }

    @Test(
        "subject with the product and the person; Dear NAME; hours; the last check-in locally; false alarm; reach; privacy"
    )
    func template() {
        let now = self.lastCheckIn + 26 * self.hour + 59 * 60
        let expected: [String: (subject: String, lines: [String])] = [
            "en": (
                "Nest Guard Alert: Joey hasn't checked in",
                [
                    "Dear Ana,", "Joey hasn't checked in for 26 hours.", "Jan 12, 2026 at 10:00 PM GMT+8",
                    "This may be a false alarm", "Please try to reach Joey now", "Privacy: Nest Guard sends this",
                ]
            ),
            "zh-Hans": (
                "Nest Guard 警报：Joey 尚未报平安",
                [
                    "亲爱的 Ana：", "Joey 已 26 小时没有报平安。", "2026年1月12日", "这可能是误报", "请您现在尝试",
                    "隐私说明：Nest Guard 仅应",
                ]
            ),
            "zh-Hant": (
                "Nest Guard 警報：Joey 尚未報平安",
                [
                    "親愛的 Ana：", "Joey 已 26 小時沒有報平安。", "2026年1月12日", "這可能是誤報", "請您現在嘗試",
                    "隱私說明：Nest Guard 僅應",
                ]
            ),
        ]
        for (language, want) in expected {
            let email = self.texts(language).alertEmail(
                contactName: " Ana ",
                lastCheckIn: self.lastCheckIn,
                armedAt: self.lastCheckIn - 100 * self.hour,
                now: now
            )
            #expect(email.subject == want.subject)
            for line in want.lines { #expect(email.body.contains(line), "\(language): \(line) in \(email.body)") }
            #expect(!email.body.contains("Hearth"), "the product is the operator's")
        }
    }

    @Test("without the contact's name, a neutral greeting; never checked in: since the switch was armed, no hours")
    func neverCheckedIn() {
        let armedAt = self.lastCheckIn
        let now = armedAt + 24 * self.hour
        let greetings = ["en": "Hello,", "zh-Hans": "您好：", "zh-Hant": "您好："]
        let since = [
            "en": "Joey has not checked in since the switch was armed on Jan 12, 2026 at 10:00 PM GMT+8.",
            "zh-Hans": "自 2026年1月12日", "zh-Hant": "自 2026年1月12日",
        ]
        for language in ["en", "zh-Hans", "zh-Hant"] {
            let email = self.texts(language).alertEmail(contactName: "", lastCheckIn: nil, armedAt: armedAt, now: now)
            #expect(email.body.hasPrefix(greetings[language]!), "\(email.body)")
            #expect(email.body.contains(since[language]!), "\(email.body)")
            #expect(!email.body.contains("24"), "no hours since a check-in that never was: \(email.body)")
        }
    }

    @Test(
        "the alarm a contact receives greets them by the name the user gave; a user who never checked in",
        arguments: StoreKind.allCases
    )
    func delivered(store: StoreKind) async throws {
        try await withSafetySystem(store: store) { system in
            try await system.profile(contacts: [])
            var contact = Hearth_Safety_V1_AddContactRequest()
            contact.email = "brother@example.com"
            contact.name = "Joey Chen"
            _ = try await system.service.addContact(contact, callContext("mei"))
            try await system.confirmInvitations()
            let armedAt = system.clock.now()
            try await system.advance(to: armedAt + 24 * self.hour)
            try await eventually("the alarm") { try system.emails().count == 1 }
            let email = try system.emails()[0]
            #expect(email.subject == "Hearth Alert: Mei Chen hasn't checked in")
            #expect(email.body.hasPrefix("Dear Joey Chen,"), "\(email.body)")
            #expect(
                email.body.contains("has not checked in since the switch was armed on Mar 10, 2026"),
                "\(email.body)"
            )
        }
    }
}
