/// The contact page's paths, shared by the service that writes its links into emails (safety)
/// and the process that serves it (the gateway). A link is `BASE/contact/ACTION?t=TOKEN`.
public enum ContactPagePath: String, Sendable, CaseIterable {
    case confirm = "/contact/confirm"
    case decline = "/contact/decline"
    case optOut = "/contact/opt-out"

    /// The link for `token` (base64url, safe in a query as it is) on the page at `base`
    /// (`https://hearth.example`, a trailing slash or not).
    public func link(base: String, token: String) -> String {
        var base = Substring(base)
        while base.hasSuffix("/") { base = base.dropLast() }
        return "\(base)\(self.rawValue)?t=\(token)"
    }
}
