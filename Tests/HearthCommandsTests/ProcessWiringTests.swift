import ArgumentParser
import Foundation
import GRDB
import HearthPush
import HearthRPC
import HearthTestSupport
import Logging
import NIOCore
import Testing

@testable import HearthCommandLine
@testable import HearthCommands
@testable import HearthScheduler

@Suite("A process as makeProcess builds it")
struct ProcessWiringTests {
    @Test(
        "every scheduler beside a service's server tells its health of a store at fault",
        arguments: [
            // checkins: its push outbox's and relay's deliverers and its housekeeping; tasks: the prompts', the
            // housekeeping's, the same two and the erasures'; safety: the decider, a sender per channel, the
            // pruner; routines: its relay's.
            (ProcessName.checkins, 3), (.tasks, 5), (.safety, 4), (.routines, 1),
        ]
    )
    func schedulersReachHealth(name: ProcessName, work: Int) async throws {
        try await withScratchFolder("hearth-wiring") { folder in
            // A fresh process for each scheduler (its store in a folder of its own): once one has
            // been heard of, health stays NOT_SERVING for a while.
            func freshProcess(_ index: Int) async throws -> (HearthProcess, [DueTimeScheduler]) {
                let data = folder.appendingPathComponent("\(index)")
                try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
                var logger = Logger(label: "test")
                logger.logLevel = .critical
                let process = try await makeProcess(name, settings: try Self.settings(data: data, logger: logger))
                return (process, process.companions.compactMap { $0 as? DueTimeScheduler })
            }
            let count = try await freshProcess(0).1.count
            #expect(count == work, "\(name) runs its module's work beside its server")
            for index in 0..<count {
                let (process, schedulers) = try await freshProcess(index + 1)
                #expect(process.server.health.status(of: "") == .serving)
                // As a pass that met a full disk would.
                schedulers[index].reportFailure(DatabaseError(resultCode: .SQLITE_FULL))
                #expect(process.server.health.status(of: "") == .notServing, "\(name): scheduler \(index) not heard")
            }
        }
    }

    @Test(
        "the gateway's server caps connections per address and gives each 10 s to authenticate; a service's does neither"
    )
    func edgeLimits() async throws {
        try await withScratchFolder("hearth-wiring") { folder in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            func configuration(of name: ProcessName) async throws -> ServerConfiguration {
                try await makeProcess(name, settings: try Self.settings(data: folder, logger: logger)).server
                    .configuration
            }
            let gateway = try await configuration(of: .gateway)
            #expect(gateway.maxConnectionsPerAddress == 256)
            #expect(gateway.authenticationWindow == .seconds(10))
            #expect(gateway.maxPartialFrameBytesPerAddress == 128 * 1024 * 1024)
            #expect(gateway.acceptRatePerAddress == AcceptRate(perSecond: 50, burst: 256))
            #expect(gateway.maxFrameSizeBeforeAuthentication == 64 * 1024)
            let echo = try await configuration(of: .echo)
            #expect(echo.maxConnectionsPerAddress == nil && echo.authenticationWindow == nil)
            #expect(echo.maxFrameSizeBeforeAuthentication == nil)
            #expect(echo.maxPartialFrameBytesPerAddress == nil && echo.acceptRatePerAddress == nil)
        }
    }

    /// A process's settings as `hearth serve` gives them by default, its store under `data`
    /// (safety's emails to the log, as `--mail-to-log` asks: no SMTP server here).
    static func settings(data: URL, logger: Logger) throws -> ProcessSettings {
        ProcessSettings(
            host: "127.0.0.1",
            port: 0,
            dataDirectory: data,
            secrets: .forTests,
            dataKeyFile: try SecretOptions.parse([]).dataKeyFile(dataDirectory: data),
            gateway: try GatewaySettings.parse([]),
            peers: try PeerOptions.parse([]),
            mail: try MailOptions.parse(["--mail-to-log"]),
            gatewayTLS: nil,
            pushSender: LogPushSender(logger: logger),
            logger: logger
        )
    }
}
