import ArgumentParser
import Foundation

/// The secrets a process holds: the credential of each link it is an end of, and the HS256
/// key the gateway verifies client tokens with.
public struct Secrets: Sendable {
    /// The shortest secret taken: 32 bytes, as RFC 7518 asks of an HMAC key.
    public static let minimumBytes = 32

    /// By link; only the links asked for when loading.
    public var links: [ProcessLink: String]
    /// Only the gateway (and `hearth token`) needs it; nil where it was not asked for.
    public var jwtSecret: String?

    public init(links: [ProcessLink: String], jwtSecret: String? = nil) {
        self.links = links
        self.jwtSecret = jwtSecret
    }

    /// The credential `caller` calls `callee` with.
    public func credential(_ caller: ProcessName, to callee: ProcessName) throws -> String {
        let link = ProcessLink(caller, callee)
        guard let credential = self.links[link] else {
            throw CommandFailure("no credential for \(link) (\(link.fileName)) was loaded")
        }
        return credential
    }
}

/// Where the secrets come from: the link credentials from a folder (`--secrets-dir`, else
/// DATA/secrets), the token secret from a file named by a flag, else the environment
/// (`HEARTH_JWT_SECRET`), else DATA/secrets/jwt.key. Under DATA/secrets, missing files are
/// made with fresh random values (what `hearth up` relies on for development); in a folder
/// an operator names, a missing one is an error. A secret shorter than 32 bytes is refused.
public struct SecretOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(
        help: ArgumentHelp(
            "Folder holding one credential per link between processes (CALLER-CALLEE.key). Default: DATA/secrets, where missing ones are made",
            valueName: "folder"
        )
    )
    public var secretsDir: String?

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
        let folder = self.folder(dataDirectory: dataDirectory)
        guard let secret = try self.jwtSecret(in: folder, creating: false) else {
            throw CommandFailure(
                "no token secret: \(folder.appendingPathComponent("jwt.key").path) does not exist. Run this "
                    + "where `hearth up` keeps its data "
                    + "(or pass --data, --secrets-dir, --jwt-secret-file or $HEARTH_JWT_SECRET)."
            )
        }
        return secret
    }

    /// The token secret: from --jwt-secret-file, else $HEARTH_JWT_SECRET, else FOLDER/jwt.key
    /// (made when missing and `creating`).
    private func jwtSecret(in folder: URL, creating: Bool) throws -> String? {
        try Self.secret(
            environment: ProcessInfo.processInfo.environment["HEARTH_JWT_SECRET"],
            file: self.jwtSecretFile,
            fallback: folder.appendingPathComponent("jwt.key"),
            creating: creating
        )
    }

    /// Where the link credentials (and, unless named otherwise, the token secret) are: the
    /// folder `--secrets-dir` names, else DATA/secrets.
    func folder(dataDirectory: URL) -> URL {
        self.secretsDir.map { URL(fileURLWithPath: $0) } ?? dataDirectory.appendingPathComponent("secrets")
    }

    /// Reads the credentials of `links`, and the token secret when `includingJWT`. Under
    /// DATA/secrets missing ones are made when `creating` (a process starting); in a folder
    /// `--secrets-dir` names, never. Refuses the old shared secret, and two links with one
    /// credential: the first link to match would take the other's calls, and the gateway's
    /// may call every method.
    public func load(
        dataDirectory: URL,
        links: [ProcessLink],
        includingJWT: Bool,
        creating: Bool = true
    ) throws -> Secrets {
        if let old = ProcessInfo.processInfo.environment["HEARTH_INTERNAL_SECRET"], !old.isEmpty {
            throw CommandFailure(
                "HEARTH_INTERNAL_SECRET is no longer read: each link between processes has a credential of its "
                    + "own. Make them with `hearth make-secrets --out DIR`, give each process its links' files "
                    + "with --secrets-dir DIR, and unset HEARTH_INTERNAL_SECRET."
            )
        }
        let folder = self.folder(dataDirectory: dataDirectory)
        let makes = creating && self.secretsDir == nil
        var credentials: [ProcessLink: String] = [:]
        var linkOf: [String: ProcessLink] = [:]
        for link in links {
            let url = folder.appendingPathComponent(link.fileName)
            guard let credential = try Self.secret(environment: nil, file: nil, fallback: url, creating: makes) else {
                throw CommandFailure(
                    "no credential for \(link): \(url.path) does not exist. Both ends of a link need the same "
                        + "file: make a deployment's with `hearth make-secrets --out DIR` and pass --secrets-dir DIR "
                        + "(or run where `hearth up` keeps its data)."
                )
            }
            if let other = linkOf[credential] {
                throw CommandFailure(
                    "\(folder.appendingPathComponent(other.fileName).path) and \(url.path) hold the same credential: "
                        + "each link needs its own (`hearth make-secrets` makes them)"
                )
            }
            linkOf[credential] = link
            credentials[link] = credential
        }
        guard includingJWT else { return Secrets(links: credentials) }
        guard let jwt = try self.jwtSecret(in: folder, creating: makes) else {
            throw CommandFailure(
                "no token secret: \(folder.appendingPathComponent("jwt.key").path) does not exist (pass "
                    + "--jwt-secret-file, or make it with "
                    + "`hearth make-secrets`)"
            )
        }
        return Secrets(links: credentials, jwtSecret: jwt)
    }

    /// The credential of one link, as it stands (never made up now: a new one would match no
    /// running process): what operators' tools call a service with.
    public func credential(of link: ProcessLink, dataDirectory: URL) throws -> String {
        try self.load(dataDirectory: dataDirectory, links: [link], includingJWT: false, creating: false).credential(
            link.caller,
            to: link.callee
        )
    }

    /// A file named by a flag wins over the environment (an operator who names one means it),
    /// the environment over the data folder's file; that file is made when missing and
    /// `creating`, else nil.
    public static func secret(environment: String?, file: String?, fallback: URL, creating: Bool) throws -> String? {
        try self.unchecked(environment: environment, file: file, fallback: fallback, creating: creating).map {
            try Self.longEnough($0.value, from: $0.source)
        }
    }

    /// Refuses a secret shorter than ``Secrets/minimumBytes``: one an operator typed
    /// by hand, which a guess could find.
    static func longEnough(_ value: String, from source: String) throws -> String {
        let bytes = value.utf8.count
        guard bytes >= Secrets.minimumBytes else {
            throw CommandFailure(
                "the secret in \(source) is \(bytes) bytes; at least \(Secrets.minimumBytes) are required "
                    + "(make one with `openssl rand -hex 32`)"
            )
        }
        return value
    }

    private static func unchecked(environment: String?, file: String?, fallback: URL, creating: Bool) throws -> (
        value: String, source: String
    )? {
        if let file {
            let value = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            guard !value.isEmpty else { throw CommandFailure("\(file) is empty") }
            return (value, file)
        }
        if let environment, !environment.isEmpty { return (environment, "the environment") }
        if let existing = try Self.existing(at: fallback) { return (existing, fallback.path) }
        guard creating else { return nil }
        // Made only where there is none: never over a file that exists (an operator's key that
        // is not text is an error, not something to replace). Written whole to a file of its
        // own and then linked into place, which fails if another process linked its key first:
        // processes started together on a new folder end up with the one key, never a file
        // seen half written.
        if let made = try Self.create(at: fallback) { return (made, fallback.path) }
        guard let theirs = try Self.existing(at: fallback) else {
            throw CommandFailure("\(fallback.path) vanished as it was made; start again")
        }
        return (theirs, fallback.path)
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
        if !FileManager.default.fileExists(atPath: folder.path) {
            // A folder made here is the owner's alone; one that was there keeps its mode.
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        }
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
