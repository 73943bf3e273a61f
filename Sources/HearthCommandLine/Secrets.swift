import ArgumentParser
import Foundation

/// The two secrets a Hearth deployment shares: the internal credential every service
/// requires, and the HS256 key the gateway verifies client tokens with.
public struct Secrets: Sendable {
    public var internalCredential: String
    /// Only the gateway (and `hearth token`) needs it; nil where it was not asked for.
    public var jwtSecret: String?
}

/// Where the secrets come from: files named by flags, else the environment
/// (`HEARTH_INTERNAL_SECRET`, `HEARTH_JWT_SECRET`), else files under the data folder, created
/// with fresh random values on first use (what `hearth up` relies on for development).
public struct SecretOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(
        help: "File holding the internal credential. Default: $HEARTH_INTERNAL_SECRET, else DATA/secrets/internal.key"
    )
    public var internalSecretFile: String?

    @Option(help: "File holding the HS256 token secret. Default: $HEARTH_JWT_SECRET, else DATA/secrets/jwt.key")
    public var jwtSecretFile: String?

    @Option(
        help:
            "File holding the keys safety seals personal data with. Default: DATA/secrets/data.key (made when missing)"
    )
    public var dataKeyFile: String?

    /// The token secret as it stands, never a new one: a token signed with a secret made up
    /// now would be refused by every gateway running.
    public func existingJWTSecret(dataDirectory: URL) throws -> String {
        let fallback = dataDirectory.appendingPathComponent("secrets/jwt.key")
        guard
            let secret = try Self.secret(
                environment: ProcessInfo.processInfo.environment["HEARTH_JWT_SECRET"],
                file: self.jwtSecretFile,
                fallback: fallback,
                creating: false
            )
        else {
            throw CommandFailure(
                "no token secret: \(fallback.path) does not exist. Run this where `hearth up` keeps its data "
                    + "(or pass --data, --jwt-secret-file or $HEARTH_JWT_SECRET)."
            )
        }
        return secret
    }

    /// Reads the secrets, creating missing default files under `dataDirectory`; the token
    /// secret only when `includingJWT`.
    public func load(dataDirectory: URL, includingJWT: Bool) throws -> Secrets {
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
    public static func secret(environment: String?, file: String?, fallback: URL, creating: Bool) throws -> String? {
        if let file {
            let value = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            guard !value.isEmpty else { throw CommandFailure("\(file) is empty") }
            return value
        }
        if let environment, !environment.isEmpty { return environment }
        if let existing = try Self.existing(at: fallback) { return existing }
        guard creating else { return nil }
        // Made only where there is none: never over a file that exists (an operator's key that
        // is not text is an error, not something to replace). Written whole to a file of its
        // own and then linked into place, which fails if another process linked its key first:
        // processes started together on a new folder end up with the one key, never a file
        // seen half written.
        if let made = try Self.create(at: fallback) { return made }
        guard let theirs = try Self.existing(at: fallback) else {
            throw CommandFailure("\(fallback.path) vanished as it was made; start again")
        }
        return theirs
    }

    /// The secret in `url`, nil when there is no such file; an error when it cannot be read as
    /// text, or is empty.
    private static func existing(at url: URL) throws -> String? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let value: String
        do {
            value = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw CommandFailure("cannot read \(url.path) as text (a secret is a line of UTF-8): \(error)")
        }
        if value.isEmpty {
            throw CommandFailure("\(url.path) is empty: write a secret into it, or remove it to have one made")
        }
        return value
    }

    /// Writes 32 random bytes, hex, readable by the owner only, to `url` unless it exists;
    /// nil when another process made it first.
    private static func create(at url: URL) throws -> String? {
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        return try Self.create(at: url, contents: value + "\n") ? value : nil
    }

    /// Writes `contents`, readable by the owner only, to `url` unless it exists (its folder
    /// made, 0700); false when a file is there already (another process may have made it
    /// first: it is never replaced).
    public static func create(at url: URL, contents: String) throws -> Bool {
        if FileManager.default.fileExists(atPath: url.path) { return false }
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        let draft = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UUID().uuidString)")
        defer { unlink(draft.path) }
        guard
            FileManager.default.createFile(
                atPath: draft.path,
                contents: Data(contents.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else {
            throw CommandFailure("cannot write \(draft.path)")
        }
        guard link(draft.path, url.path) == 0 else {
            if errno == EEXIST { return false }
            throw CommandFailure("cannot create \(url.path): \(String(cString: strerror(errno)))")
        }
        return true
    }
}
