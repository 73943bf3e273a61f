import Foundation
import HearthContactPage
import HearthContracts
import HearthCore
import HearthTestSupport
import Synchronization
import Testing

/// The page's limits on the public edge, each at its boundary, over real HTTP against the page
/// in front of a real safety (or one that holds its answers): the rate per client address, the
/// requests asking safety at once, the read timeout and the cap on connections.
@Suite("Contact page limits", .timeLimit(.minutes(2)), .serialized)
struct ContactPageLimitTests {
    @Test("a client asks safety 10 times at once, then 30 a minute: the 11th is 429 with Retry-After, unasked")
    func ratePerAddress() async throws {
        try await withContactPage(limits: ContactPage.Limits(perMinute: 30, burst: 10)) { system in
            let confirm = system.base + "/contact/confirm"
            for index in 0..<10 {
                let answer =
                    index % 2 == 0
                    ? try await fetch(confirm + "?t=" + guessedToken())
                    : try await fetch(system.base + "/contact/decline", method: "POST", form: "t=\(guessedToken())")
                #expect(answer.status == 404, "request \(index + 1) is let through")
            }
            #expect(system.links.asked == 10)

            let over = try await fetch(confirm + "?t=" + guessedToken())
            #expect(over.status == 429)
            #expect(over.headers["retry-after"] == "2", "at 30 a minute a token comes every 2 s")
            #expect(over.headers["content-type"] == "text/html; charset=utf-8")
            #expect(over.body.contains("<html lang=\"en\">") && over.body.contains("Too many attempts"))
            let overPost = try await fetch(
                confirm,
                method: "POST",
                form: "t=\(guessedToken())",
                acceptLanguage: "zh-TW"
            )
            #expect(overPost.status == 429 && overPost.body.contains("嘗試次數過多"))
            #expect(system.links.asked == 10, "refused without asking safety")

            // What never asks safety is neither counted nor refused.
            #expect(try await fetch(confirm).status == 404)
            #expect(try await fetch(confirm + "?t=short").status == 404)
            #expect(try await fetch(confirm, method: "POST", form: "lang=en").status == 404)
            // Another address has a bucket of its own.
            #expect(try await fetch(confirm + "?t=" + guessedToken(), from: "127.0.0.2").status == 404)
            #expect(system.links.asked == 11)

            system.clock.advance(by: 1)
            let sooner = try await fetch(confirm + "?t=" + guessedToken())
            #expect(sooner.status == 429 && sooner.headers["retry-after"] == "1")
            system.clock.advance(by: 1)
            #expect(try await fetch(confirm + "?t=" + guessedToken()).status == 404, "a token has come back")
            #expect(try await fetch(confirm + "?t=" + guessedToken()).status == 429, "and only one")
            #expect(system.links.asked == 12)
        }
    }

    @Test("a contact's own link, over the rate, is refused too and works again once the client has waited")
    func realLinkOverTheRate() async throws {
        try await withContactPage(limits: ContactPage.Limits(perMinute: 30, burst: 2)) { system in
            let confirm = try await system.invite()
            #expect(try await fetch(confirm).status == 200)
            #expect(try await fetch(confirm).status == 200)
            let refused = try await fetch(confirm)
            #expect(refused.status == 429 && !refused.body.contains("Mei Chen"), "nothing about the link is said")
            #expect(try await system.contact().state == .invited)
            system.clock.advance(by: 2)
            let token = try #require(confirm.split(separator: "=").last.map(String.init))
            let posted = try await fetch(system.base + "/contact/confirm", method: "POST", form: "t=\(token)")
            #expect(posted.status == 200)
            #expect(try await system.contact().state == .confirmed)
        }
    }

    @Test("X-Forwarded-For names no one by default; behind a trusted proxy, its last address is the client")
    func forwardedFor() async throws {
        let limits = ContactPage.Limits(perMinute: 30, burst: 2)
        try await withContactPage(limits: limits) { system in
            let url = { system.base + "/contact/confirm?t=" + guessedToken() }
            #expect(try await fetch(url(), headers: [("X-Forwarded-For", "198.51.100.7")]).status == 404)
            #expect(try await fetch(url(), headers: [("X-Forwarded-For", "198.51.100.8")]).status == 404)
            let spoofed = try await fetch(url(), headers: [("X-Forwarded-For", "198.51.100.9")])
            #expect(spoofed.status == 429, "one peer, one bucket, whatever the header says")
        }
        var trusting = limits
        trusting.trustForwardedFor = true
        try await withContactPage(limits: trusting) { system in
            let url = { system.base + "/contact/confirm?t=" + guessedToken() }
            let client = [("X-Forwarded-For", "198.51.100.7")]
            let first = try await fetch(url(), headers: client)
            #expect(first.status == 404)
            #expect(try await fetch(url(), headers: client).status == 404)
            #expect(try await fetch(url(), headers: client).status == 429)
            // What the client wrote before the proxy's own entry changes nothing.
            let prefixed = [("X-Forwarded-For", "203.0.113.1, 198.51.100.7")]
            #expect(try await fetch(url(), headers: prefixed).status == 429)
            // Another client behind the proxy; and a request without the header counts against the peer.
            let another = [("X-Forwarded-For", "198.51.100.7, 198.51.100.8")]
            #expect(try await fetch(url(), headers: another).status == 404)
            #expect(try await fetch(url()).status == 404)
        }
    }

