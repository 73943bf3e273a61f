import ArgumentParser
import Foundation
import HearthRPC
import ServiceLifecycle
import UnixSignals

/// `hearth serve NAME`: one process, until SIGTERM or SIGINT (then it drains).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one Hearth process.",
        discussion: """
            Runs until SIGTERM or SIGINT, then sends GOAWAY, lets in-flight calls finish and exits.
              hearth serve echo --port 7105 --data ./data
            """
    )

    @Argument(help: "The process to run: \(ProcessName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var name: ProcessName

    @Option(help: "Address to listen on. Example: --host 0.0.0.0")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one. Default: the process's own port (echo 7105).")
    var port: Int?

    @Option(help: "Folder for the process's SQLite file. Example: --data /var/lib/hearth")
    var data = "./data"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let server = try makeServer(
            self.name,
            host: self.host,
            port: self.port ?? self.name.defaultPort,
            dataDirectory: URL(fileURLWithPath: self.data),
            metrics: MethodMetrics(),
            logger: logger
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}
