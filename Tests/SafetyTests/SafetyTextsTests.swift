import Foundation
import HearthCore
import Testing

@testable import SafetyService

/// Safety's catalog is its texts' functions (AlertTexts, ContactTexts): a `switch` over the
/// language in each, which the compiler holds to every language. This holds each to saying
/// something, in that language: none empty, the Chinese ones in Chinese characters and apart
/// from the English, Simplified apart from Traditional where the script differs.
@Suite("Safety's texts: every one in every language")
struct SafetyTextsTests {
    static let at = Date(timeIntervalSince1970: 1_768_226_400)

    /// Every text safety writes, in `language`, by name.
    static func all(_ language: UserLanguage) -> [(name: String, text: String)] {
        let texts = AlertTexts(
            language: language.rawValue,
            name: "Mei",
            timeZone: TimeZone(identifier: "Asia/Taipei")!,
            product: "Hearth"
        )
        var all: [(String, String)] = []
        func add(_ name: String, _ pair: (String, String)) {
            all.append(("\(name).subject", pair.0))
            all.append(("\(name).body", pair.1))
        }
        add(
            "alarm",
            texts.alertEmail(contactName: "Joey", lastCheckIn: Self.at, armedAt: Self.at, now: Self.at + 90_000)
        )
        add("alarm.never", texts.alertEmail(contactName: "", lastCheckIn: nil, armedAt: Self.at, now: Self.at + 90_000))
        add("allClear", texts.allClearEmail(checkedInAt: Self.at))
        for minutes in SafetyRules.warningMinutes {
            add("warning_\(minutes)", texts.warningPush(minutesBefore: minutes))
        }
        add("reminder", texts.reminderPush())
        add("test", texts.test())
        add("invitation", texts.invitationEmail(contactName: "Joey", thresholdHours: 24, expiresAt: Self.at))
        for event in ContactEvent.allCases {
            add("contact.\(event.rawValue)", texts.contactPush(event, contact: "Joey"))
        }
        add("graceEnded", texts.graceEndedPush(contact: "Joey"))
        all.append(("links", texts.contactLinks(confirm: "https://c", decline: "https://d", optOut: "https://o")))
        for action in PushPresentation.ActionKind.allCases {
            all.append(("action.\(action)", texts.action(action).title))
        }
        return all
    }

    @Test("none empty; Chinese in Chinese and apart from English; the two scripts apart overall")
    func whole() {
        let english = Self.all(.english)
        let hans = Self.all(.simplifiedChinese)
        let hant = Self.all(.traditionalChinese)
        #expect(english.map(\.name) == hans.map(\.name) && hans.map(\.name) == hant.map(\.name))
        for (index, entry) in english.enumerated() {
            #expect(!entry.text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(entry.name) in en")
            for chinese in [hans[index], hant[index]] {
                #expect(chinese.text != entry.text, "\(chinese.name) is the English text")
                #expect(
                    chinese.text.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) },
                    "\(chinese.name) has no Chinese: \(chinese.text)"
                )
            }
        }
        let differing = zip(hans, hant).filter { $0.text != $1.text }.count
        #expect(differing >= hans.count - 3, "Simplified and Traditional differ in nearly every text (\(differing))")
    }
}
