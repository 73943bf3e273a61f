public import HearthCore

extension RPCContext {
    /// The metadata key a client names its language in, as an HTTP client would
    /// ("zh-TW,zh;q=0.9,en;q=0.8"); the gateway passes it on.
    public static let languageKey = "accept-language"

    /// The language the caller asks for (``languageKey``); nil when it names none Hearth writes.
    public var language: UserLanguage? {
        self.metadata[Self.languageKey].flatMap(UserLanguage.fromAcceptLanguage)
    }
}
