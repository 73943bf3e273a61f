import HearthCommandLine

extension Secrets {
    /// Every link's credential, each its own, and a token secret: what `hearth up` would make.
    static let forTests = Secrets(
        links: Dictionary(uniqueKeysWithValues: ProcessLink.all.map { ($0, "test-credential-of-\($0.fileName)") }),
        jwtSecret: String(repeating: "k", count: 32)
    )
}
