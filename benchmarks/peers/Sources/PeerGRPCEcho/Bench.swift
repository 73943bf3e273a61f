import ArgumentParser
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2

/// `peer-grpc-echo bench`: N concurrent callers of unary Echo over one GRPCClient, which keeps
/// one HTTP/2 connection (the default pick-first policy over a single address).
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a gRPC echo server with unary calls and report QPS and latency.",
        discussion: "Exits 1 when a call failed (warm-up included) or none finished in the measured window."
    )

    @Option(help: "The server, HOST:PORT.")
    var target: String

    @Option(help: "Calls in flight: this many callers, each looping one call at a time.")
    var concurrency: Int = 1

    @Option(help: "Seconds measured, after the warm-up.")
    var seconds: Double = 5

    @Option(help: "Seconds of calls before measuring, not recorded.")
    var warmup: Double = 1

    @Option(help: "Request payload bytes.")
    var payload: Int = 256

    @Option(help: "Also write the report as JSON to this file (keys as benchmarks/c-load's --json).")
    var json: String?

    func validate() throws {
        guard self.concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        guard self.seconds > 0, self.warmup >= 0 else { throw ValidationError("--seconds > 0 and --warmup >= 0") }
        guard self.payload >= 0 else { throw ValidationError("--payload must not be negative") }
        _ = try self.hostAndPort()
    }

    func run() async throws {
        let (host, port) = try self.hostAndPort()
        let transport = try HTTP2ClientTransport.Posix(
            target: .dns(host: host, port: port),
            transportSecurity: .plaintext
        )
        let load = EchoLoad(
            payload: Data((0..<self.payload).map { UInt8(truncatingIfNeeded: $0) }),
            concurrency: self.concurrency
        )
        let client = GRPCClient(transport: transport)
        let stats = await withTaskGroup(of: EchoStats?.self) { group in
            group.addTask {
                try? await client.runConnections()
                return nil
            }
            let stats = await load.run(on: client, warmup: .seconds(self.warmup), measured: .seconds(self.seconds))
            // Every call has ended: stop at once. A graceful shutdown (withGRPCClient's) waits for
            // the connection, and one whose HTTP/2 handshake never completes would hang it forever.
            group.cancelAll()
            return stats
        }
        let report = BenchReport(stats: stats, bench: self)
        print(report.text)
        if let json = self.json {
            try report.jsonData().write(to: URL(fileURLWithPath: json))
        }
        if stats.errors > 0 || stats.calls == 0 { throw ExitCode(1) }
    }

    private func hostAndPort() throws -> (String, Int) {
        guard let colon = self.target.lastIndex(of: ":"), let port = Int(self.target[colon...].dropFirst()),
            (1...65535).contains(port)
        else { throw ValidationError("--target must be HOST:PORT, not \(self.target)") }
        return (String(self.target[..<colon]), port)
    }
}
