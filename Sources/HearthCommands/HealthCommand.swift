import ArgumentParser
import Foundation
import HearthCommandLine
import HearthRPC

/// `hearth health`: is a process (or every local one) serving?
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check that Hearth processes are serving.",
        discussion: """
            Without --target, checks every process of `hearth up` on its default port. Exits
            non-zero unless every one answers SERVING.
              hearth health
              hearth health --target 127.0.0.1:7105 --service hearth.echo.v1.Echo
            """
    )

    @Option(help: "HOST:PORT of one process. Default: every local process.")
    var target: Target?

    @Option(help: "Ask about one service (e.g. hearth.echo.v1.Echo) instead of the whole process.")
    var service = ""

    @Option(help: "How long to wait for each process's answer (e.g. 500ms, 10s).")
    var timeout = DurationArgument(.seconds(2))

    @OptionGroup var tls: ClientTLSOptions

    func run() async throws {
        let targets =
            self.target.map { [("", $0)] }
            ?? ProcessName.allCases.map { ($0.rawValue, Target(host: "127.0.0.1", port: $0.defaultPort)) }
        var allServing = true
        for (name, target) in targets {
            let client = RPCClient(
                configuration: .init(
                    host: target.host,
                    port: target.port,
                    connectionSetup: try self.tls.connectionSetup(host: target.host)
                )
            )
            let line: String
            do {
                let status = try await HealthClient(client: client).check(
                    service: self.service,
                    options: CallOptions(timeout: self.timeout.duration)
                )
                allServing = allServing && status == .serving
                line = status.name
            } catch {
                allServing = false
                line = "\(RPCError(answering: error))"
            }
            await client.close()
            print([name, target.description, line].filter { !$0.isEmpty }.joined(separator: "  "))
        }
        if !allServing { throw ExitCode.failure }
    }
}
