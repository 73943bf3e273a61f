import HearthContracts
import HearthCore
import Hummingbird
import NIOCore

/// The page's HTML, in one language: a title, paragraphs, and for a prompt, the form whose
/// button acts. Every text is escaped; nothing but the inline style is loaded, and the headers
/// forbid everything else (scripts, frames, other origins, referrers carrying the token).
struct PageRenderer {
    let language: PageLanguage
    /// The link's token, carried by the form and the language switcher; empty for text that no
    /// token could be (nothing a visitor typed is shown back).
    let token: String
    let path: ContactPagePath

    init(language: PageLanguage, token: String, path: ContactPagePath) {
        self.language = language
        self.token = Self.isToken(token) ? token : ""
        self.path = path
    }

    /// 43 base64url characters, as every link's token.
    static func isToken(_ text: String) -> Bool {
        text.utf8.count == 43
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    private var texts: PageTexts { PageTexts(language: self.language) }

    /// Before acting: what the button does, and the button.
    func prompt(action: Hearth_Safety_V1_ContactAction, person: String) -> Response {
        let text: (title: String, paragraphs: [String], button: String) =
            switch action {
            case .decline: self.texts.declinePrompt(person: person)
            case .optOut: self.texts.optOutPrompt(person: person)
            default: self.texts.confirmPrompt(person: person)
            }
        let form = """
            <form method="post" action="\(Self.escape(self.path.rawValue))?lang=\(self.language.rawValue)">\
            <input type="hidden" name="t" value="\(Self.escape(self.token))">\
            <button type="submit">\(Self.escape(text.button))</button></form>
            """
        return self.page(.ok, title: text.title, paragraphs: text.paragraphs, form: form)
    }

    /// What became of a link: done (`acted`), or why it cannot be.
    func result(of link: Hearth_Safety_V1_ContactLink, action: Hearth_Safety_V1_ContactAction, acted: Bool = false)
        -> Response
    {
        let person = link.personName
        switch link.outcome {
        case .linkOk where link.state == .optedOut || acted:
            let text =
                switch link.state {
                case .confirmed: self.texts.confirmed(person: person)
                case .declined: self.texts.declined(person: person)
                default: self.texts.optedOut(person: person)
                }
            return self.page(.ok, title: text.title, paragraphs: text.paragraphs)
        case .linkOk:
            return self.prompt(action: action, person: person)
        case .linkExpired:
            let text = self.texts.expired(person: person)
            return self.page(.gone, title: text.title, paragraphs: text.paragraphs)
        case .linkAlreadyAnswered:
            let text =
                link.state == .optedOut
                ? self.texts.optedOut(person: person)
                : self.texts.alreadyAnswered(person: person, confirmed: link.state == .confirmed)
            return self.page(.conflict, title: text.title, paragraphs: text.paragraphs)
        default:
            let text = self.texts.notFound
            return self.page(.notFound, title: text.title, paragraphs: text.paragraphs)
        }
    }

    /// Safety did not answer, or too many requests are asking it: nothing was done, try again
    /// (`Retry-After` in seconds).
    func unavailable(retryAfter: Int = 60) -> Response {
        let text: (String, String) =
            switch self.language {
            case .english:
                ("Please try again in a few minutes", "Hearth could not be reached just now. Nothing was changed.")
            case .simplifiedChinese: ("请稍后再试", "暂时无法连接 Hearth，没有做任何更改。")
            case .traditionalChinese: ("請稍後再試", "暫時無法連線 Hearth，沒有做任何更改。")
            }
        var response = self.page(.serviceUnavailable, title: text.0, paragraphs: [text.1])
        response.headers[.retryAfter] = String(retryAfter)
        return response
    }

    /// The client has made too many requests of late: nothing was done, wait (`Retry-After` in
    /// seconds) and try again.
    func tooManyRequests(retryAfter: Int) -> Response {
        let text: (String, String) =
            switch self.language {
            case .english:
                (
                    "Too many attempts",
                    "Please wait a minute, then open the link from your email again. Nothing was changed."
                )
            case .simplifiedChinese: ("尝试次数过多", "请等一分钟，再重新打开邮件中的链接。没有做任何更改。")
            case .traditionalChinese: ("嘗試次數過多", "請等一分鐘，再重新開啟郵件中的連結。沒有做任何更改。")
            }
        var response = self.page(.tooManyRequests, title: text.0, paragraphs: [text.1])
        response.headers[.retryAfter] = String(retryAfter)
        return response
    }

    /// A form body over the limit.
    func tooLarge() -> Response {
        let text: (String, String) =
            switch self.language {
            case .english: ("This request is too large", "Open the link from your email again.")
            case .simplifiedChinese: ("请求过大", "请重新打开邮件中的链接。")
            case .traditionalChinese: ("請求過大", "請重新開啟郵件中的連結。")
            }
        return self.page(.contentTooLarge, title: text.0, paragraphs: [text.1])
    }

    private func page(_ status: HTTPResponse.Status, title: String, paragraphs: [String], form: String = "")
        -> Response
    {
        let switcher = PageLanguage.allCases.map { language in
            language == self.language
                ? "<strong>\(Self.escape(language.nativeName))</strong>"
                : "<a href=\"\(Self.escape(self.path.rawValue))?t=\(Self.escape(self.token))&amp;lang=\(language.rawValue)\""
                    + " hreflang=\"\(language.htmlLang)\">\(Self.escape(language.nativeName))</a>"
        }
        let html = """
            <!doctype html>
            <html lang="\(self.language.htmlLang)">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex">
            <title>\(Self.escape(title)) · \(PageTexts.product)</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <main>
            <h1>\(Self.escape(title))</h1>
            \(paragraphs.map { "<p>\(Self.escape($0))</p>" }.joined(separator: "\n"))
            \(form)
            </main>
            <footer>
            <p>\(Self.escape(self.texts.footer))</p>
            <p>\(Self.escape(self.texts.languageLabel)): \(switcher.joined(separator: " · "))</p>
            </footer>
            </body>
            </html>

            """
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[.init("Referrer-Policy")!] = "no-referrer"
        headers[.init("X-Content-Type-Options")!] = "nosniff"
        headers[.init("X-Frame-Options")!] = "DENY"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static let style = """
        body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#222}\
        h1{font-size:1.5rem}button{font-size:1.1rem;padding:.6rem 1.4rem;border-radius:.4rem;border:1px solid #555;\
        background:#f4efe6;cursor:pointer}footer{margin-top:3rem;font-size:.85rem;color:#555}
        """

    /// Text as HTML: `&`, `<`, `>`, `"` and `'` escaped.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
