import ArgumentParser
import Foundation
import HearthCommandLine
import HearthGateway
import HearthRPC
import Logging
import NIOCore
import ServiceLifecycle

/// `hearth up`: every process of the system on loopback, in this one process.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the whole system on loopback (stores under ./data).",
        discussion: """
            Starts every Hearth process on its own port (the gateway last, in front of the
            others), waits until each is healthy, prints the addresses, a development token and
            example calls, and runs until Ctrl-C, then drains. On first run it creates the
            development secrets under DATA/secrets.
              hearth up
              hearth up --data /tmp/hearth --log-level info
            """
    )

    @OptionGroup var run: RunOptions

    func validate() throws {
        // As `hearth serve gateway`: beyond loopback, TLS or --plaintext on purpose.
        try self.run.tls.checkExposure(listeningOn: self.run.host)
    }

    /// Where safety's emails go: the SMTP server given, else the log (`--mail-to-log`, which
    /// `hearth serve safety` must be told): this is a development system.
    var mail: MailOptions {
        var mail = self.run.mail
        if mail.smtpHost == nil { mail.mailToLog = true }
        return mail
    }

    func run() async throws {
        let logger = self.run.logging.bootstrap()
        let dataDirectory = self.run.dataDirectory
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let secrets = try self.run.secrets.load(
            dataDirectory: dataDirectory,
            links: ProcessLink.all,
            includingJWT: true
        )
        let dataKeyFile = try self.run.secrets.dataKeyFile(dataDirectory: dataDirectory)
        let (gatewayDefaults, peers) = try Self.wiring(listeningOn: self.run.host)
        let gatewayTLS = try self.run.tls.connectionSetup()
        var processes: [HearthProcess] = []
        for name in ProcessName.services + [.gateway] {
            let settings = ProcessSettings(
                host: self.run.host,
                port: name.defaultPort,
                dataDirectory: dataDirectory,
                secrets: secrets,
                dataKeyFile: name == .safety ? dataKeyFile : nil,
                gateway: gatewayDefaults,
                peers: peers,
                mail: self.mail,
                gatewayTLS: gatewayTLS,
                pushSender: self.run.push.sender(logger: logger),
                logger: logger
            )
            processes.append(try await makeProcess(name, settings: settings))
        }
        let group = serviceGroup(for: processes, host: self.run.host, metricsPort: self.run.metricsPort, logger: logger)
        // One instant for both times: exactly 24 h apart, the gateway's longest lifetime by default.
        let now = Date()
        let token = try await TokenSigner(hmacSecret: secrets.jwtSecret ?? "").token(
            for: HearthClaims(subject: "dev-user", issuedAt: now, expiresAt: now.addingTimeInterval(24 * 3600))
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for process in processes {
                let port = try await process.server.localAddress.port ?? process.name.defaultPort
                // Over TLS the listener is bound (awaited above) and in-process: a plaintext probe
                // cannot reach it, and the certificate may name another host.
                if !(process.name == .gateway && gatewayTLS != nil) {
                    try await waitUntilHealthy(host: self.run.host, port: port)
                }
                say(
                    "\(process.name.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(self.run.host):\(port)  SERVING"
                )
            }
            say(
                """
                Hearth is up (data in \(dataDirectory.path)). Ctrl-C to stop.

                A development token for user dev-user, valid 24 h:
                  export HEARTH_TOKEN=\(token)
                Then, through the gateway:
                  hearth call hearth.echo.v1.Echo/Echo '{"text": "hello"}'
                  hearth bench --target \(self.run.host):\(ProcessName.gateway.defaultPort) --rps 40 --duration 5s hearth.echo.v1.Echo/Echo '{}'
                (The gateway allows each user 50 calls a second, bursts of 100, 100 in flight at once.)
                The contact page (the links in emails to emergency contacts, printed in this log while no
                SMTP server is set) is on http://\(self.run.host):\(GatewaySettings.localContactPagePort).
                """
            )
            try await tasks.next()
            tasks.cancelAll()
        }
    }
}

extension Up {
    /// How the processes find one another when they all listen on `host`: the gateway's routes
    /// and the services' peers point there (at loopback when `host` is every address).
    static func wiring(listeningOn host: String) throws -> (gateway: GatewaySettings, peers: PeerOptions) {
        let local =
            switch host {
            case "0.0.0.0": "127.0.0.1"
            case "::": "::1"
            default: host
            }
        var gateway = try GatewaySettings.parse([])
        gateway.contactPagePort = GatewaySettings.localContactPagePort
        gateway.backends = ProcessName.services.flatMap { process in
            process.packages.map { "\($0)=\(Target(host: local, port: process.defaultPort))" }
        }
        var peers = try PeerOptions.parse([])
        peers.checkins = Target(host: local, port: ProcessName.checkins.defaultPort)
        peers.safety = Target(host: local, port: ProcessName.safety.defaultPort)
        peers.routines = Target(host: local, port: ProcessName.routines.defaultPort)
        return (gateway, peers)
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
        throw CommandFailure("\(host):\(port) did not become healthy within \(limit)")
    }
}

/// Prints a line at once, even when standard output is a file or a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
