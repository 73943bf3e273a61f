import Foundation
import HearthCore
import Testing

@testable import HearthContactPage

/// The contact page's words and the language it picks from a browser's Accept-Language. Pure.
@Suite("Contact page texts and language")
struct PageTextsTests {
    static let person = "Mei"

    @Test("Accept-Language picks zh-Hant for Taiwan, Hong Kong, Macau and the Hant script")
    func traditional() {
        let headers = ["zh-TW", "zh-HK", "zh-MO", "zh-Hant", "zh-Hant-TW", "ZH-tw", "zh_TW", "zh-TW,zh;q=0.9,en;q=0.8"]
        for header in headers {
            #expect(PageLanguage.fromAcceptLanguage(header) == .traditionalChinese, "\(header)")
        }
    }

    @Test("Accept-Language picks zh-Hans for mainland China, Singapore, the Hans script and plain zh")
    func simplified() {
        for header in ["zh-CN", "zh-SG", "zh", "zh-Hans", "zh-Hans-HK", "zh-CN,zh;q=0.9", " zh-cn ; q=0.8 "] {
            #expect(PageLanguage.fromAcceptLanguage(header) == .simplifiedChinese, "\(header)")
        }
    }

    @Test("Accept-Language picks English for any en, even listed after a language the page lacks")
    func english() {
        let headers = ["en", "en-US", "en-GB,en;q=0.9", "fr, en;q=0.5", "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5"]
        for header in headers {
            #expect(PageLanguage.fromAcceptLanguage(header) == .english, "\(header)")
        }
    }

    @Test("Accept-Language with none of the page's languages gives nil")
    func none() {
        for header in ["fr", "", " ", "*", "de-DE, ja;q=0.5", "zh;q=0", "en;q=0, fr", "english", "zhx", ",;,"] {
            #expect(PageLanguage.fromAcceptLanguage(header) == nil, "\(header)")
        }
    }

    @Test("Accept-Language respects q-values, not only the order; of equal q the first wins")
    func qValues() {
        #expect(PageLanguage.fromAcceptLanguage("en;q=0.1, zh-HK;q=0.9") == .traditionalChinese)
        #expect(PageLanguage.fromAcceptLanguage("zh-CN;q=0.5, en") == .english)
        #expect(PageLanguage.fromAcceptLanguage("zh-TW;q=0.8, zh-CN;q=0.8") == .traditionalChinese)
        #expect(PageLanguage.fromAcceptLanguage("en;q=0.8, zh-CN;q=0.8") == .english)
        #expect(PageLanguage.fromAcceptLanguage("en;q=0.3, zh;Q=0.7") == .simplifiedChinese)
        #expect(
            PageLanguage.fromAcceptLanguage("zh-TW;q=abc, en;q=0.2") == .english,
            "an unreadable q counts for nothing"
        )
    }

    @Test("each language's lang attribute and name")
    func languageNames() {
        #expect(PageLanguage.allCases.map(\.htmlLang) == ["en", "zh-Hans", "zh-Hant"])
        #expect(Set(PageLanguage.allCases.map(\.nativeName)).count == PageLanguage.allCases.count)
        #expect(PageTexts.product == "Hearth")
    }

    /// Every text of `texts`: its name, its title and paragraphs (and button), and whether it takes a person.
    static func all(_ texts: PageTexts) -> [(name: String, strings: [String], person: Bool)] {
        let person = Self.person
        var all: [(name: String, strings: [String], person: Bool)] = []
        for (name, prompt) in [
            ("confirmPrompt", texts.confirmPrompt(person: person)),
            ("declinePrompt", texts.declinePrompt(person: person)),
            ("optOutPrompt", texts.optOutPrompt(person: person)),
        ] {
            all.append((name, [prompt.title, prompt.button] + prompt.paragraphs, true))
        }
        for (name, page) in [
            ("confirmed", texts.confirmed(person: person)),
            ("declined", texts.declined(person: person)),
            ("optedOut", texts.optedOut(person: person)),
            ("expired", texts.expired(person: person)),
            ("alreadyConfirmed", texts.alreadyAnswered(person: person, confirmed: true)),
            ("alreadyDeclined", texts.alreadyAnswered(person: person, confirmed: false)),
        ] {
            all.append((name, [page.title] + page.paragraphs, true))
        }
        all.append(("notFound", [texts.notFound.title] + texts.notFound.paragraphs, false))
        all.append(("footer", [texts.footer], false))
        all.append(("languageLabel", [texts.languageLabel], false))
        return all
    }

    @Test("every text in every language is there, and names the person where it takes one")
    func everyText() {
        for language in PageLanguage.allCases {
            let texts = PageTexts(language: language)
            for text in Self.all(texts) {
                #expect(!text.strings.isEmpty, "\(language) \(text.name)")
                for string in text.strings {
                    #expect(
                        !string.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                        "\(language) \(text.name)"
                    )
                }
                if text.person {
                    #expect(text.strings.joined().contains(Self.person), "\(language) \(text.name)")
                }
            }
            // The prompts have one to three paragraphs.
            for prompt in [
                texts.confirmPrompt(person: Self.person), texts.declinePrompt(person: Self.person),
                texts.optOutPrompt(person: Self.person),
            ] {
                #expect((1...3).contains(prompt.paragraphs.count), "\(language)")
            }
            // A link that leads nowhere says nothing about anyone.
            #expect(!([texts.notFound.title] + texts.notFound.paragraphs).joined().contains(Self.person))
            #expect(texts.footer.contains("JavaScript"), "\(language)")
        }
    }

    @Test("the languages differ, and the two answers to an earlier link differ")
    func textsDiffer() {
        let confirms = PageLanguage.allCases.map { PageTexts(language: $0).confirmPrompt(person: Self.person).title }
        #expect(Set(confirms).count == PageLanguage.allCases.count)
        for language in PageLanguage.allCases {
            let texts = PageTexts(language: language)
            #expect(
                texts.alreadyAnswered(person: Self.person, confirmed: true).title
                    != texts.alreadyAnswered(person: Self.person, confirmed: false).title
            )
            let buttons = [
                texts.confirmPrompt(person: Self.person).button, texts.declinePrompt(person: Self.person).button,
                texts.optOutPrompt(person: Self.person).button,
            ]
            #expect(Set(buttons).count == 3, "\(language)")
        }
    }
}
