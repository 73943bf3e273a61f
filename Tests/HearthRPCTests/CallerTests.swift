import EchoService
import Foundation
import HearthContracts
import HearthRPC
import Logging
import SwiftProtobuf
import Testing

@Suite("Callers: one credential per calling process, each allowed its own methods", .timeLimit(.minutes(1)))
struct CallerTests {
    static let gateway = "gateway-credential-" + String(repeating: "g", count: 32)
    static let routines = "routines-credential-" + String(repeating: "r", count: 32)
    static let echo = Hearth_Echo_V1_Echo.Method.echo.name
    static let observed = "hearth.test.v1.Test/Observed"

    /// Calls `method` (an echo request) with `metadata`: the answer's code.
    static func code(_ client: RPCClient, _ method: String, _ metadata: [String: String]) async -> StatusCode {
        do {
            let payload = try Hearth_Echo_V1_EchoRequest.with { $0.text = "hi" }.serializedData()
            _ = try await client.callRaw(method, payload: payload, options: CallOptions(metadata: metadata))
            return .ok
        } catch {
            return RPCError(answering: error).code
        }
    }

    @Test(
        "a caller's credential opens only its methods: another is PERMISSION_DENIED and logged; an unknown one UNAUTHENTICATED"
    )
    func methodsPerCaller() async throws {
        let log = RecordedLog()
        let configuration = ServerConfiguration(callers: [
            Caller(name: "gateway", credential: Self.gateway, methods: .all),
            Caller(name: "routines", credential: Self.routines, methods: .only([Self.echo])),
        ])
        try await withTestServer(configuration: configuration, logger: log.logger(level: .warning)) { _, port in
            let client = makeClient(port: port)
            let credential = TrustedMetadata.credential
            #expect(await Self.code(client, Self.echo, [credential: Self.gateway]) == .ok)
            #expect(await Self.code(client, Self.observed, [credential: Self.gateway]) == .ok)
            #expect(await Self.code(client, Self.echo, [credential: Self.routines]) == .ok)
            #expect(log.all.isEmpty, "allowed calls warn of nothing: \(log.all.map(\.message))")

            // The routines credential, valid, for a method its link does not allow.
            do {
                _ = try await client.callRaw(
                    Self.observed,
                    payload: Data(),
                    options: CallOptions(metadata: [credential: Self.routines])
                )
                Issue.record("the routines credential called \(Self.observed)")
            } catch let error as RPCError {
                #expect(error.code == .permissionDenied)
                #expect(error.message == "the routines credential may not call \(Self.observed)")
            }
            let warnings = log.all.filter { $0.level == .warning }
            #expect(warnings.count == 1)
            #expect(warnings.first?.metadata["caller"] == "routines")
            #expect(warnings.first?.metadata["method"] == Self.observed)

            // No caller's credential: refused before any method is looked at, and not logged
            // as a caller's misuse.
            for metadata in [
                [:], [credential: "wrong"], [credential: Self.routines + "x"],
                [credential: String(Self.gateway.dropLast())],
            ] {
                #expect(await Self.code(client, Self.echo, metadata) == .unauthenticated, "\(metadata)")
                #expect(await Self.code(client, Self.observed, metadata) == .unauthenticated, "\(metadata)")
            }
            #expect(log.all.filter { $0.level == .warning }.count == 1)
            await client.close()
        }
    }

    @Test("health checks need no credential, whoever the server's callers are")
    func healthIsPublic() async throws {
        let configuration = ServerConfiguration(callers: [
            Caller(name: "routines", credential: Self.routines, methods: .only([Self.echo]))
        ])
        try await withTestServer(configuration: configuration) { _, port in
            let client = makeClient(port: port)
            let status = try await HealthClient(client: client).check()
            #expect(status == .serving)
            await client.close()
        }
    }

    @Test("a server with no callers named asks for no credential (the gateway's public server)")
    func noCallers() async throws {
        try await withTestServer { _, port in
            let client = makeClient(port: port)
            #expect(await Self.code(client, Self.observed, [:]) == .ok)
            await client.close()
        }
    }
}
