import Foundation
public import HearthContracts
public import HearthCore
public import HearthRPC
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import SwiftProtobuf

/// What the page asks of safety: what a link can do, and doing it.
public protocol ContactLinkAnswers: Sendable {
    func look(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink
    func answer(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink
}

/// Safety over RPC, with the credential of the gateway's link to it (the page runs in the gateway).
public struct SafetyContactLinks: ContactLinkAnswers {
    let client: Hearth_Safety_V1_Safety.Client
    let options: CallOptions

    public init(client: RPCClient, credential: String, timeout: Duration = .seconds(5)) {
        self.client = Hearth_Safety_V1_Safety.Client(client)
        self.options = CallOptions(timeout: timeout, metadata: [TrustedMetadata.credential: credential])
    }

    public func look(token: String, action: Hearth_Safety_V1_ContactAction) async throws
        -> Hearth_Safety_V1_ContactLink
    {
        try await self.client.getContactLink(
            .with {
                $0.token = token
                $0.action = action
            },
            options: self.options
        )
    }

    public func answer(token: String, action: Hearth_Safety_V1_ContactAction) async throws
        -> Hearth_Safety_V1_ContactLink
    {
        try await self.client.answerContactLink(
            .with {
                $0.token = token
                $0.action = action
            },
            options: self.options
        )
    }
}

/// The page behind the links in emails to emergency contacts: `GET /contact/confirm?t=TOKEN`
/// shows what the link does and a button; only the button's `POST` acts, so that a mail scanner
/// fetching links confirms no one. The same for decline and opt-out; a `POST` to an opt-out
/// link with the body `List-Unsubscribe=One-Click` is a mail client's one-click unsubscribe
/// (RFC 8058). Plain HTML, no JavaScript, no cookies, nothing loaded from elsewhere.
///
/// It is on the public edge, so it asks safety only for what could be a link's token (43
/// base64url characters; anything else is not found without asking), at a rate per client and
/// a number at once (``Limits``: 429 and 503 pages, with `Retry-After`, when over), and it
/// closes connections that send nothing, or a request a byte at a time.
public enum ContactPage {
    /// The largest form body read: a token and a few fields.
    static let maxBodyBytes = 4096

    /// How long a client asked to wait when too many requests are asking safety at once: each
    /// waits 5 s for safety at most.
    static let busyRetryAfter = 5

    /// The page's HTTP server on `host`:`port` (0: any free port), within `limits`, its
    /// per-client rates read from `clock`; `onRunning` hears the port it listens on. A
    /// `Service`: run it beside the process's others.
    public static func application(
        host: String,
        port: Int,
        links: any ContactLinkAnswers,
        limits: Limits = Limits(),
        clock: any WallClock = SystemClock(),
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let admission = Admission(limits: limits, clock: clock)
        let router = Router(context: PageContext.self)
        for path in ContactPagePath.allCases {
            let endpoint = PageEndpoint(
                path: path,
                action: Self.action(of: path),
                links: links,
                admission: admission,
                trustsForwardedFor: limits.trustForwardedFor,
                logger: logger
            )
            router.get(RouterPath(path.rawValue)) { request, context in
                await endpoint.show(request, context: context)
            }
            router.post(RouterPath(path.rawValue)) { request, context in
                await endpoint.act(request, context: context)
            }
        }
        let readTimeout = TimeAmount(limits.readTimeout)
        return Application(
            router: router,
            // The idle timeout closes a connection that completes no request head in time (a
            // head sent a byte at a time too: bytes alone do not reset it); the deadline, a
            // request whose body has not all come in time.
            server: .http1(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [RequestReadDeadline(limit: readTimeout)],
                    idleTimeout: readTimeout
                )
            ),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port),
                serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)
            ),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    static func action(of path: ContactPagePath) -> Hearth_Safety_V1_ContactAction {
        switch path {
        case .confirm: .confirm
        case .decline: .decline
        case .optOut: .optOut
        }
    }

    /// `?lang=` when given, else the language of the person's emails, else the browser's.
    static func language(chosen: PageLanguage?, link: Hearth_Safety_V1_ContactLink, request: Request) -> PageLanguage {
        chosen ?? PageLanguage(rawValue: link.language) ?? Self.language(chosen: nil, request: request)
    }

    /// `?lang=` when given, else the browser's: for pages shown without safety's answer.
    static func language(chosen: PageLanguage?, request: Request) -> PageLanguage {
        chosen ?? request.headers[.acceptLanguage].flatMap(PageLanguage.fromAcceptLanguage) ?? .english
    }
}

/// One of the page's paths: what its GET shows and its POST does.
struct PageEndpoint: Sendable {
    let path: ContactPagePath
    let action: Hearth_Safety_V1_ContactAction
    let links: any ContactLinkAnswers
    let admission: Admission
    let trustsForwardedFor: Bool
    let logger: Logger

