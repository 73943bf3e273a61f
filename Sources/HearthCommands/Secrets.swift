import ArgumentParser
import Foundation

/// The two secrets a Hearth deployment shares: the internal credential every service
/// requires, and the HS256 key the gateway verifies client tokens with.
struct Secrets: Sendable {
    var internalCredential: String
    /// Only the gateway (and `hearth token`) needs it; nil where it was not asked for.
    var jwtSecret: String?
}

/// Where the secrets come from: files named by flags, else the environment
/// (`HEARTH_INTERNAL_SECRET`, `HEARTH_JWT_SECRET`), else files under the data folder, created
/// with fresh random values on first use (what `hearth up` relies on for development).
struct SecretOptions: ParsableArguments {
    @Option(
        help: "File holding the internal credential. Default: $HEARTH_INTERNAL_SECRET, else DATA/secrets/internal.key"
    )
    var internalSecretFile: String?

    @Option(help: "File holding the HS256 token secret. Default: $HEARTH_JWT_SECRET, else DATA/secrets/jwt.key")
    var jwtSecretFile: String?

    /// The token secret as it stands, never a new one: a token signed with a secret made up
    /// now would be refused by every gateway running.
    func existingJWTSecret(dataDirectory: URL) throws -> String {
        let fallback = dataDirectory.appendingPathComponent("secrets/jwt.key")
        guard
            let secret = try Self.secret(
                environment: ProcessInfo.processInfo.environment["HEARTH_JWT_SECRET"],
                file: self.jwtSecretFile,
                fallback: fallback,
                creating: false
            )
        else {
            throw ValidationError(
                "no token secret: \(fallback.path) does not exist. Run this where `hearth up` keeps its data "
                    + "(or pass --data, --jwt-secret-file or $HEARTH_JWT_SECRET)."
            )
        }
        return secret
    }

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
        // Created when missing: never nil.
        try Self.secret(environment: environment, file: file, fallback: fallback, creating: true)!
    }

    /// A file named by a flag wins over the environment (an operator who names one means it),
    /// the environment over the data folder's file; that file is made when missing and
    /// `creating`, else nil.
    static func secret(environment: String?, file: String?, fallback: URL, creating: Bool) throws -> String? {
        if let file {
            let value = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            guard !value.isEmpty else { throw ValidationError("\(file) is empty") }
            return value
        }
        if let environment, !environment.isEmpty { return environment }
        if let existing = try? String(contentsOf: fallback, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines
        ),
            !existing.isEmpty
        {
            return existing
        }
        return creating ? try Self.create(at: fallback) : nil
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
