import Foundation
import Testing

@testable import SafetyService

private let languages = ["en", "zh-Hans", "zh-Hant"]

/// The words to and about emergency contacts (invitation, links, pushes to the user), in
/// every language. Pure: no store, no clock.
@Suite("Contact texts: the invitation, its links and the pushes, in every language")
struct ContactTextsTests {
    /// 2026-01-19 14:00 UTC: the invitation's links stop working.
    static let expiresAt = Date(timeIntervalSince1970: 1_768_831_200)
    static let confirm = "https://hearth.example/contact/confirm/AAAA1111"
    static let decline = "https://hearth.example/contact/decline/BBBB2222"
    static let optOut = "https://hearth.example/contact/stop/CCCC3333"

    static func texts(_ language: String) -> AlertTexts {
        AlertTexts(language: language, name: "Mei", timeZone: TimeZone(identifier: "Asia/Taipei")!, product: "Hearth")
    }

    /// How many times `needle` occurs in `text`.
    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }

    @Test("each language has its own invitation, none empty", arguments: languages)
    func invitationNotEmpty(language: String) {
        let email = Self.texts(language).invitationEmail(
            contactName: "Joey",
            thresholdHours: 24,
            expiresAt: Self.expiresAt
        )
        #expect(!email.subject.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        #expect(!email.body.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        if language != "en" {
            let english = Self.texts("en").invitationEmail(
                contactName: "Joey",
                thresholdHours: 24,
                expiresAt: Self.expiresAt
            )
            #expect(email.subject != english.subject && email.body != english.body)
        }
    }

    @Test(
        "the invitation names the person, the contact, the threshold and when its links expire, and has no links",
        arguments: languages
    )
    func invitationSaysWhatMatters(language: String) {
        let texts = Self.texts(language)
        for hours in [24, 48, 72] {
            let email = texts.invitationEmail(contactName: "Joey", thresholdHours: hours, expiresAt: Self.expiresAt)
            #expect(email.subject.contains("Mei"), "\(email.subject)")
            #expect(email.body.contains("Mei"), "\(email.body)")
            #expect(Self.firstLine(email.body).contains("Joey"), "\(email.body)")
            let threshold = ["en": "\(hours) hours", "zh-Hans": "\(hours) 小时", "zh-Hant": "\(hours) 小時"][language]!
            #expect(email.body.contains(threshold), "\(email.body)")
            #expect(email.body.contains(texts.localTime(Self.expiresAt)), "\(email.body)")
            #expect(!email.body.contains("http"), "the sender appends the links")
        }
    }

    @Test("the invitation's expiry is in the user's zone: 22:00 in Taipei")
    func invitationExpiryInUserZone() {
        let email = Self.texts("en").invitationEmail(contactName: "", thresholdHours: 24, expiresAt: Self.expiresAt)
        #expect(email.body.contains("Jan 19, 2026 at 10:00 PM"), "\(email.body)")
    }

    @Test("a contact without a name gets a neutral greeting, no blank where the name would be", arguments: languages)
    func invitationWithoutName(language: String) {
        let texts = Self.texts(language)
        let named = texts.invitationEmail(contactName: "Joey", thresholdHours: 24, expiresAt: Self.expiresAt)
        let unnamed = texts.invitationEmail(contactName: "", thresholdHours: 24, expiresAt: Self.expiresAt)
        let blank = texts.invitationEmail(contactName: "  \n", thresholdHours: 24, expiresAt: Self.expiresAt)
        let greeting = Self.firstLine(unnamed.body)
        #expect(!greeting.isEmpty)
        #expect(greeting != Self.firstLine(named.body))
        #expect(blank.body == unnamed.body, "a name of only spaces is no name")
        #expect(unnamed.subject == named.subject)
        // "Hi ," or "，您好：" would show the missing name.
        #expect(greeting.first?.isWhitespace == false && greeting.first?.isPunctuation == false, "\(greeting)")
        #expect(!greeting.contains(" ,") && !greeting.contains("  "), "\(greeting)")
        #expect(!unnamed.body.contains("Joey"))
    }

    @Test("the links of an invitation: confirm, decline and opt-out, each URL once", arguments: languages)
    func invitationLinks(language: String) {
        let links = Self.texts(language).contactLinks(confirm: Self.confirm, decline: Self.decline, optOut: Self.optOut)
        for url in [Self.confirm, Self.decline, Self.optOut] {
            #expect(Self.occurrences(of: url, in: links) == 1, "\(url) in \(links)")
        }
        #expect(Self.occurrences(of: "http", in: links) == 3)
        #expect(links.contains("Mei"))
        #expect(links == links.trimmingCharacters(in: .whitespacesAndNewlines), "the sender adds the blank line")
        // Each URL ends its line, so that a mail client links it whole.
        for line in links.split(separator: "\n") where line.contains("http") {
            #expect(line.hasSuffix(Self.confirm) || line.hasSuffix(Self.decline) || line.hasSuffix(Self.optOut))
        }
        // Confirm comes before decline, both before the opt-out line.
        let confirmAt = links.range(of: Self.confirm)!.lowerBound
        let declineAt = links.range(of: Self.decline)!.lowerBound
        let optOutAt = links.range(of: Self.optOut)!.lowerBound
        #expect(confirmAt < declineAt && declineAt < optOutAt)
    }

    @Test("the links of any other email: the opt-out only", arguments: languages)
    func otherLinks(language: String) {
        let texts = Self.texts(language)
        let links = texts.contactLinks(confirm: nil, decline: nil, optOut: Self.optOut)
        #expect(Self.occurrences(of: Self.optOut, in: links) == 1, "\(links)")
        #expect(Self.occurrences(of: "http", in: links) == 1, "\(links)")
        #expect(links.contains("Mei"))
        let invitation = texts.contactLinks(confirm: Self.confirm, decline: Self.decline, optOut: Self.optOut)
        #expect(invitation.hasSuffix(links), "the opt-out line reads the same in both")
        let confirmOnly = texts.contactLinks(confirm: Self.confirm, decline: nil, optOut: Self.optOut)
        #expect(Self.occurrences(of: Self.confirm, in: confirmOnly) == 1)
        #expect(Self.occurrences(of: "http", in: confirmOnly) == 2)
    }

    @Test("every push about a contact names the contact, by name or address", arguments: languages)
    func pushes(language: String) {
        let texts = Self.texts(language)
        for contact in ["Joey", "joey@example.com"] {
            var bodies: Set<String> = []
            var titles: Set<String> = []
            for event in ContactEvent.allCases {
                let push = texts.contactPush(event, contact: contact)
                #expect(!push.title.isEmpty && !push.body.isEmpty, "\(event)")
                #expect(push.body.contains(contact), "\(event): \(push.body)")
                bodies.insert(push.body)
                titles.insert(push.title)
            }
            #expect(bodies.count == ContactEvent.allCases.count, "each event says something different")
            #expect(titles.count == ContactEvent.allCases.count, "each event has its own title")
        }
    }

    @Test(
        "the push at the end of a grace names the contact, in each language its own, unlike every other contact push",
        arguments: languages
    )
    func graceEndedPush(language: String) {
        let texts = Self.texts(language)
        for contact in ["Joey", "joey@example.com"] {
            let push = texts.graceEndedPush(contact: contact)
            #expect(!push.title.isEmpty && push.body.contains(contact), "\(push)")
            for event in ContactEvent.allCases {
                let other = texts.contactPush(event, contact: contact)
                #expect(push.title != other.title && push.body != other.body, "\(event)")
            }
            if language != "en" {
                let english = Self.texts("en").graceEndedPush(contact: contact)
                #expect(push.title != english.title && push.body != english.body)
            }
        }
        // It says what it means: no alarms until they confirm, and the invitation can go again.
        let words = [
            "en": ["Until they do", "send the invitation again"],
            "zh-Hans": ["在对方确认之前", "重新发送邀请"],
            "zh-Hant": ["在對方確認之前", "重新寄送邀請"],
        ][language]!
        for word in words { #expect(texts.graceEndedPush(contact: "Joey").body.contains(word), "\(word)") }
        #expect(MessageKind.graceEnded == "contact_grace_ended")
    }

    @Test("a push's kind is the alert row's kind")
    func kinds() {
        #expect(
            ContactEvent.allCases.map(\.kind) == [
                "contact_confirmed", "contact_declined", "contact_opted_out", "contact_bounced",
            ]
        )
        #expect(ContactEvent(rawValue: "opted_out") == .optedOut)
    }
}