    /// What came of asking safety: its answer, or the page to show instead.
    enum Asked {
        case link(Hearth_Safety_V1_ContactLink)
        case page(Response)
    }

    /// A GET: what the link can do, with the button when it can.
    func show(_ request: Request, context: PageContext) async -> Response {
        let query = request.uri.queryParameters
        let token = query["t"].map(String.init) ?? ""
        let chosen = query["lang"].flatMap { PageLanguage(rawValue: String($0)) }
        let link: Hearth_Safety_V1_ContactLink
        switch await self.ask(
            token: token,
            request: request,
            context: context,
            chosen: chosen,
            {
                try await self.links.look(token: $0, action: self.action)
            }
        ) {
        case .link(let answer): link = answer
        case .page(let refusal): return refusal
        }
        let language = ContactPage.language(chosen: chosen, link: link, request: request)
        let page = PageRenderer(language: language, token: token, path: self.path)
        // Opted out already: nothing more to ask.
        if link.outcome == .linkOk, !(self.action == .optOut && link.state == .optedOut) {
            return page.prompt(action: self.action, person: link.personName)
        }
        return page.result(of: link, action: self.action)
    }

    /// A POST: does what the link says, and shows what became of it.
    func act(_ request: Request, context: PageContext) async -> Response {
        var request = request
        let query = request.uri.queryParameters
        let chosen = query["lang"].flatMap { PageLanguage(rawValue: String($0)) }
        let form: FormFields
        do {
            form = FormFields(String(buffer: try await request.collectBody(upTo: ContactPage.maxBodyBytes)))
        } catch {
            return PageRenderer(language: chosen ?? .english, token: "", path: self.path).tooLarge()
        }
        // A one-click unsubscribe posts to the opt-out link itself, the token in its query; a
        // Confirm or Decline link acts only from its page's button (the form's field).
        let token = form["t"] ?? (self.action == .optOut ? query["t"].map(String.init) : nil) ?? ""
        let link: Hearth_Safety_V1_ContactLink
        switch await self.ask(
            token: token,
            request: request,
            context: context,
            chosen: chosen,
            {
                try await self.links.answer(token: $0, action: self.action)
            }
        ) {
        case .link(let answer): link = answer
        case .page(let refusal): return refusal
        }
        let language = ContactPage.language(chosen: chosen, link: link, request: request)
        let page = PageRenderer(language: language, token: token, path: self.path)
        return page.result(of: link, action: self.action, acted: link.outcome == .linkOk)
    }

    /// Asks safety with `call` when `token` could be a link's (anything else is no link, said
    /// without asking) and the client may ask now; else the page saying why not.
    private func ask(
        token: String,
        request: Request,
        context: PageContext,
        chosen: PageLanguage?,
        _ call: (String) async throws -> Hearth_Safety_V1_ContactLink
    ) async -> Asked {
        guard PageRenderer.isToken(token) else { return .link(.notFound) }
        let client = self.client(of: request, context: context)
        if let refusal = self.admission.admit(client) {
            let page = PageRenderer(
                language: ContactPage.language(chosen: chosen, request: request),
                token: token,
                path: self.path
            )
            // Debug only: a flood would otherwise be a flood of log lines.
            switch refusal {
            case .rate(let retryAfter):
                self.logger.debug("contact page: client over its rate", metadata: ["client": "\(client)"])
                return .page(page.tooManyRequests(retryAfter: retryAfter))
            case .busy:
                self.logger.debug("contact page: too many requests asking safety at once")
                return .page(page.unavailable(retryAfter: ContactPage.busyRetryAfter))
            }
        }
        defer { self.admission.finished() }
        do {
            return .link(try await call(token))
        } catch {
            self.logger.warning("contact page: safety did not answer", metadata: ["error": "\(error)"])
            let language = ContactPage.language(chosen: chosen, request: request)
            return .page(PageRenderer(language: language, token: "", path: .confirm).unavailable())
        }
    }

    /// Whom the request counts against: the connection's peer, or behind a trusted proxy the
    /// address it names.
    private func client(of request: Request, context: PageContext) -> ClientKey {
        if self.trustsForwardedFor,
            let named = ClientKey(forwardedFor: request.headers[values: .init("X-Forwarded-For")!])
        {
            return named
        }
        return context.remoteAddress.map { ClientKey($0) } ?? .unknown
    }
}

extension Hearth_Safety_V1_ContactLink {
    static let notFound = Hearth_Safety_V1_ContactLink.with { $0.outcome = .linkNotFound }
}

/// The fields of an `application/x-www-form-urlencoded` body.
struct FormFields {
    private var fields: [String: String] = [:]

    init(_ body: String) {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { continue }
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            if let value, self.fields[name] == nil { self.fields[name] = value }
        }
    }

    subscript(name: String) -> String? { self.fields[name] }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
