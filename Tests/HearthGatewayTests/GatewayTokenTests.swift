import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import JWTKit
import SwiftProtobuf
import Testing

@testable import HearthGateway

/// Client tokens at the gateway: which it takes, which it refuses and why, how long it keeps
/// them, and the per-user token bucket.
@Suite("Gateway: tokens", .timeLimit(.minutes(1)))
struct GatewayTokenTests {
    @Test("the authorization matrix")
    func authMatrix() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let now = harness.clock.now()
            let valid = try await harness.token(for: "alice")
            let expired = try await harness.token(
                issuedAt: now.addingTimeInterval(-7200),
                expiresAt: now.addingTimeInterval(-61)
            )
            let withinLeeway = try await harness.token(
                issuedAt: now.addingTimeInterval(-7200),
                expiresAt: now.addingTimeInterval(-59)
            )
            let notYet = try await harness.token(notBefore: now.addingTimeInterval(120))
            let otherKey = try await harness.token(secret: "another-secret-also-thirty-two-bytes-long")
            let validParts = valid.split(separator: ".")
            let algNone = "\(Self.base64URL(#"{"alg":"none","typ":"JWT"}"#)).\(validParts[1])."
            let algRS256 = "\(Self.base64URL(#"{"alg":"RS256","typ":"JWT"}"#)).\(validParts[1]).\(validParts[2])"

