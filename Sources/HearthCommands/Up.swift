import ArgumentParser
import Foundation
import HearthRPC
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `hearth up`: every process of the system on loopback, in this one process.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the whole system on loopback (stores under ./data).",
        discussion: """
            Starts every Hearth process on its own port, waits until each is healthy, prints the
            addresses, and runs until Ctrl-C, then drains.
              hearth up
              hearth up --data /tmp/hearth --log-level info
            """
    )

    @Option(help: "Folder for the SQLite files. Example: --data ./data")
    var data = "./data"

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let dataDirectory = URL(fileURLWithPath: self.data)
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let metrics = MethodMetrics()
        let servers = try ProcessName.allCases.map { process in
            (
                process,
                try makeServer(
                    process,
                    host: self.host,
                    port: process.defaultPort,
                    dataDirectory: dataDirectory,
                    metrics: metrics,
                    logger: logger
                )
            )
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: servers.map { .init(service: $0.1) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for (process, server) in servers {
                let address = try await server.localAddress
                try await waitUntilHealthy(host: self.host, port: address.port ?? process.defaultPort)
                say(
                    "\(process.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(self.host):\(address.port ?? 0)  SERVING"
                )
            }
            say("Hearth is up (data in \(dataDirectory.path)). Ctrl-C to stop.")
            say("Try: hearth call hearth.echo.v1.Echo/Echo '{\"text\": \"hello\"}'")
            try await tasks.next()
            tasks.cancelAll()
        }
    }
}

/// Polls `Health/Check` until SERVING, for at most `limit`.
func waitUntilHealthy(host: String, port: Int, limit: Duration = .seconds(10)) async throws {
    let client = RPCClient(
        configuration: .init(
            host: host,
            port: port,
            backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        )
    )
    let health = HealthClient(client: client)
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    var healthy = false
    while !healthy, clock.now < deadline {
        healthy = (try? await health.check(options: CallOptions(timeout: .seconds(1)))) == .serving
        if !healthy { try? await Task.sleep(for: .milliseconds(50)) }
    }
    await client.close()
    guard healthy else {
        throw ValidationError("\(host):\(port) did not become healthy within \(limit)")
    }
}

/// Prints a line at once, even when standard output is a file or a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
