public import Foundation
import HearthRPC
import JWTKit

/// What the gateway asks of a token beyond a valid signature and its times: the issuer and
/// audience it names, how long it may live, and whether HS256 is still taken once an EdDSA key
/// is configured. Every refusal is UNAUTHENTICATED and says why.
public struct TokenPolicy: Sendable, Equatable {
    /// What `--jwt-max-lifetime` defaults to: a day, the development token `hearth up` prints
    /// (and ten times `hearth token`'s default). A token outlives its user's sign-out while the
    /// gateway keeps no revocation list; a client that needs longer refreshes its token.
    public static let defaultMaxLifetime: TimeInterval = 24 * 3600

    /// The `iss` a token must carry; nil accepts any issuer, or none.
    public var issuer: String?
    /// A value a token's `aud` (a string or an array of strings) must include; nil accepts any.
    public var audience: String?
    /// The longest a token may live: `exp - iat`, and `exp` from now (with the verifier's
    /// leeway, for clocks that differ), so that a token without `iat` lives no longer.
    public var maxLifetime: TimeInterval
    /// Whether HS256 tokens are still accepted when an EdDSA public key is configured (by
    /// default they are not: the shared secret is then a second way in that the issuer of the
    /// EdDSA tokens does not control).
    public var acceptsHS256WithEdDSA: Bool

    public init(
        issuer: String? = nil,
        audience: String? = nil,
        maxLifetime: TimeInterval = Self.defaultMaxLifetime,
        acceptsHS256WithEdDSA: Bool = false
    ) {
        self.issuer = issuer
        self.audience = audience
        self.maxLifetime = maxLifetime
        self.acceptsHS256WithEdDSA = acceptsHS256WithEdDSA
    }

    /// Checks what never changes in a token (its issuer, its audience, `exp - iat`): once, when
    /// its signature is verified, before it is kept (the policy is the verifier's for its life).
    /// - Throws: ``RPCError`` UNAUTHENTICATED naming the claim that does not fit.
    func checkFixedClaims(of claims: HearthClaims) throws {
        if let issuer = self.issuer {
            guard let iss = claims.iss?.value else {
                throw Self.failure("token has no issuer (iss); expected '\(issuer)'")
            }
            guard iss == issuer else {
                throw Self.failure("token issuer '\(iss)' is not accepted; expected '\(issuer)'")
            }
        }
        if let audience = self.audience {
            guard let aud = claims.aud?.value, !aud.isEmpty else {
                throw Self.failure("token has no audience (aud); expected one including '\(audience)'")
            }
            guard aud.contains(audience) else {
                throw Self.failure("token audience does not include '\(audience)'")
            }
        }
        if let iat = claims.iat?.value {
            let lifetime = claims.exp.value.timeIntervalSince(iat)
            if Self.milliseconds(lifetime) > Self.milliseconds(self.maxLifetime) {
                throw Self.failure(
                    "token lifetime (exp - iat) of \(Self.describe(lifetime)) exceeds the maximum of \(Self.describe(self.maxLifetime))"
                )
            }
        }
    }

    /// Checks, on every use, that `exp` is no further from `now` than the maximum lifetime and
    /// `leeway`: a token without `iat`, or whose `iat` is in the future, lives no longer.
    /// - Throws: ``RPCError`` UNAUTHENTICATED when it is.
    func checkRemainingLifetime(of claims: HearthClaims, now: Date, leeway: TimeInterval) throws {
        let remaining = claims.exp.value.timeIntervalSince(now)
        if Self.milliseconds(remaining) > Self.milliseconds(self.maxLifetime + leeway) {
            throw Self.failure(
                "token expires \(Self.describe(remaining)) from now, beyond the maximum lifetime of \(Self.describe(self.maxLifetime))"
            )
        }
    }

    /// To the millisecond, as a `Double`: JWT times are seconds as JSON numbers, and a lifetime
    /// computed from two fractional times is off by far less than that (while a huge `exp`
    /// never traps, as a conversion to an integer would).
    private static func milliseconds(_ seconds: TimeInterval) -> Double {
        (seconds * 1000).rounded()
    }

    /// `86400 s`, or `86400.5 s` when not whole.
    private static func describe(_ seconds: TimeInterval) -> String {
        let rounded = Self.milliseconds(seconds) / 1000
        guard rounded.isFinite, abs(rounded) < 1e15 else { return "\(rounded) s" }
        return rounded == rounded.rounded() ? "\(Int64(rounded)) s" : "\(rounded) s"
    }

    private static func failure(_ message: String) -> RPCError {
        RPCError(.unauthenticated, message)
    }
}
