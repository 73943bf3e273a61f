public import Foundation
public import HearthCore
import HearthRPC
import JWTKit
import Synchronization

/// The claims Hearth reads from a client's token: `sub` is the user id; `iss` and `aud` are
/// checked when the gateway is told which to accept (``TokenPolicy``).
public struct HearthClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var nbf: NotBeforeClaim?
    public var iat: IssuedAtClaim?
    public var iss: IssuerClaim?
    /// A string or an array of strings in the token (RFC 7519); one value is written as a string.
    public var aud: AudienceClaim?

    public init(
        subject: String,
        issuedAt: Date?,
        expiresAt: Date,
        notBefore: Date? = nil,
        issuer: String? = nil,
        audience: [String]? = nil
    ) {
        self.sub = SubjectClaim(value: subject)
        self.iat = issuedAt.map { IssuedAtClaim(value: $0) }
        self.exp = ExpirationClaim(value: expiresAt)
        self.nbf = notBefore.map { NotBeforeClaim(value: $0) }
        self.iss = issuer.map { IssuerClaim(value: $0) }
        self.aud = audience.map { AudienceClaim(value: $0) }
    }

    /// Times, issuer, audience and lifetime are checked by ``TokenVerifier`` with its clock,
    /// leeway and ``TokenPolicy``, not here.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Verifies `authorization: Bearer <JWT>` with jwt-kit: HS256 with a shared secret and,
/// optionally, EdDSA (Ed25519) with a public key (HS256 is then refused unless the policy
/// accepts it). `exp` and `nbf` are checked against an injectable clock with 60 s of leeway;
/// issuer, audience and lifetime as the ``TokenPolicy`` says. Every failure is
/// UNAUTHENTICATED and says why.
public struct TokenVerifier: Sendable {
    public static let leeway: TimeInterval = 60

    private let hmac: JWTKeyCollection?
    private let eddsa: JWTKeyCollection?
    private let policy: TokenPolicy
    private let clock: any WallClock
    /// Tokens whose signature already checked out, and whose fixed claims (algorithm, issuer,
    /// audience, `exp - iat`) the policy accepted: a client sends the same token on every
    /// call, and verifying it (an actor hop, JSON, HMAC) cost more than forwarding the call.
    /// Keyed by the token's canonical `authorization` value, `Bearer <token>`: the value a
    /// client sends is looked up as it came, with no copy, and other spellings of it (blanks,
    /// the scheme's case) share its entry, so they cannot flush the others. Times (`exp`,
    /// `nbf`, `exp` from now) are still checked on every use.
    private let verified = VerifiedTokens(capacity: 10_000)

    /// The longest `authorization` value taken: a token of Hearth's claims is a few hundred
    /// bytes; a longer value is refused before any work is done on it.
    public static let maxAuthorizationBytes = 8192

    /// How many verified tokens it keeps now (for tests).
    var knownTokens: Int { self.verified.count }

    /// - Parameters:
    ///   - hmacSecret: the HS256 secret; nil accepts no HS256 token.
    ///   - eddsaPublicKey: an Ed25519 public key, base64url (JWK `x`); nil accepts no EdDSA token.
    ///   - policy: the issuer, audience and lifetime a token must have, and whether HS256 is
    ///     accepted beside an EdDSA key.
    /// - Throws: when the public key is not valid.
    public init(
        hmacSecret: String?,
        eddsaPublicKey: String? = nil,
        policy: TokenPolicy = TokenPolicy(),
        clock: any WallClock = SystemClock()
    ) async throws {
        if let hmacSecret {
            try checkStrength(of: hmacSecret)
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
            self.hmac = keys
        } else {
            self.hmac = nil
        }
        if let eddsaPublicKey {
            let keys = JWTKeyCollection()
            await keys.add(eddsa: try EdDSA.PublicKey(x: eddsaPublicKey, curve: .ed25519))
            self.eddsa = keys
        } else {
            self.eddsa = nil
        }
        self.policy = policy
        self.clock = clock
    }

    /// The verified user id of an `authorization` metadata value.
    /// - Throws: ``RPCError`` UNAUTHENTICATED saying what is wrong: missing, malformed,
    ///   unsupported algorithm (including `none`, and HS256 beside an EdDSA key unless accepted),
    ///   bad signature, another issuer or audience, too long a lifetime, expired, not yet valid.
    public func userID(authorization: String?) async throws -> String {
        try await self.verifiedToken(authorization: authorization).userID
    }

    /// The verified user id of an `authorization` metadata value, and when its token expires.
    /// - Throws: ``RPCError`` UNAUTHENTICATED as ``userID(authorization:)`` does.
    public func verifiedToken(authorization: String?) async throws -> (userID: String, expiresAt: Date) {
        let key = try Self.canonical(authorization)
        let claims = try await self.verified.claims(of: key) {
            try await self.verify(
                String(decoding: key.utf8.dropFirst(Self.scheme.utf8.count), as: UTF8.self)
            )
        }
        return (try self.userID(of: claims), claims.exp.value)
    }

    /// The verified user id, without awaiting, when this token's signature checked out before;
    /// nil when it must be verified first (``userID(authorization:)``). Every call of a client
    /// after its first takes this path.
    /// - Throws: ``RPCError`` UNAUTHENTICATED as ``userID(authorization:)`` does.
    public func knownUserID(authorization: String?) throws -> String? {
        try self.verified.known(Self.canonical(authorization)).map(self.userID(of:))
    }

