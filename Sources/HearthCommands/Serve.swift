import ArgumentParser
import Foundation
import HearthRPC
import ServiceLifecycle

/// `hearth serve NAME`: one process, until SIGTERM or SIGINT (then it drains).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one Hearth process.",
        discussion: """
            Runs until SIGTERM or SIGINT, then sends GOAWAY, lets in-flight calls finish and exits.
            Processes that share a deployment share its secrets: give each the same
            HEARTH_INTERNAL_SECRET (and the gateway HEARTH_JWT_SECRET), or the same --data.
              hearth serve echo --port 7105 --data ./data
              hearth serve gateway --backend hearth.echo.=127.0.0.1:7105,127.0.0.1:7115
            """
    )

    @Argument(help: "The process to run: \(ProcessName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var name: ProcessName

    @Option(help: "Address to listen on. Example: --host 0.0.0.0")
    var host = "127.0.0.1"

    @Option(
        help:
            "Port to listen on; 0 picks a free one. Default: the process's own (gateway 7100, checkins 7101, tasks 7102, safety 7103, routines 7104, echo 7105)."
    )
    var port: Int?

    @Option(help: "Folder for the process's SQLite file (and default secrets). Example: --data /var/lib/hearth")
    var data = "./data"

    @Option(help: "Serve Prometheus metrics over HTTP on this port (GET /metrics). Example: --metrics-port 9100")
    var metricsPort: Int?

    @OptionGroup var secrets: SecretOptions
    @OptionGroup var push: PushOptions
    @OptionGroup(title: "Gateway options") var gateway: GatewaySettings
    @OptionGroup(title: "Peers (services this one calls)") var peers: PeerOptions
    @OptionGroup(title: "Email (safety)") var mail: MailOptions
    @OptionGroup(title: "Gateway TLS") var tls: ServerTLSOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        // A service serves only the gateway and its peers, over loopback or a private network:
        // TLS given to one would be left out without a word, leaving it in plaintext.
        guard self.name == .gateway || self.tls.tlsCert == nil else {
            throw ValidationError(
                "--tls-cert and --tls-key are for the gateway's listener; \(self.name.rawValue) has none"
            )
        }
    }

    func run() async throws {
        let logger = self.logging.bootstrap()
        let dataDirectory = URL(fileURLWithPath: self.data)
        let process = try await makeProcess(
            self.name,
            settings: ProcessSettings(
                host: self.host,
                port: self.port ?? self.name.defaultPort,
                dataDirectory: dataDirectory,
                secrets: try self.secrets.load(dataDirectory: dataDirectory, includingJWT: self.name == .gateway),
                gateway: self.gateway,
                peers: self.peers,
                mail: self.mail,
                gatewayTLS: try self.tls.connectionSetup(),
                pushSender: self.push.sender(logger: logger),
                logger: logger
            )
        )
        let group = serviceGroup(for: [process], host: self.host, metricsPort: self.metricsPort, logger: logger)
        try await group.run()
    }
}
