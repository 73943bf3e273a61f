import AsyncHTTPClient
import Foundation
import HearthContactPage
import HearthContracts
import HearthCore
import HearthMail
import HearthPush
import HearthRPC
import HearthScheduler
import HearthStore
import HearthTestSupport
import Logging
import NIOCore
import NIOHTTP1
import SafetyService
import ServiceLifecycle
import SwiftProtobuf
import Synchronization
import Testing

/// Safety behind its RPC server (a file store, a real SMTP server for its emails, a webhook for
/// its pushes, a clock the test moves), and the contact page in front of it on a free port, the
/// links in the emails pointing at it. Made by ``withContactPage(_:)``.
struct PageSystem: Sendable {
    static let secret = "contact-page-test-internal-credential-0123456789"
    /// 2026-03-10 12:00 UTC.
    static let start = Date(timeIntervalSince1970: 1_773_144_000)

    let service: SafetyService
    let clock: ManualClock
    let sink: SMTPSink
    let webhook: WebhookListener
    let pagePort: Int
    /// Where safety is asked; a test may point the page elsewhere (a safety that is down).
    let links: LateLinks

    var base: String { "http://127.0.0.1:\(self.pagePort)" }

    /// Creates mei's profile (`language`, `name`) and adds `contact`; returns the link from the
    /// invitation the SMTP server received, for `path`.
    func invite(
        _ contact: String = "brother@example.com",
        name: String = "Mei Chen",
        language: String = "en",
        path: String = "/contact/confirm?t="
    ) async throws -> String {
        _ = try await self.service.upsertProfile(
            .with {
                $0.name = name
                $0.email = "mei@example.com"
                $0.thresholdHours = 24
                $0.preferredLanguage = language
                $0.timeZone = "Europe/Paris"
                $0.pushToken = "device-mei"
            },
            callContext("mei")
        )
        _ = try await self.service.addContact(.with { $0.email = contact }, callContext("mei"))
        return try await self.link(path, to: contact)
    }

    /// The full link for `path` in the latest email to `contact`, once one has arrived.
    func link(_ path: String, to contact: String) async throws -> String {
        var found: String?
        try await eventually("an email to \(contact) with a link to \(path)") {
            found = try self.sink.messages().reversed()
                .first {
                    ($0["rcpt_tos"] as? [String]) == [contact] && (($0["body"] as? String)?.contains(path) ?? false)
                }
                .flatMap { ($0["body"] as? String).flatMap { Self.url(in: $0, path: path) } }
            return found != nil
        }
        return try #require(found)
    }

    /// The link to `path` in `text`, from its `http` to the token's end.
    static func url(in text: String, path: String) -> String? {
        guard let range = text.range(of: path),
            let start = text.range(of: "http", options: .backwards, range: text.startIndex..<range.lowerBound)
        else { return nil }
        let token = text[range.upperBound...].prefix {
            $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_")
        }
        return String(text[start.lowerBound..<range.upperBound]) + token
    }

    func contact(_ user: String = "mei") async throws -> Hearth_Safety_V1_Contact {
        try #require(try await self.service.listContacts(.init(), callContext(user)).contacts.first)
    }

    func status(_ user: String = "mei") async throws -> Hearth_Safety_V1_Status {
        try await self.service.getStatus(.init(), callContext(user))
    }

    /// Kinds of the pushes received, e.g. `safety.contact_confirmed`.
    func pushes() throws -> [String] {
        try self.webhook.received.map { request in
            let json = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
            return json?["kind"] as? String ?? "?"
        }
    }
}

/// The page's view of safety, set once safety listens (the page must listen first: safety's
/// emails carry the page's address). Counts what the page asked.
final class LateLinks: ContactLinkAnswers {
    private let target = Mutex<(any ContactLinkAnswers)?>(nil)
    private let count = Atomic<Int>(0)

    func point(at links: any ContactLinkAnswers) { self.target.withLock { $0 = links } }

    /// How many times the page has asked safety (looked or answered).
    var asked: Int { self.count.load(ordering: .relaxed) }