    private static let scheme = "Bearer "

    /// `authorization` as `Bearer <token>`: the value itself when it is written so (what
    /// clients send), else that form of its token (the scheme in any case, blanks around the
    /// token). Plain byte work: this runs on every call (Foundation's trimming cost a fifth of
    /// the gateway's CPU under load, walking the value by Characters 3%).
    private static func canonical(_ authorization: String?) throws -> String {
        guard let authorization, !authorization.isEmpty else {
            throw Self.failure("missing authorization: send 'authorization: Bearer <token>'")
        }
        let bytes = authorization.utf8
        guard bytes.count <= Self.maxAuthorizationBytes else {
            throw Self.failure("authorization too long: at most \(Self.maxAuthorizationBytes) bytes")
        }
        let scheme = Self.scheme.utf8
        guard bytes.count > scheme.count,
            zip(bytes.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 })  // ASCII, any case
        else {
            throw Self.failure("malformed authorization: expected 'Bearer <token>'")
        }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let afterScheme = bytes.index(bytes.startIndex, offsetBy: scheme.count)
        var start = afterScheme
        var end = bytes.endIndex
        while start < end, isBlank(bytes[start]) { start = bytes.index(after: start) }
        while end > start, isBlank(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        if start == afterScheme, end == bytes.endIndex, bytes.starts(with: scheme) { return authorization }
        return Self.scheme + String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The subject of claims whose signature and fixed claims checked out, once their times are
    /// checked now.
    private func userID(of claims: HearthClaims) throws -> String {
        let now = self.clock.now()
        if claims.exp.value.addingTimeInterval(Self.leeway) <= now {
            throw Self.failure("token expired at \(claims.exp.value.formatted(.iso8601))")
        }
        if let nbf = claims.nbf, nbf.value.addingTimeInterval(-Self.leeway) > now {
            throw Self.failure("token not valid before \(nbf.value.formatted(.iso8601))")
        }
        try self.policy.checkRemainingLifetime(of: claims, now: now, leeway: Self.leeway)
        guard !claims.sub.value.isEmpty else {
            throw Self.failure("token has an empty subject")
        }
        return claims.sub.value
    }

    /// The claims of a token whose algorithm is accepted, whose signature is valid and whose
    /// fixed claims (issuer, audience, `exp - iat`) the policy accepts.
    private func verify(_ token: String) async throws -> HearthClaims {
        let keys: JWTKeyCollection
        switch try Self.algorithm(of: token) {
        case "HS256" where self.hmac != nil:
            guard self.eddsa == nil || self.policy.acceptsHS256WithEdDSA else {
                throw Self.failure("HS256 tokens are not accepted when an EdDSA key is configured")
            }
            keys = self.hmac!
        case "EdDSA" where self.eddsa != nil:
            keys = self.eddsa!
        case let algorithm:
            throw Self.failure("unsupported token algorithm '\(algorithm)'")
        }
        let claims: HearthClaims
        do {
            claims = try await keys.verify(token, as: HearthClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw Self.failure("invalid token signature")
        } catch {
            throw Self.failure("malformed token: \(error)")
        }
        try self.policy.checkFixedClaims(of: claims)
        return claims
    }

    /// The `alg` of a token's header, read before any key is chosen (so `none` is named).
    private static func algorithm(of token: String) throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Data(base64URL: parts[0]),
            let fields = try? JSONSerialization.jsonObject(with: header) as? [String: Any],
            let algorithm = fields["alg"] as? String
        else {
            throw Self.failure("malformed token: expected three base64url parts with a JSON header naming 'alg'")
        }
        return algorithm
    }

    private static func failure(_ message: String) -> RPCError {
        RPCError(.unauthenticated, message)
    }
}

/// Claims of tokens whose signatures were verified (and whose fixed claims were accepted), by
/// `Bearer <token>`. Bounded: when full it starts over, which costs one verification per active
/// token.
final class VerifiedTokens: Sendable {
    private let capacity: Int
    private let entries = Mutex<[String: HearthClaims]>([:])

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// How many tokens it holds (for tests).
    var count: Int { self.entries.withLock { $0.count } }

    /// The claims of `token` if its signature was verified before.
    func known(_ token: String) -> HearthClaims? {
        self.entries.withLock { $0[token] }
    }

    func claims(of token: String, verify: () async throws -> HearthClaims) async throws -> HearthClaims {
        if let known = self.known(token) { return known }
        let claims = try await verify()
        self.entries.withLock { entries in
            if entries.count >= self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = claims
        }
        return claims
    }
}

/// Mints tokens with the HS256 secret (`hearth token`, tests).
public struct TokenSigner: Sendable {
    private let keys: JWTKeyCollection

    /// - Throws: ``WeakSecretError`` when the secret is shorter than 32 bytes.
    public init(hmacSecret: String) async throws {
        try checkStrength(of: hmacSecret)
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
        self.keys = keys
    }

    public func token(for claims: HearthClaims) async throws -> String {
        try await self.keys.sign(claims)
    }
}

/// An HS256 secret shorter than the hash (32 bytes) weakens every token signed with it.
public struct WeakSecretError: Error, CustomStringConvertible {
    public var description: String { "the token secret must be at least 32 bytes long" }
}

private func checkStrength(of secret: String) throws {
    guard secret.utf8.count >= 32 else { throw WeakSecretError() }
}

extension Data {
    /// Decodes base64url without padding, as JWT parts are written.
    init?(base64URL text: Substring) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
