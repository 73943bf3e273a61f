import ArgumentParser
import Foundation
import HearthCommandLine
import HearthPostgres
import HearthRPC
import ServiceLifecycle

/// `hearth serve NAME`: one process, until SIGTERM or SIGINT (then it drains).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one Hearth process.",
        discussion: """
            Runs until SIGTERM or SIGINT, then sends GOAWAY, lets in-flight calls finish and exits.
            Each link between two processes has a credential of its own (CALLER-CALLEE.key), held
            only by its two ends: give each process the files of its links in --secrets-dir (made
            by `hearth make-secrets`; the gateway also --jwt-secret-file), or the same --data.
            A gateway on an address beyond loopback needs --tls-cert and --tls-key, or --plaintext
            behind a TLS proxy; safety needs --smtp-host, or --mail-to-log (development).
              hearth serve echo --port 7105 --data ./data
              hearth serve gateway --backend hearth.echo.=127.0.0.1:7105,127.0.0.1:7115
            """
    )

    @Argument(help: "The process to run: \(ProcessName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var name: ProcessName

    @Option(
        help:
            "Port to listen on; 0 picks a free one. Default: the process's own (gateway 7100, checkins 7101, tasks 7102, safety 7103, routines 7104, echo 7105)."
    )
    var port: Int?

    @Option(
        help: """
            safety only: its store on PostgreSQL, which several safety processes may share, as \
            postgres://USER@HOST:PORT/DATABASE[?sslmode=disable|prefer|require]; the password from \
            --store-password-file or HEARTH_STORE_PASSWORD. Default: safety.sqlite in --data.
            """
    )
    var store: String?

    @Option(help: "safety only: a file holding the PostgreSQL store's password (else HEARTH_STORE_PASSWORD).")
    var storePasswordFile: String?

    @OptionGroup var run: RunOptions
    @OptionGroup(title: "Gateway options") var gateway: GatewaySettings
    @OptionGroup(title: "Peers (services this one calls)") var peers: PeerOptions

    func validate() throws {
        // A service serves only the gateway and its peers, over loopback or a private network:
        // TLS given to one would be left out without a word, leaving it in plaintext.
        guard self.name == .gateway || !self.run.tls.isGiven else {
            throw ValidationError(
                "--tls-cert, --tls-key and --plaintext are for the gateway's listener; \(self.name.rawValue) has none"
            )
        }
        if self.name != .safety, self.store != nil || self.storePasswordFile != nil {
            throw ValidationError(
                "--store and --store-password-file are safety's; \(self.name.rawValue) keeps SQLite files in --data"
            )
        }
        if self.store == nil, self.storePasswordFile != nil {
            throw ValidationError("--store-password-file needs --store postgres://...")
        }
        if let store = self.store, !PostgresLocation.isAddress(store) {
            throw ValidationError("--store takes a postgres://USER@HOST:PORT/DATABASE address, not \(store)")
        }
        // Production defaults: no gateway taking tokens in the clear from the network, no
        // safety sending its alarms nowhere, unless the operator says so.
        switch self.name {
        case .gateway: try self.run.tls.checkExposure(listeningOn: self.run.host)
        case .safety: try self.run.mail.requireDestination()
        case .checkins, .tasks, .routines, .echo: break
        }
    }

    func run() async throws {
        let logger = self.run.logging.bootstrap()
        let dataDirectory = self.run.dataDirectory
        let process = try await makeProcess(
            self.name,
            settings: ProcessSettings(
                host: self.run.host,
                port: self.port ?? self.name.defaultPort,
                dataDirectory: dataDirectory,
                secrets: try self.run.secrets.load(
                    dataDirectory: dataDirectory,
                    links: ProcessLink.touching(self.name),
                    includingJWT: self.name == .gateway
                ),
                dataKeyFile: self.name == .safety
                    ? try self.run.secrets.dataKeyFile(dataDirectory: dataDirectory) : nil,
                safetyStore: try self.safetyStore(),
                gateway: self.gateway,
                peers: self.peers,
                mail: self.run.mail,
                gatewayTLS: try self.run.tls.connectionSetup(),
                pushSender: self.run.push.sender(logger: logger),
                logger: logger
            )
        )
        let group = serviceGroup(for: [process], host: self.run.host, metricsPort: self.run.metricsPort, logger: logger)
        try await group.run()
    }

    /// Safety's PostgreSQL store, with its password; nil for its SQLite file.
    private func safetyStore() throws -> PostgresLocation? {
        guard let store = self.store else { return nil }
        var password = ProcessInfo.processInfo.environment["HEARTH_STORE_PASSWORD"]
        if let file = self.storePasswordFile {
            do {
                password = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .newlines)
            } catch {
                throw ValidationError("could not read --store-password-file \(file): \(error.localizedDescription)")
            }
        }
        do {
            return try PostgresLocation(url: store, password: password)
        } catch let error as PostgresLocationInvalid {
            throw ValidationError(error.description)
        }
    }
}
