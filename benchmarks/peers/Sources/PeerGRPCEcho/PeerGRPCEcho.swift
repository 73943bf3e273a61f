import ArgumentParser

/// grpc-swift-2 over HTTP/2, for the side-by-side benchmark: an echo server, and a client that
/// measures one.
@main
struct PeerGRPCEcho: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peer-grpc-echo",
        abstract: "A grpc-swift-2 echo (hearth.echo.v1.Echo/Echo over plaintext HTTP/2) and its load client.",
        subcommands: [Serve.self, Bench.self]
    )
}
