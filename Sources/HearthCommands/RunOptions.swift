import ArgumentParser
import Foundation
import HearthCommandLine
import Logging

/// What `hearth up` and `hearth serve` both take: where to listen, the data folder, metrics,
/// the secrets, push, email, the gateway's TLS and logging.
struct RunOptions: ParsableArguments {
    @Option(help: "Address to listen on. Example: --host 0.0.0.0")
    var host = "127.0.0.1"

    @Option(help: "Folder for the SQLite files (and default secrets). Example: --data /var/lib/hearth")
    var data = "./data"

    @Option(help: "Serve Prometheus metrics over HTTP on this port (GET /metrics). Example: --metrics-port 9100")
    var metricsPort: Int?

    @OptionGroup var secrets: SecretOptions
    @OptionGroup var push: PushOptions
    @OptionGroup(title: "Email (safety)") var mail: MailOptions
    @OptionGroup(title: "Gateway TLS") var tls: ServerTLSOptions
    @OptionGroup var logging: LoggingOptions

    var dataDirectory: URL { URL(fileURLWithPath: self.data) }
}
