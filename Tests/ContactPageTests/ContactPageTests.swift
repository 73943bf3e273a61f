import Foundation
import HearthContactPage
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import Testing

/// The page behind the links in emails to emergency contacts, against a real safety service:
/// real emails (an SMTP server), real HTTP, and a real browser for the buttons.
@Suite("Contact page", .timeLimit(.minutes(2)), .serialized)
struct ContactPageTests {
    @Test("a contact confirms in a real browser from the link in their invitation, then opts out the same way")
    func browserConfirmsAndOptsOut() async throws {
        #expect(HeadlessBrowser.isInstalled, "scripts/bootstrap installs chromium")
        try await withContactPage { system in
            let confirm = try await system.invite()
            #expect(confirm.hasPrefix(system.base + "/contact/confirm?t="))
            let confirmed = try await HeadlessBrowser.open(confirm, clicking: "button[type=submit]")
            #expect(confirmed.status == 200 && confirmed.text.contains("Mei Chen"), "\(confirmed)")
            #expect(try await system.contact().state == .confirmed)
            #expect(try await system.status().state == .normal, "the first confirmed contact arms the switch")

            let optOut = try await system.link("/contact/opt-out?t=", to: "brother@example.com")
            let optedOut = try await HeadlessBrowser.open(optOut, clicking: "button[type=submit]")
            #expect(optedOut.status == 200 && optedOut.text.contains("Mei Chen"), "\(optedOut)")
            #expect(try await system.contact().state == .optedOut)
            let status = try await system.status()
            #expect(status.state == .notArmed && status.notArmedReason == .noContact)
            try await eventually("mei hears of both") {
                try Set(system.pushes()) == ["safety.contact_confirmed", "safety.contact_opted_out"]
            }
        }
    }

    @Test("a GET shows the button and changes nothing (mail scanners fetch links); only the POST acts, once")
    func onlyThePostActs() async throws {
        try await withContactPage { system in
            let confirm = try await system.invite()
            for _ in 0..<3 {
                let shown = try await fetch(confirm)
                #expect(shown.status == 200 && shown.body.contains("<form method=\"post\""))
            }
            #expect(try await system.contact().state == .invited)
            // A POST to the link itself (a scanner, or a mail client's unsubscribe button on the
            // wrong link) is not the button: it confirms no one.
            #expect(try await fetch(confirm, method: "POST", form: "List-Unsubscribe=One-Click").status == 404)
            #expect(try await system.contact().state == .invited)
            let token = try #require(confirm.split(separator: "=").last.map(String.init))
            let posted = try await fetch(system.base + "/contact/confirm", method: "POST", form: "t=\(token)")
            #expect(posted.status == 200)
            #expect(try await system.contact().state == .confirmed)
            // Used: says so, changes nothing; its Decline link is spent too.
            let again = try await fetch(system.base + "/contact/confirm", method: "POST", form: "t=\(token)")
            #expect(again.status == 409 && !again.body.contains("<form"))
            let decline = try await fetch(system.base + "/contact/decline", method: "POST", form: "t=\(token)")
            #expect(decline.status == 409)
            #expect(try await system.contact().state == .confirmed)
        }
    }