    private var current: any ContactLinkAnswers {
        get throws {
            self.count.add(1, ordering: .relaxed)
            guard let links = self.target.withLock({ $0 }) else { throw RPCError(.unavailable, "safety not started") }
            return links
        }
    }

    func look(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink {
        try await self.current.look(token: token, action: action)
    }

    func answer(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink {
        try await self.current.answer(token: token, action: action)
    }
}

extension ContactPage.Limits {
    /// For tests that are not about the limits: no rate any test reaches, the rest as deployed.
    static let roomy = ContactPage.Limits(perMinute: 1_000_000, burst: 1_000_000)
}

/// Runs `body` with a ``PageSystem`` whose page keeps `limits` (its rates on the clock safety
/// reads too), and stops all of it afterwards, awaited.
func withContactPage<T>(
    limits: ContactPage.Limits = .roomy,
    _ body: (PageSystem) async throws -> T
) async throws -> T {
    var logger = Logger(label: "contact-page-test")
    logger.logLevel = .critical
    let links = LateLinks()
    let clock = ManualClock(PageSystem.start)
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    let page = ContactPage.application(
        host: "127.0.0.1",
        port: 0,
        links: links,
        limits: limits,
        clock: clock,
        logger: logger
    ) { port in
        portSink.yield(port)
    }
    let serving = Task { try await page.run() }
    var iterator = ports.makeAsyncIterator()
    let pagePort = try #require(await iterator.next())
    let sink = try await SMTPSink()
    let webhook = try await WebhookListener()
    let file = try TemporaryStoreFile()
    do {
        let service = try SafetyService(
            location: file.location,
            keys: .random(),
            channels: AlertChannels(
                mail: SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .none)),
                from: MailAddress("alerts@hearth.example", name: "Hearth"),
                push: WebhookPushSender(url: "http://127.0.0.1:\(webhook.port)/push"),
                contactPage: "http://127.0.0.1:\(pagePort)"
            ),
            clock: clock,
            logger: logger
        )
        let schedulers = Task { try await service.schedulers.runAll() }
        let result = try await withServer(
            configuration: ServerConfiguration(callers: .anyMethod(PageSystem.secret)),
            services: [service]
        ) { _, safetyPort in
            try await withClient(port: safetyPort) { client in
                links.point(at: SafetyContactLinks(client: client, credential: PageSystem.secret))
                return try await body(
                    PageSystem(
                        service: service,
                        clock: clock,
                        sink: sink,
                        webhook: webhook,
                        pagePort: pagePort,
                        links: links
                    )
                )
            }
        }
        schedulers.cancel()
        _ = await schedulers.result
        await stop(serving, webhook, sink)
        return result
    } catch {
        await stop(serving, webhook, sink)
        throw error
    }
}

private func stop(_ serving: Task<Void, any Error>, _ webhook: WebhookListener, _ sink: SMTPSink) async {
    serving.cancel()
    _ = try? await serving.value
    await webhook.close()
    sink.stop()
}

/// An HTTP answer, its body read.
struct PageAnswer {
    var status: Int
    var headers: [String: String]
    var body: String
}

/// One request to the page, as a browser or a mail client makes it; from another loopback
/// address than 127.0.0.1 when `source` says (127.0.0.2, ...), with `headers` added.
func fetch(
    _ url: String,
    method: String = "GET",
    form: String? = nil,
    acceptLanguage: String? = nil,
    from source: String? = nil,
    headers: [(String, String)] = []
) async throws -> PageAnswer {
    var request = HTTPClientRequest(url: url)
    request.method = .init(rawValue: method)
    request.localAddress = source
    if let acceptLanguage { request.headers.add(name: "Accept-Language", value: acceptLanguage) }
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let form {
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: form))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
    let body = try await response.body.collect(upTo: 1 << 20)
    var headers: [String: String] = [:]
    for header in response.headers { headers[header.name.lowercased()] = header.value }
    return PageAnswer(status: Int(response.status.code), headers: headers, body: String(buffer: body))
}
