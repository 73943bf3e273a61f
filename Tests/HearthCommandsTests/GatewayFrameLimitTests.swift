import ArgumentParser
import Foundation
import HearthContracts
import HearthRPC
import HearthTestSupport
import NIOCore
import SwiftProtobuf
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

/// The gateway `hearth serve gateway` runs takes at most 64 KiB a frame on a connection until a
/// call on it has passed authentication; Hearth's own clients authenticate first.
@Suite("Gateway: frames before authentication", .timeLimit(.minutes(2)))
struct GatewayFrameLimitTests {
    @Test("hearth call with a token sends an 80 KiB first call through the gateway; a bare connection cannot")
    func largeFirstCall() async throws {
        try await LinkCredentialTests.withProcesses { group, root in
            let echo = try await LinkCredentialTests.start(.echo, under: root, in: &group)
            var routes = try GatewaySettings.parse([])
            routes.backends = ["hearth.echo.=127.0.0.1:\(echo)"]
            let gateway = try await LinkCredentialTests.start(.gateway, under: root, in: &group) {
                $0.gateway = routes
            }
            let options = try await LinkCredentialTests.acting(as: "ada")
            let authorization = try #require(options.metadata["authorization"])
            let text = String(repeating: "x", count: 80 * 1024)

            let called = try await runProcess(
                try builtProduct(named: "hearth"),
                [
                    "call", "--target", "127.0.0.1:\(gateway)", "--token",
                    String(authorization.dropFirst("Bearer ".count)), "--timeout", "60s",
                    "hearth.echo.v1.Echo/Echo", #"{"text": "\#(text)"}"#,
                ]
            )
            #expect(called.status == 0, "\(called.stderr)")
            #expect(called.stdout.contains(text))

            let bare = try await RPCConnection.connect(host: "127.0.0.1", port: gateway).get()
            let request = Hearth_Echo_V1_EchoRequest.with { $0.text = text }
            let error = await #expect(throws: RPCError.self) {
                try await bare.call(
                    method: "hearth.echo.v1.Echo/Echo",
                    payload: try request.serializedData(),
                    metadata: ["authorization": authorization],
                    timeout: .seconds(60)
                )
            }
            #expect(error?.message.contains("before any call on this connection passed authentication") == true)
            await bare.close()
        }
    }
}
