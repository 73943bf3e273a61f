import ArgumentParser
import GRPCCore
import GRPCNIOTransportHTTP2

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// `peer-grpc-echo serve`: the echo service on 127.0.0.1 over plaintext HTTP/2.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve hearth.echo.v1.Echo/Echo on 127.0.0.1 until SIGTERM or SIGINT."
    )

    @Option(help: "The TCP port; 0 picks a free one, printed as `port N` on the first line.")
    var port: Int

    func run() async throws {
        // SIGINT too: a shell script starting this in the background leaves SIGINT ignored.
        for signalNumber in [SIGINT, SIGTERM] { signal(signalNumber) { _ in _exit(0) } }
        let transport = HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: self.port),
            transportSecurity: .plaintext,
            // Without it the server announces no limit and the client keeps to HTTP/2's initial
            // 100 streams: the 256-in-flight runs would queue 156 calls in the client.
            config: .defaults { config in config.http2.maxConcurrentStreams = 1024 }
        )
        let server = GRPCServer(transport: transport, services: [EchoService()])
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await server.serve() }
            let address = try await transport.listeningAddress
            print("port \(address.ipv4?.port ?? self.port)")
            fflush(nil)  // all streams (`stdout` is a global Swift 6 rejects): the harness waits for this line
        }
    }
}
