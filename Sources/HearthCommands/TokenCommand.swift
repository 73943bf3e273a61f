import ArgumentParser
import Foundation
import HearthCommandLine
import HearthGateway

/// `hearth token`: mints a client token with the deployment's HS256 secret.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a client token (JWT, HS256) for a user.",
        discussion: """
            Signs with --jwt-secret-file, else $HEARTH_JWT_SECRET, else DATA/secrets/jwt.key (as
            the gateway of `hearth up` in that folder does); it never makes a new secret up.
              export HEARTH_TOKEN=$(hearth token --user alice --ttl 1h)
            """
    )

    @Option(help: "The user id (the token's subject).")
    var user: String

    @Option(
        help:
            "How long the token is valid, e.g. 15m, 1h, 24h. The gateway refuses longer than its --jwt-max-lifetime (24h)."
    )
    var ttl = DurationArgument(.seconds(3600))

    @Option(help: "The token's issuer (iss), for a gateway given --jwt-issuer.")
    var issuer: String?

    @Option(help: "An audience (aud) of the token, repeatable, for a gateway given --jwt-audience.")
    var audience: [String] = []

    @Option(help: "Folder holding the default secrets.")
    var data = "./data"

    @OptionGroup var secrets: SecretOptions

    func validate() throws {
        guard !self.user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard self.ttl.seconds > 0 else { throw ValidationError("--ttl must be positive") }
    }

    func run() async throws {
        let secret = try self.secrets.existingJWTSecret(dataDirectory: URL(fileURLWithPath: self.data))
        let now = Date()
        let token = try await TokenSigner(hmacSecret: secret).token(
            for: HearthClaims(
                subject: self.user,
                issuedAt: now,
                expiresAt: now.addingTimeInterval(self.ttl.seconds),
                issuer: self.issuer,
                audience: self.audience.isEmpty ? nil : self.audience
            )
        )
        print(token)
    }
}