            let cases: [(String, String?, String?)] = [
                ("none", nil, "missing authorization"),
                ("not bearer", "Basic YWxpY2U6cHc=", "malformed authorization"),
                ("not a JWT", "Bearer abc", "malformed token"),
                ("expired", "Bearer \(expired)", "token expired"),
                ("not yet valid", "Bearer \(notYet)", "not valid before"),
                ("wrong signature", "Bearer \(otherKey)", "invalid token signature"),
                ("alg none", "Bearer \(algNone)", "unsupported token algorithm 'none'"),
                ("alg RS256", "Bearer \(algRS256)", "unsupported token algorithm 'RS256'"),
                ("expired within the 60 s leeway", "Bearer \(withinLeeway)", nil),
                ("valid", "Bearer \(valid)", nil),
                ("valid, again (known now)", "Bearer \(valid)", nil),
                ("scheme in lower case", "bearer \(valid)", nil),
                ("blanks around the token", "Bearer  \(valid)\t", nil),
                ("the known token and a byte more", "Bearer \(valid)x", "token"),
                ("the known token a byte short", "Bearer \(valid.dropLast())", "token"),
                (
                    "at the length limit",
                    "Bearer \(valid)" + String(repeating: " ", count: 8192 - 7 - valid.utf8.count), nil
                ),
                (
                    "a byte over it", "Bearer \(valid)" + String(repeating: " ", count: 8193 - 7 - valid.utf8.count),
                    "too long"
                ),
            ]
            for (name, authorization, failure) in cases {
                do {
                    _ = try await harness.call(authorization: authorization)
                    #expect(failure == nil, "\(name): accepted")
                } catch let error as RPCError {
                    #expect(error.code == .unauthenticated, "\(name)")
                    #expect(failure.map { error.message.contains($0) } == true, "\(name): \(error.message)")
                }
            }
        }
    }

    @Test("a token is kept once whatever the spelling of the authorization that carries it")
    func oneEntryPerToken() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_773_144_000))
        let secret = "a-test-secret-of-at-least-thirty-two-bytes"
        let verifier = try await TokenVerifier(hmacSecret: secret, clock: clock)
        let signer = try await TokenSigner(hmacSecret: secret)
        let token = try await signer.token(
            for: HearthClaims(subject: "alice", issuedAt: clock.now(), expiresAt: clock.now() + 3600)
        )
        for spelling in ["Bearer \(token)", "bearer \(token)", "BEARER  \(token) ", "Bearer \t\(token)\t\t"] {
            #expect(try await verifier.userID(authorization: spelling) == "alice")
            #expect(try verifier.knownUserID(authorization: spelling) == "alice")
        }
        #expect(verifier.knownTokens == 1)
    }

    @Test("a token accepted once is still refused once it expires")
    func expiryAfterFirstUse() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let now = harness.clock.now()
            let token = "Bearer \(try await harness.token(issuedAt: now, expiresAt: now.addingTimeInterval(10)))"
            _ = try await harness.call(authorization: token)
            harness.clock.advance(by: 10 + TokenVerifier.leeway + 1)
            let error = await #expect(throws: RPCError.self) { _ = try await harness.call(authorization: token) }
            #expect(error?.message.contains("token expired") == true)
        }
    }

    @Test("EdDSA tokens verify with the configured public key; HS256 ones are then refused, saying so")
    func eddsa() async throws {
        let key = try EdDSA.PrivateKey()
        let publicKey = key.publicKey.rawRepresentation.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        try await GatewayHarness.run(replicas: 1, eddsaPublicKey: publicKey) { harness in
            let signer = JWTKeyCollection()
            await signer.add(eddsa: key)
            let now = harness.clock.now()
            let token = try await signer.sign(
                HearthClaims(subject: "erin", issuedAt: now, expiresAt: now.addingTimeInterval(600))
            )
            let fields = try await harness.call(authorization: "Bearer \(token)").text.split(separator: "|")
            #expect(fields[1] == "erin")

            let other = JWTKeyCollection()
            await other.add(eddsa: try EdDSA.PrivateKey())
            let forged = try await other.sign(
                HearthClaims(subject: "erin", issuedAt: now, expiresAt: now.addingTimeInterval(600))
            )
            let error = await #expect(throws: RPCError.self) {
                _ = try await harness.call(authorization: "Bearer \(forged)")
            }
            #expect(error?.message.contains("invalid token signature") == true)

            // The shared secret is no second way in (unless --accept-hs256: TokenPolicyTests).
            let hs256 = "Bearer \(try await harness.token())"
            let refused = await #expect(throws: RPCError.self) { _ = try await harness.call(authorization: hs256) }
            #expect(refused?.code == .unauthenticated)
            #expect(refused?.message == "HS256 tokens are not accepted when an EdDSA key is configured")
        }
    }

    @Test("secrets shorter than 32 bytes are refused, not used")
    func weakSecret() async throws {
        await #expect(throws: WeakSecretError.self) {
            _ = try await TokenVerifier(hmacSecret: String(repeating: "k", count: 31))
        }
        await #expect(throws: WeakSecretError.self) { _ = try await TokenSigner(hmacSecret: "short") }
        _ = try await TokenVerifier(hmacSecret: String(repeating: "k", count: 32))
    }

    @Test("token bucket at its boundaries")
    func tokenBucket() {
        let start = Date(timeIntervalSince1970: 0)
        var bucket = TokenBucket(perSecond: 10, burst: 2, now: start)
        let burst = [bucket.take(now: start), bucket.take(now: start)]
        #expect(burst == [nil, nil])
        #expect(bucket.take(now: start) == 0.1)
        #expect(bucket.take(now: start.addingTimeInterval(0.05)) != nil)
        #expect(bucket.take(now: start.addingTimeInterval(0.1)) == nil)
        // A long pause refills only up to the burst.
        let later = start.addingTimeInterval(100)
        let afterPause = [bucket.take(now: later), bucket.take(now: later), bucket.take(now: later)]
        #expect(afterPause.map { $0 == nil } == [true, true, false])
        // The wall clock set back an hour: no refill for the step, and refills go on from the
        // new time (before, the bucket stayed empty for the hour).
        let setBack = later.addingTimeInterval(-3600)
        #expect(bucket.take(now: setBack) == 0.1)
        #expect(bucket.take(now: setBack.addingTimeInterval(0.1)) == nil)
    }

    private static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
