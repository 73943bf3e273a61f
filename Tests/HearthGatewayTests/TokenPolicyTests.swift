import Foundation
import HearthCore
import HearthRPC
import JWTKit
import Testing

@testable import HearthGateway

/// What the verifier asks of a token beyond its signature and times (issuer, audience, lifetime,
/// HS256 beside an EdDSA key), each at its boundary and with the message a client sees.
@Suite("Token policy")
struct TokenPolicyTests {
    private static let start = Date(timeIntervalSince1970: 1_773_144_000)

    /// Claims written as the test likes: `aud` a string, an array, or a number.
    private struct Claims<Audience: Codable & Sendable>: JWTPayload {
        var sub = "alice"
        var iat: Date
        var exp: Date
        var aud: Audience

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// `Bearer <payload signed with the harness's HS256 secret>`.
    private func bearer(_ payload: some JWTPayload) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: jwtSecret), digestAlgorithm: .sha256)
        return "Bearer \(try await keys.sign(payload))"
    }

    private func verifier(_ policy: TokenPolicy = TokenPolicy(), clock: ManualClock) async throws -> TokenVerifier {
        try await TokenVerifier(hmacSecret: jwtSecret, policy: policy, clock: clock)
    }

    /// The message of the UNAUTHENTICATED refusal of `authorization`; nil when it is accepted.
    private func refusal(_ verifier: TokenVerifier, _ authorization: String) async -> String? {
        do {
            _ = try await verifier.userID(authorization: authorization)
            return nil
        } catch let error as RPCError {
            #expect(error.code == .unauthenticated, "\(error)")
            return error.message
        } catch {
            Issue.record("not an RPCError: \(error)")
            return "\(error)"
        }
    }

    @Test("exp - iat: exactly the maximum is accepted, a second over is refused and not kept; 24 h unless told")
    func lifetimeBoundary() async throws {
        let clock = ManualClock(Self.start)
        let now = clock.now()
        let hour = try await self.verifier(TokenPolicy(maxLifetime: 3600), clock: clock)
        let atMax = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 3600))
        let over = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 3601))
        #expect(try await hour.userID(authorization: atMax) == "alice")
        #expect(await self.refusal(hour, over) == "token lifetime (exp - iat) of 3601 s exceeds the maximum of 3600 s")
        #expect(hour.knownTokens == 1, "only the accepted token is kept")
        #expect(try hour.knownUserID(authorization: over) == nil)
        // Issued an hour ago, a second left: its lifetime is what counts, not what remains.
        let old = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now - 3600, expiresAt: now + 1))
        #expect(await self.refusal(hour, old) == "token lifetime (exp - iat) of 3601 s exceeds the maximum of 3600 s")

        #expect(TokenPolicy().maxLifetime == 24 * 3600)
        let byDefault = try await self.verifier(clock: clock)
        let day = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 86_400))
        let dayAndASecond = try await self.bearer(
            HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 86_401)
        )
        #expect(try await byDefault.userID(authorization: day) == "alice")
        #expect(
            await self.refusal(byDefault, dayAndASecond)
                == "token lifetime (exp - iat) of 86401 s exceeds the maximum of 86400 s"
        )
    }

    @Test(
        "exp from now, on every use: at most the maximum and the 60 s leeway, a second more refused (no iat, a future iat, a clock set back)"
    )
    func remainingLifetime() async throws {
        let clock = ManualClock(Self.start)
        let now = clock.now()
        let verifier = try await self.verifier(TokenPolicy(maxLifetime: 3600), clock: clock)
        // Without iat (RFC 7519 makes it optional): accepted, but it can live no longer.
        let atMax = try await self.bearer(HearthClaims(subject: "alice", issuedAt: nil, expiresAt: now + 3660))
        let over = try await self.bearer(HearthClaims(subject: "alice", issuedAt: nil, expiresAt: now + 3661))
        #expect(try await verifier.userID(authorization: atMax) == "alice")
        #expect(
            await self.refusal(verifier, over) == "token expires 3661 s from now, beyond the maximum lifetime of 3600 s"
        )
        // A second later the same token is within: times are checked when it is used.
        clock.advance(by: 1)
        #expect(try await verifier.userID(authorization: over) == "alice")
        // An iat in the future fits exp - iat, not exp from now.
        let future = try await self.bearer(
            HearthClaims(subject: "alice", issuedAt: now + 7200, expiresAt: now + 7800)
        )
        #expect(
            await self.refusal(verifier, future)
                == "token expires 7799 s from now, beyond the maximum lifetime of 3600 s"
        )
        // A kept token is checked again: the clock set back 2 s puts it beyond.
        #expect(try verifier.knownUserID(authorization: atMax) == "alice")
        clock.set(now - 1)
        #expect(throws: RPCError.self) { _ = try verifier.knownUserID(authorization: atMax) }
        #expect(
            await self.refusal(verifier, atMax)
                == "token expires 3661 s from now, beyond the maximum lifetime of 3600 s"
        )
    }

    @Test("--jwt-issuer: the same iss is accepted; another (compared exactly), or none, is refused saying so")
    func issuer() async throws {
        let clock = ManualClock(Self.start)
        let now = clock.now()
        let verifier = try await self.verifier(TokenPolicy(issuer: "https://id.example.com"), clock: clock)
        func token(_ issuer: String?) async throws -> String {
            try await self.bearer(
                HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 600, issuer: issuer)
            )
        }
        let same = try await token("https://id.example.com")
        let other = try await token("https://id.example.org")
        let otherCase = try await token("HTTPS://ID.EXAMPLE.COM")
        let none = try await token(nil)
        #expect(try await verifier.userID(authorization: same) == "alice")
        #expect(
            await self.refusal(verifier, other)
                == "token issuer 'https://id.example.org' is not accepted; expected 'https://id.example.com'"
        )
        #expect(await self.refusal(verifier, otherCase) != nil, "compared exactly, case and all")
        #expect(await self.refusal(verifier, none) == "token has no issuer (iss); expected 'https://id.example.com'")
        #expect(verifier.knownTokens == 1)
        // Without --jwt-issuer, any issuer or none.
        let anyIssuer = try await self.verifier(clock: clock)
        #expect(try await anyIssuer.userID(authorization: other) == "alice")
        #expect(try await anyIssuer.userID(authorization: none) == "alice")
    }

    @Test("--jwt-audience: aud as a string or an array must include it; another, an empty array or none is refused")
    func audience() async throws {
        let clock = ManualClock(Self.start)
        let now = clock.now()
        let verifier = try await self.verifier(TokenPolicy(audience: "hearth-api"), clock: clock)
        func claims<A: Codable & Sendable>(_ aud: A) -> Claims<A> { Claims(iat: now, exp: now + 600, aud: aud) }

        let asString = try await self.bearer(claims("hearth-api"))
        let asArray = try await self.bearer(claims(["other", "hearth-api"]))
        let asArrayOfOne = try await self.bearer(claims(["hearth-api"]))
        // Written as the test means: a JSON string, then JSON arrays.
        #expect(try Self.payload(of: asString).contains(#""aud":"hearth-api""#))
        #expect(try Self.payload(of: asArray).contains(#""aud":["other","hearth-api"]"#))
        #expect(try Self.payload(of: asArrayOfOne).contains(#""aud":["hearth-api"]"#))
        for accepted in [asString, asArray, asArrayOfOne] {
            #expect(try await verifier.userID(authorization: accepted) == "alice")
        }

        let another = try await self.bearer(claims("hearth"))
        let othersOnly = try await self.bearer(claims(["other", "HEARTH-API"]))
        let emptyArray = try await self.bearer(claims([String]()))
        let unnamed = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 600))
        let number = try await self.bearer(claims(42))
        let excluded = "token audience does not include 'hearth-api'"
        let none = "token has no audience (aud); expected one including 'hearth-api'"
        #expect(await self.refusal(verifier, another) == excluded)
        #expect(await self.refusal(verifier, othersOnly) == excluded)
        #expect(await self.refusal(verifier, emptyArray) == none)
        #expect(await self.refusal(verifier, unnamed) == none)
        #expect(await self.refusal(verifier, number)?.hasPrefix("malformed token") == true)
        // HearthClaims writes one audience as a string, several as an array.
        let signed = try await self.bearer(
            HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 600, audience: ["hearth-api"])
        )
        #expect(try Self.payload(of: signed).contains(#""aud":"hearth-api""#))
        #expect(try await verifier.userID(authorization: signed) == "alice")
    }

    @Test("with an EdDSA key, HS256 tokens are refused saying so unless accepted; EdDSA tokens verify either way")
    func hs256BesideEdDSA() async throws {
        let clock = ManualClock(Self.start)
        let now = clock.now()
        let key = try EdDSA.PrivateKey()
        let publicKey = key.publicKey.rawRepresentation.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let refusing = try await TokenVerifier(hmacSecret: jwtSecret, eddsaPublicKey: publicKey, clock: clock)
        let accepting = try await TokenVerifier(
            hmacSecret: jwtSecret,
            eddsaPublicKey: publicKey,
            policy: TokenPolicy(acceptsHS256WithEdDSA: true),
            clock: clock
        )
        let hs256 = try await self.bearer(HearthClaims(subject: "alice", issuedAt: now, expiresAt: now + 600))
        #expect(await self.refusal(refusing, hs256) == "HS256 tokens are not accepted when an EdDSA key is configured")
        #expect(refusing.knownTokens == 0)
        #expect(try await accepting.userID(authorization: hs256) == "alice")

        let signer = JWTKeyCollection()
        await signer.add(eddsa: key)
        let eddsa =
            "Bearer " + (try await signer.sign(HearthClaims(subject: "erin", issuedAt: now, expiresAt: now + 600)))
        #expect(try await refusing.userID(authorization: eddsa) == "erin")
        #expect(try await accepting.userID(authorization: eddsa) == "erin")
        // The same policy holds for EdDSA tokens.
        let long =
            "Bearer " + (try await signer.sign(HearthClaims(subject: "erin", issuedAt: now, expiresAt: now + 86_401)))
        #expect(await self.refusal(refusing, long)?.hasPrefix("token lifetime (exp - iat) of 86401 s") == true)

        // Without an EdDSA key (as `hearth up` runs), HS256 needs no flag.
        #expect(try await self.verifier(clock: clock).userID(authorization: hs256) == "alice")
    }

    /// The JSON of a bearer token's payload.
    private static func payload(of authorization: String) throws -> String {
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".")
        let data = try #require(Data(base64URL: parts[1]))
        return String(decoding: data, as: UTF8.self)
    }
}
