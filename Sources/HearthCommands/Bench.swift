import ArgumentParser
import Foundation
import HearthBench
import HearthCommandLine
import HearthRPC
import SwiftProtobuf

/// `hearth bench`: load-test one method of one process (like ghz).
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load-test one method: QPS, latency percentiles (HdrHistogram), counts by status.",
        discussion: """
            Through the gateway each user may make 50 calls a second (bursts of 100) with at most
            100 in flight (keep --concurrency at or under it); one process called directly with the
            credential of the gateway's link to it has no limit. Exits 1 if no call succeeded.
              hearth bench --target 127.0.0.1:7100 --rps 40 --concurrency 4 hearth.echo.v1.Echo/Echo '{"text": "hi"}'
              hearth bench --target 127.0.0.1:7105 --internal-secret "$(cat data/secrets/gateway-echo.key)" \
                --concurrency 1 --total 20000 hearth.echo.v1.Echo/Echo '{}'
              hearth bench --target 127.0.0.1:7105 --internal-secret "$(cat data/secrets/gateway-echo.key)" \
                --rps 1000 --duration 30s --json out.json hearth.echo.v1.Echo/Echo '{"payload": "AAEC"}'
            """
    )

    @Option(help: "HOST:PORT of the process to load. Example: --target 127.0.0.1:7105")
    var target: Target

    @Option(help: "Calls in flight at once (each a separate caller).")
    var concurrency = 64

    @Option(help: "Connections the calls are spread over, round-robin.")
    var connections = 1

    @Option(help: "How long to run (after warm-up), e.g. 10s. Default 10s unless --total is given.")
    var duration: DurationArgument?

    @Option(help: "Stop after this many calls instead of after a duration.")
    var total: Int?

    @Option(help: "Pace calls to this many per second overall; default: as fast as they complete.")
    var rps: Double?

    @Option(help: "Run this long first without recording, e.g. 1s or 0s.")
    var warmup = DurationArgument(.seconds(1))

    @Option(help: "Per-call timeout, e.g. 10s.")
    var timeout = DurationArgument(.seconds(10))

    @Option(name: .long, help: "Request metadata, repeatable. Example: --metadata x-request-id=bench")
    var metadata: [String] = []

    @OptionGroup var caller: CallerOptions
    @OptionGroup var tls: ClientTLSOptions
    @OptionGroup var server: ServerProcessOptions

    @Option(help: "Also write the report as JSON to this file.")
    var json: String?

    @Argument(help: "The method, package.Service/Method.")
    var method: String

    @Argument(help: "The request as protobuf JSON. Default: {}")
    var request = "{}"

    @Option(
        name: .customLong("then"),
        help: """
            Another request as protobuf JSON, sent in turn with the first (repeatable): call n sends \
            request n mod (1 + the number of --then). Example: tick, then untick, so that every call \
            changes the row.
            """
    )
    var followingRequests: [String] = []

    func validate() throws {
        guard self.concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        guard self.connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        if let total, total < 1 { throw ValidationError("--total must be at least 1") }
        if self.total != nil, self.duration != nil { throw ValidationError("give --duration or --total, not both") }
        if let rps, !(rps > 0) { throw ValidationError("--rps must be positive") }
    }

    func run() async throws {
        guard let descriptor = MethodCatalog.method(named: self.method) else {
            throw ValidationError("unknown method \(self.method)")
        }
        let payloads = try ([self.request] + self.followingRequests).map {
            try descriptor.requestType.init(jsonString: $0).serializedData()
        }
        let metadata = try parseMetadata(self.metadata).merging(self.caller.metadata) { _, trusted in trusted }
        var configuration = RPCClient.Configuration(
            host: self.target.host,
            port: self.target.port,
            connections: self.connections,
            connectionSetup: try self.tls.connectionSetup(host: self.target.host)
        )
        configuration.authenticateFirst(ifCarrying: metadata)
        let (client, executor) = BenchRunner.makeClient(configuration)
        var runner = BenchRunner(
            client: client,
            executor: executor,
            method: self.method,
            request: { index in payloads[index % payloads.count] },
            options: CallOptions(
                timeout: self.timeout.duration,
                metadata: metadata
            ),
            concurrency: self.concurrency,
            limit: self.total.map { .total($0) } ?? .duration(self.duration?.duration ?? .seconds(10)),
            ratePerSecond: self.rps,
            warmup: .duration(self.warmup.duration)
        )
        runner.server = self.server.process
        let onTerminal = isatty(STDERR_FILENO) == 1
        let measured = await runner.run { finished, elapsed in
            guard onTerminal else { return }
            let line = String(
                format: "\r%6.1f s  %10llu calls  %10.0f QPS",
                elapsed,
                finished,
                Double(finished) / max(elapsed, 0.001)
            )
            FileHandle.standardError.write(Data(line.utf8))
        }
        await client.close()
        if onTerminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }

        let report = BenchReport(
            method: self.method,
            target: self.target.description,
            concurrency: self.concurrency,
            connections: self.connections,
            measured: measured
        )
        try report.emit(json: self.json)
        guard measured.codes[.ok, default: 0] > 0 else {
            FileHandle.standardError.write(Data("no call succeeded: the figures above are of refusals\n".utf8))
            throw ExitCode(1)
        }
    }
}