    @Test("a mail client's one-click unsubscribe (RFC 8058) opts out from the List-Unsubscribe header's link")
    func oneClickUnsubscribe() async throws {
        try await withContactPage { system in
            _ = try await system.invite()
            let raw = try #require(try system.sink.messages().last?["raw"] as? String)
            #expect(raw.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"))
            let header = try #require(
                raw.split(whereSeparator: \.isNewline).first { $0.hasPrefix("List-Unsubscribe: <") }
            )
            let url = String(header.dropFirst("List-Unsubscribe: <".count).dropLast())
            #expect(url.hasPrefix(system.base + "/contact/opt-out?t="))
            let answer = try await fetch(url, method: "POST", form: "List-Unsubscribe=One-Click")
            #expect(answer.status == 200)
            #expect(try await system.contact().state == .optedOut)
            // Opting out again changes nothing and says so the same way; its page has no button left.
            #expect(try await fetch(url, method: "POST", form: "List-Unsubscribe=One-Click").status == 200)
            let shown = try await fetch(url)
            #expect(shown.status == 200 && !shown.body.contains("<form"))
            try await eventually("mei hears of it once") { try system.pushes() == ["safety.contact_opted_out"] }
        }
    }

    @Test(
        "unknown, malformed and guessed links get the not-found page, naming no one; 1,000 guesses later it still works"
    )
    func guessesGetNotFound() async throws {
        try await withContactPage { system in
            let confirm = try await system.invite()
            var generator = SystemRandomNumberGenerator()
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            for index in 0..<1000 {
                let guess = String(
                    (0..<43).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
                )
                let path = ContactPagePath.allCases[index % 3].rawValue
                let answer =
                    index % 2 == 0
                    ? try await fetch(system.base + path + "?t=" + guess)
                    : try await fetch(system.base + path, method: "POST", form: "t=\(guess)")
                #expect(answer.status == 404 && !answer.body.contains("Mei Chen"))
            }
            for bad in ["", "?t=", "?t=short", "?t=%00%0d%0a", "?t=" + String(repeating: "A", count: 5000)] {
                let answer = try await fetch(system.base + "/contact/confirm" + bad)
                #expect(answer.status == 404 && !answer.body.contains("Mei Chen"), "\(bad.prefix(20))")
            }
            #expect(try await fetch(system.base + "/contact/elsewhere").status == 404)
            let shown = try await fetch(confirm)
            #expect(shown.status == 200 && shown.body.contains("Mei Chen"))
        }
    }

    @Test("the page speaks the person's language, or the one asked for; names are escaped; nothing else may load")
    func languagesAndEscaping() async throws {
        try await withContactPage { system in
            let confirm = try await system.invite(name: "<b>Mei</b> & \"co\"", language: "zh-Hant")
            let shown = try await fetch(confirm)
            #expect(shown.body.contains("<html lang=\"zh-Hant\">"))
            #expect(
                shown.body.contains("&lt;b&gt;Mei&lt;/b&gt; &amp; &quot;co&quot;") && !shown.body.contains("<b>Mei")
            )
            #expect(try await fetch(confirm + "&lang=en").body.contains("<html lang=\"en\">"))
            let unknown = try await fetch(system.base + "/contact/confirm?t=x", acceptLanguage: "zh-CN,en;q=0.5")
            #expect(unknown.body.contains("<html lang=\"zh-Hans\">"))
            #expect(shown.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            #expect(shown.headers["cache-control"] == "no-store" && shown.headers["referrer-policy"] == "no-referrer")
            #expect(shown.headers["content-type"] == "text/html; charset=utf-8")
            #expect(!shown.body.contains("<script"))
        }
    }

    @Test("an invitation's links expire after 7 days (410); its opt-out link does not")
    func expiredInvitation() async throws {
        try await withContactPage { system in
            let confirm = try await system.invite()
            let optOut = try await system.link("/contact/opt-out?t=", to: "brother@example.com")
            system.clock.advance(by: 7 * 86_400 - 1)
            #expect(try await fetch(confirm).status == 200)
            system.clock.advance(by: 1)
            let expired = try await fetch(confirm)
            #expect(expired.status == 410 && expired.body.contains("Mei Chen"))
            let token = try #require(confirm.split(separator: "=").last.map(String.init))
            #expect(try await fetch(system.base + "/contact/confirm", method: "POST", form: "t=\(token)").status == 410)
            #expect(try await system.contact().state == .invited)
            #expect(try await fetch(optOut).status == 200)
        }
    }

    @Test("safety not answering gets a try-again page (503), and nothing is done")
    func safetyDown() async throws {
        try await withContactPage { system in
            let confirm = try await system.invite()
            let closed = try await SilentListener()
            let port = closed.port
            await closed.close()
            let down = RPCClient(configuration: .init(host: "127.0.0.1", port: port))
            system.links.point(
                at: SafetyContactLinks(client: down, credential: PageSystem.secret, timeout: .seconds(2))
            )
            #expect(try await fetch(confirm).status == 503)
            let token = try #require(confirm.split(separator: "=").last.map(String.init))
            #expect(try await fetch(system.base + "/contact/confirm", method: "POST", form: "t=\(token)").status == 503)
            await down.close()
            #expect(try await system.contact().state == .invited)
        }
    }
}
