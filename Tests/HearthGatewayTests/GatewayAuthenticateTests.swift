import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import NIOCore
import SwiftProtobuf
import Testing

@testable import HearthGateway

/// `hearth.gateway.v1.Gateway/Authenticate`, and the small frames a connection takes until a
/// call on it has passed authentication.
@Suite("Gateway: Authenticate", .timeLimit(.minutes(1)))
struct GatewayAuthenticateTests {
    static let authenticate = Hearth_Gateway_V1_Gateway.Method.authenticate.name
    static let limit = 64 * 1024

    @Test("Authenticate answers the token's user and expiry; no token or a bad one is UNAUTHENTICATED")
    func answersWhoTheTokenNames() async throws {
        try await GatewayHarness.run(replicas: 1) { harness in
            let expiry = harness.clock.now().addingTimeInterval(1800)
            let token = try await harness.token(for: "alice", expiresAt: expiry)
            let answer = try await harness.client.call(
                Self.authenticate,
                Hearth_Gateway_V1_AuthenticateRequest(),
                as: Hearth_Gateway_V1_AuthenticateResponse.self,
                options: CallOptions(metadata: ["authorization": "Bearer \(token)"])
            )
            #expect(answer.userID == "alice")
            #expect(abs(answer.expiresAtMs - expiry.millisecondsSince1970) < 1000, "the token's exp, in milliseconds")
            for authorization in [nil, "Bearer abc", "Bearer \(token)x"] {
                var metadata: [String: String] = [:]
                metadata["authorization"] = authorization
                let error = await #expect(throws: RPCError.self) {
                    try await harness.client.call(
                        Self.authenticate,
                        Hearth_Gateway_V1_AuthenticateRequest(),
                        as: Hearth_Gateway_V1_AuthenticateResponse.self,
                        options: CallOptions(metadata: metadata)
                    )
                }
                #expect(error?.code == .unauthenticated, "\(authorization ?? "none")")
            }
        }
    }

    @Test("Authenticate counts against the user's rate limit like any call")
    func rateLimited() async throws {
        let limits = RateLimiter.Limits(perSecond: 1, burst: 2, maxInFlight: 10)
        try await GatewayHarness.run(replicas: 1, limits: limits) { harness in
            let token = try await harness.token(for: "bob")
            let options = CallOptions(metadata: ["authorization": "Bearer \(token)"])
            for _ in 0..<2 {
                _ = try await harness.client.call(
                    Self.authenticate,
                    Hearth_Gateway_V1_AuthenticateRequest(),
                    as: Hearth_Gateway_V1_AuthenticateResponse.self,
                    options: options
                )
            }
            let error = await #expect(throws: RPCError.self) {
                try await harness.client.call(
                    Self.authenticate,
                    Hearth_Gateway_V1_AuthenticateRequest(),
                    as: Hearth_Gateway_V1_AuthenticateResponse.self,
                    options: options
                )
            }
            #expect(error?.code == .resourceExhausted)
            #expect(harness.gateway.callsInFlight(of: "bob") == 0)
        }
    }

    @Test(
        "a client's first call with a large frame authenticates its connection first; a bare connection is closed, told why"
    )
    func largeFirstFrame() async throws {
        try await GatewayHarness.run(replicas: 1, frameSizeBeforeAuthentication: Self.limit) { harness in
            let token = try await harness.token(for: "carol")
            var large = Hearth_Echo_V1_EchoRequest()
            large.text = String(repeating: "p", count: 1024 * 1024)
            // The harness's client knows the limit: Authenticate goes first, on the same connection.
            let echoed = try await harness.call(
                "hearth.echo.v1.Echo/Echo",
                large,
                authorization: "Bearer \(token)"
            )
            #expect(echoed.text == large.text)

            // A connection that sends it as its first frame, with no call before it.
            let port = try await harness.gatewayServer.localAddress.port!
            let bare = try await RPCConnection.connect(host: "127.0.0.1", port: port).get()
            let error = await #expect(throws: RPCError.self) {
                try await bare.call(
                    method: "hearth.echo.v1.Echo/Echo",
                    payload: try large.serializedData(),
                    metadata: ["authorization": "Bearer \(token)"]
                )
            }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("RESOURCE_EXHAUSTED") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains(Self.authenticate) == true, "\(error?.message ?? "")")
            await bare.close()

            // Just under the limit, a bare connection's first call goes through.
            let fits = try await RPCConnection.connect(host: "127.0.0.1", port: port).get()
            var small = Hearth_Echo_V1_EchoRequest()
            small.text = String(repeating: "s", count: Self.limit - 16 * 1024)
            let answer = try await fits.call(
                method: "hearth.echo.v1.Echo/Echo",
                payload: try small.serializedData(),
                metadata: ["authorization": "Bearer \(token)"]
            )
            #expect(try Hearth_Echo_V1_EchoResponse(serializedBytes: answer).text == small.text)
            await fits.close()
        }
    }
}
