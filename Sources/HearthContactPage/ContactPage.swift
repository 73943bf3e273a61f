import Foundation
public import HearthContracts
import HearthCore
public import HearthRPC
public import Hummingbird
public import Logging
import NIOCore
import SwiftProtobuf

/// What the page asks of safety: what a link can do, and doing it.
public protocol ContactLinkAnswers: Sendable {
    func look(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink
    func answer(token: String, action: Hearth_Safety_V1_ContactAction) async throws -> Hearth_Safety_V1_ContactLink
}

/// Safety over RPC, with the caller's internal credential (the page's process is the gateway).
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
public enum ContactPage {
    /// The largest form body read: a token and a few fields.
    static let maxBodyBytes = 4096

    /// The page's HTTP server on `host`:`port` (0: any free port); `onRunning` hears the port
    /// it listens on. A `Service`: run it beside the process's others.
    public static func application(
        host: String,
        port: Int,
        links: any ContactLinkAnswers,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        for path in ContactPagePath.allCases {
            let action = Self.action(of: path)
            router.get(RouterPath(path.rawValue)) { request, _ in
                try await Self.show(request, action: action, path: path, links: links, logger: logger)
            }
            router.post(RouterPath(path.rawValue)) { request, _ in
                try await Self.act(request, action: action, path: path, links: links, logger: logger)
            }
        }
        return Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port),
                serverName: nil
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

    /// A GET: what the link can do, with the button when it can.
    static func show(
        _ request: Request,
        action: Hearth_Safety_V1_ContactAction,
        path: ContactPagePath,
        links: any ContactLinkAnswers,
        logger: Logger
    ) async throws -> Response {
        let query = request.uri.queryParameters
        let token = query["t"].map(String.init) ?? ""
        let chosen = query["lang"].flatMap { PageLanguage(rawValue: String($0)) }
        let link: Hearth_Safety_V1_ContactLink
        do {
            link = token.isEmpty ? .notFound : try await links.look(token: token, action: action)
        } catch {
            return Self.unavailable(request, chosen: chosen, error: error, logger: logger)
        }
        let language = Self.language(chosen: chosen, link: link, request: request)
        let page = PageRenderer(language: language, token: token, path: path)
        // Opted out already: nothing more to ask.
        if link.outcome == .linkOk, !(action == .optOut && link.state == .optedOut) {
            return page.prompt(action: action, person: link.personName)
        }
        return page.result(of: link, action: action)
    }

    /// A POST: does what the link says, and shows what became of it.
    static func act(
        _ request: Request,
        action: Hearth_Safety_V1_ContactAction,
        path: ContactPagePath,
        links: any ContactLinkAnswers,
        logger: Logger
    ) async throws -> Response {
        var request = request
        let query = request.uri.queryParameters
        let chosen = query["lang"].flatMap { PageLanguage(rawValue: String($0)) }
        let form: FormFields
        do {
            form = FormFields(String(buffer: try await request.collectBody(upTo: Self.maxBodyBytes)))
        } catch {
            return PageRenderer(language: chosen ?? .english, token: "", path: path).tooLarge()
        }
        // A one-click unsubscribe posts to the opt-out link itself, the token in its query; a
        // Confirm or Decline link acts only from its page's button (the form's field).
        let token = form["t"] ?? (action == .optOut ? query["t"].map(String.init) : nil) ?? ""
        let link: Hearth_Safety_V1_ContactLink
        do {
            link = token.isEmpty ? .notFound : try await links.answer(token: token, action: action)
        } catch {
            return Self.unavailable(request, chosen: chosen, error: error, logger: logger)
        }
        let language = Self.language(chosen: chosen, link: link, request: request)
        let page = PageRenderer(language: language, token: token, path: path)
        return page.result(of: link, action: action, acted: link.outcome == .linkOk)
    }

    /// `?lang=` when given, else the language of the person's emails, else the browser's.
    static func language(chosen: PageLanguage?, link: Hearth_Safety_V1_ContactLink, request: Request) -> PageLanguage {
        chosen ?? PageLanguage(rawValue: link.language)
            ?? request.headers[.acceptLanguage].flatMap(PageLanguage.fromAcceptLanguage) ?? .english
    }

    static func unavailable(_ request: Request, chosen: PageLanguage?, error: any Error, logger: Logger) -> Response {
        logger.warning("contact page: safety did not answer", metadata: ["error": "\(error)"])
        let language =
            chosen ?? request.headers[.acceptLanguage].flatMap(PageLanguage.fromAcceptLanguage) ?? .english
        return PageRenderer(language: language, token: "", path: .confirm).unavailable()
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
