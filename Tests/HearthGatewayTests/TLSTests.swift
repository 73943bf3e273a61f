import EchoService
import Foundation
import HearthContracts
import HearthRPC
import HearthTLS
import HearthTestSupport
import NIOCore
import Testing

@Suite("TLS", .timeLimit(.minutes(1)))
struct TLSTests {
    @Test("calls round-trip over TLS; a plaintext client gets nothing")
    func roundTrip() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tls-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (certificate, key) = try await selfSignedCertificate(in: folder)

        let server = RPCServer(
            configuration: ServerConfiguration(
                connectionSetup: try TLS.serverSetup(certificateFile: certificate, keyFile: key)
            ),
            services: [EchoService()],
            logger: quietLogger
        )
        let run = Task { try await server.run() }
        let port = try await server.localAddress.port!

        let secure = RPCClient(
            configuration: .init(
                host: "127.0.0.1",
                port: port,
                connectionSetup: try TLS.clientSetup(trustRootsFile: certificate, serverHostname: "localhost")
            )
        )
        var request = Hearth_Echo_V1_EchoRequest()
        request.text = "over TLS"
        let response = try await Hearth_Echo_V1_Echo.Client(secure).echo(request)
        #expect(response.text == "over TLS")

        // The server's refusal (the handshake fails, the connection closes) is what ends these
        // calls: the deadline only bounds a test gone wrong, and is generous because a loaded
        // machine (the whole suite on two cores) may take seconds to get to it.
        let bound = CallOptions(timeout: .seconds(30))
        let plain = RPCClient(host: "127.0.0.1", port: port)
        let refused = await #expect(throws: RPCError.self) {
            _ = try await Hearth_Echo_V1_Echo.Client(plain).echo(request, options: bound)
        }
        #expect(refused?.code == .unavailable)

        let untrusting = RPCClient(
            configuration: .init(
                host: "127.0.0.1",
                port: port,
                connectionSetup: try TLS.clientSetup(trustRootsFile: nil, serverHostname: "localhost")
            )
        )
        await #expect(throws: RPCError.self) {
            _ = try await Hearth_Echo_V1_Echo.Client(untrusting).echo(request, options: bound)
        }

        for client in [secure, plain, untrusting] { await client.close() }
        server.beginShutdown()
        try await run.value
    }
}