    @Test("at most N requests ask safety at once: the N+1th is 503 with Retry-After, unasked; then one is let through")
    func inFlightCap() async throws {
        var limits = ContactPage.Limits.roomy
        limits.maxInFlight = 2
        try await withContactPage(limits: limits) { system in
            let gate = GatedLinks()
            // Opened on the way out in any case: a handler left waiting would hold the page open.
            defer { gate.open() }
            system.links.point(at: gate)
            let confirm = system.base + "/contact/confirm"
            async let first = fetch(confirm + "?t=" + guessedToken())
            async let second = fetch(confirm, method: "POST", form: "t=\(guessedToken())")
            try await eventually("two requests wait on safety") { gate.waiting == 2 }

            let refused = try await fetch(confirm + "?t=" + guessedToken())
            #expect(refused.status == 503 && refused.headers["retry-after"] == "5")
            #expect(refused.body.contains("Please try again"))
            #expect(gate.waiting == 2 && system.links.asked == 2, "refused without asking safety")

            gate.open()
            #expect(try await first.status == 404)
            #expect(try await second.status == 404)
            #expect(try await fetch(confirm + "?t=" + guessedToken()).status == 404, "places are free again")
            #expect(system.links.asked == 3)
        }
    }

    @Test("a connection sending half a request line, or its head or body a byte at a time, is closed in time")
    func slowClientsAreClosed() async throws {
        var limits = ContactPage.Limits.roomy
        limits.readTimeout = .milliseconds(500)
        try await withContactPage(limits: limits) { system in
            let clock = ContinuousClock()
            let timeout = limits.readTimeout
            // Closed by the timeout, and not before it: measured from before the connection opened.
            func expectClosedInTime(since start: ContinuousClock.Instant, _ what: String) {
                let took = clock.now - start
                #expect(took >= timeout - .milliseconds(20), "\(what): closed only after the timeout, took \(took)")
                #expect(took < timeout + .seconds(10), "\(what): closed in time, took \(took)")
            }

            var start = clock.now
            let stalled = try RawSocket(port: system.pagePort)
            stalled.send("GET /contact/confirm?t=")
            #expect(try await stalled.waitUntilClosed(within: .seconds(20)), "half a request line")
            expectClosedInTime(since: start, "half a request line")

            // Each byte well within the timeout: bytes alone do not keep a connection open.
            start = clock.now
            let head = try RawSocket(port: system.pagePort)
            let line = "GET /contact/confirm?t=\(guessedToken()) HTTP/1.1\r\nHost: page\r\nX-Padding: "
            #expect(try await trickle(line + String(repeating: "a", count: 2000), into: head), "a head byte by byte")
            expectClosedInTime(since: start, "a head byte by byte")

            // A whole head, then a body byte by byte: each body part read starts Hummingbird's idle
            // timeout anew, so only the page's deadline on the whole request closes this one.
            start = clock.now
            let body = try RawSocket(port: system.pagePort)
            body.send(
                "POST /contact/confirm HTTP/1.1\r\nHost: page\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 2000\r\n\r\n"
            )
            #expect(try await trickle("t=" + String(repeating: "A", count: 1998), into: body), "a body byte by byte")
            expectClosedInTime(since: start, "a body byte by byte")

            #expect(try await fetch(system.base + "/contact/confirm").status == 404, "the page still answers")
        }
    }

    @Test("at most N connections are held open: the N+1th is accepted only once one of them closes")
    func connectionCap() async throws {
        var limits = ContactPage.Limits.roomy
        limits.maxConnections = 2
        try await withContactPage(limits: limits) { system in
            let request = "GET /contact/confirm HTTP/1.1\r\nHost: page\r\n\r\n"
            let first = try RawSocket(port: system.pagePort)
            first.send(request)
            #expect(try await first.status(within: .seconds(20)) == 404)
            let second = try RawSocket(port: system.pagePort)
            second.send(request)
            #expect(try await second.status(within: .seconds(20)) == 404)

            // Both stay open (keep-alive); the kernel completes a third handshake, the page does
            // not take the connection.
            let third = try RawSocket(port: system.pagePort)
            third.send(request)
            #expect(try await third.status(within: .milliseconds(500)) == nil, "not accepted while two are open")
            first.close()
            #expect(try await third.status(within: .seconds(20)) == 404, "accepted once one closed")
            second.close()
            third.close()
        }
    }
}

/// Something shaped like a link's token (43 base64url characters) that no link has.
func guessedToken() -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    return String((0..<43).map { _ in alphabet.randomElement()! })
}

/// Sends `text` a byte every 20 ms until the page closes the connection (true) or 20 s pass.
private func trickle(_ text: String, into socket: RawSocket) async throws -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + .seconds(20)
    var bytes = text.makeIterator()
    while clock.now < end, let byte = bytes.next() {
        if !socket.send(String(byte)) || socket.lookClosed() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await socket.waitUntilClosed(within: end - clock.now)
}

/// A safety that answers "no such link", but only once opened: until then its callers wait.
final class GatedLinks: ContactLinkAnswers {
    private struct State {
        var isOpen = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// How many calls are waiting.
    var waiting: Int { self.state.withLock { $0.waiting.count } }

    /// Lets every call through, now and from now on.
    func open() {
        let waiting = self.state.withLock { state in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func look(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink {
        await self.pass()
        return Self.notFound
    }

    func answer(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink {
        await self.pass()
        return Self.notFound
    }

    private func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = self.state.withLock { state in
                if !state.isOpen { state.waiting.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    private static var notFound: Hearth_Safety_V1_ContactLink {
        var link = Hearth_Safety_V1_ContactLink()
        link.outcome = .linkNotFound
        return link
    }
}
