import ArgumentParser
import Foundation

/// The two secrets a Hearth deployment shares: the internal credential every service
/// requires, and the HS256 key the gateway verifies client tokens with.
struct Secrets: Sendable {
    var internalCredential: String
    /// Only the gateway (and `hearth token`) needs it; nil where it was not asked for.
    var jwtSecret: String?
}

/// Where the secrets come from: the environment (`HEARTH_INTERNAL_SECRET`,
/// `HEARTH_JWT_SECRET`), files named by flags, or files under the data folder, created with
/// fresh random values on first use (what `hearth up` relies on for development).
struct SecretOptions: ParsableArguments {
    @Option(
        help: "File holding the internal credential. Default: $HEARTH_INTERNAL_SECRET, else DATA/secrets/internal.key"
    )
    var internalSecretFile: String?

    @Option(help: "File holding the HS256 token secret. Default: $HEARTH_JWT_SECRET, else DATA/secrets/jwt.key")
    var jwtSecretFile: String?

    /// Reads the secrets, creating missing default files under `dataDirectory`; the token
    /// secret only when `includingJWT`.
    func load(dataDirectory: URL, includingJWT: Bool) throws -> Secrets {
        let environment = ProcessInfo.processInfo.environment
        return Secrets(
            internalCredential: try Self.secret(
                environment: environment["HEARTH_INTERNAL_SECRET"],
                file: self.internalSecretFile,
                fallback: dataDirectory.appendingPathComponent("secrets/internal.key")
            ),
            jwtSecret: includingJWT
                ? try Self.secret(
                    environment: environment["HEARTH_JWT_SECRET"],
                    file: self.jwtSecretFile,
                    fallback: dataDirectory.appendingPathComponent("secrets/jwt.key")
                ) : nil
        )
    }

    private static func secret(environment: String?, file: String?, fallback: URL) throws -> String {
        if let environment, !environment.isEmpty { return environment }
        if let file {
            let value = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            guard !value.isEmpty else { throw ValidationError("\(file) is empty") }
            return value
        }
        if let existing = try? String(contentsOf: fallback, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines
        ),
            !existing.isEmpty
        {
            return existing
        }
        return try Self.create(at: fallback)
    }

    /// Writes 32 random bytes, hex, readable by the owner only.
    private static func create(at url: URL) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        guard
            FileManager.default.createFile(
                atPath: url.path,
                contents: Data((value + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else {
            throw ValidationError("cannot write \(url.path)")
        }
        return value
    }
}
