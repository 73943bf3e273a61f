import ArgumentParser
import CheckinsService
import EchoService
import Foundation
import HearthCommandLine
import HearthContactPage
import HearthContracts
import HearthCore
import HearthGateway
import HearthMail
import HearthPostgres
import HearthPush
import HearthRPC
import HearthRelay
import HearthScheduler
import HearthStore
import Logging
import NIOCore
import NIOPosix
import RoutinesService
import SafetyService
import ServiceLifecycle
import SwiftProtobuf
import TasksService
import UnixSignals

extension ProcessName {

    /// The largest frame it takes: checkins takes photo uploads, and the gateway forwards them.
    var maxFrameSize: Int {
        switch self {
        case .checkins, .gateway: CheckinsService.maxFrameSize
        case .tasks, .safety, .routines, .echo: ServerConfiguration.defaultMaxFrameSize
        }
    }

    /// The largest frame any process takes: what `hearth call` lets a request grow to.
    static var largestFrameSize: Int {
        Self.allCases.map(\.maxFrameSize).max() ?? ServerConfiguration.defaultMaxFrameSize
    }

    /// Builds this process's module (its services and their background work), with stores under
    /// the settings' data folder.
    func makeModule(settings: ProcessSettings) async throws -> ServiceModule {
        let store = { (name: String) in
            StoreLocation.file(settings.dataDirectory.appendingPathComponent("\(name).sqlite").path)
        }
        let secrets = settings.secrets
        let logger = settings.logger
        // Where checkins, tasks and routines forward activity.
        let safety = {
            RPCClient(configuration: .init(host: settings.peers.safety.host, port: settings.peers.safety.port))
        }
        switch self {
        case .gateway:
            return ServiceModule(services: [])
        case .checkins:
            return try CheckinsService.module(
                location: store("checkins"),
                pushSender: settings.pushSender,
                safety: safety(),
                credential: try secrets.credential(.checkins, to: .safety),
                logger: logger
            )
        case .tasks:
            return try TasksService.module(
                location: store("tasks"),
                pushSender: settings.pushSender,
                safety: safety(),
                checkins: RPCClient(
                    configuration: .init(host: settings.peers.checkins.host, port: settings.peers.checkins.port)
                ),
                routines: RPCClient(
                    configuration: .init(host: settings.peers.routines.host, port: settings.peers.routines.port)
                ),
                credentials: TasksService.PeerCredentials(
                    checkins: try secrets.credential(.tasks, to: .checkins),
                    routines: try secrets.credential(.tasks, to: .routines),
                    safety: try secrets.credential(.tasks, to: .safety)
                ),
                logger: logger
            )
        case .safety:
            let channels = AlertChannels(
                mail: try settings.mail.transport(logger: logger),
                from: settings.mail.from,
                push: settings.pushSender,
                contactPage: settings.mail.contactPageUrl,
                productName: settings.mail.productName,
                checkInLink: settings.mail.checkInLink
            )
            guard let keyFile = settings.dataKeyFile else { preconditionFailure("safety is given its data key file") }
            if let postgres = settings.safetyStore {
                return try await SafetyService.module(
                    postgres: postgres,
                    keys: try DataKeys(file: keyFile),
                    channels: channels,
                    logger: logger
                )
            }
            return try SafetyService.module(
                location: store("safety"),
                keys: try DataKeys(file: keyFile),
                channels: channels,
                logger: logger
            )
        case .routines:
            let checkins = RPCClient(
                configuration: .init(host: settings.peers.checkins.host, port: settings.peers.checkins.port)
            )
            let roles = CachedNestRoles(
                source: CheckinsNestRoles(
                    client: checkins,
                    internalCredential: try secrets.credential(.routines, to: .checkins)
                ),
                clock: SystemClock(),
                lifetime: settings.peers.roleCache.duration
            )
            return try RoutinesService.module(
                location: store("routines"),
                roles: roles,
                safety: safety(),
                credential: try secrets.credential(.routines, to: .safety),
                logger: logger
            )
        case .echo:
            return ServiceModule(services: [EchoService()])
        }
    }
}

/// What every process is built from.
struct ProcessSettings: Sendable {
    var host: String
    var port: Int
    var dataDirectory: URL
    var secrets: Secrets
    /// Where safety's data keys are (``DataKeyRing``); nil for the other processes.
    var dataKeyFile: URL? = nil
    /// Safety's store on PostgreSQL; nil: its SQLite file in the data folder.
    var safetyStore: PostgresLocation? = nil
    var gateway: GatewaySettings
    /// Where the services this process calls listen.
    var peers: PeerOptions
    /// Where alert emails go.
    var mail: MailOptions
    /// TLS for the gateway's client-facing listener; nil: plaintext.
    var gatewayTLS: (@Sendable (any Channel) throws -> Void)?
    /// Where services' notifications go (a webhook, or the log).
    var pushSender: any PushSender
    var logger: Logger
}

/// One process ready to run: its RPC server, and the parts that run beside it (started
/// before it, stopped after it).
struct HearthProcess: Sendable {
    let name: ProcessName
    let server: RPCServer
    let companions: [any Service]
    /// Calls by method and code, and their latencies, as this process served them.
    let metrics: MethodMetrics

    var services: [ServiceGroupConfiguration.ServiceConfiguration] {
        (self.companions + [self.server]).map { .init(service: $0) }
    }

    /// What it reports to Prometheus now.
    var currentMetrics: ProcessMetrics {
        ProcessMetrics(
            process: self.name.rawValue,
            methods: self.metrics.snapshot(),
            callsInFlight: self.server.callsInFlight,
            openConnections: self.server.openConnections
        )
    }
}

/// A `/metrics` endpoint for `processes`, when a port is given.
private func metricsServer(for processes: [HearthProcess], host: String, port: Int?, logger: Logger) -> MetricsServer? {
    port.map { port in
        MetricsServer(host: host, port: port, logger: logger) {
            prometheusText(processes.map(\.currentMetrics))
        }
    }
}

/// The group that runs `processes` (and their `/metrics` endpoint, when a port is given) until
/// SIGTERM or SIGINT. Shutdown is graceful (each server drains its calls), and after 30 s
/// cancels whatever still runs: a stuck peer never keeps the process alive for good.
func serviceGroup(for processes: [HearthProcess], host: String, metricsPort: Int?, logger: Logger) -> ServiceGroup {
    let metrics = metricsServer(for: processes, host: host, port: metricsPort, logger: logger)
    var configuration = ServiceGroupConfiguration(
        services: (metrics.map { [.init(service: $0)] } ?? []) + processes.flatMap(\.services),
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
    configuration.maximumGracefulShutdownDuration = .seconds(30)
    return ServiceGroup(configuration: configuration)
}

/// Builds one process: a service's server requires, on every non-health call, the credential
/// of a link into it that allows the method; the gateway's server faces clients and forwards what it does not serve.
func makeProcess(_ name: ProcessName, settings: ProcessSettings) async throws -> HearthProcess {
    var logger = settings.logger
    logger[metadataKey: "process"] = "\(name.rawValue)"
    let metrics = MethodMetrics()
    switch name {
    case .gateway:
        guard let jwtSecret = settings.secrets.jwtSecret else {
            throw ValidationError("the gateway needs the token secret (HEARTH_JWT_SECRET or --jwt-secret-file)")
        }
        let verifier = try await TokenVerifier(
            hmacSecret: jwtSecret,
            eddsaPublicKey: settings.gateway.eddsaPublicKey,
            policy: try settings.gateway.tokenPolicy()
        )
        // One group for the server and the gateway's backend connections: a call goes out on
        // the loop it came in on.
        let gatewayLoops = MultiThreadedEventLoopGroup.singleton
        let gateway = Gateway(
            configuration: try settings.gateway.configuration(secrets: settings.secrets),
            verifier: verifier,
            metrics: metrics,
            group: gatewayLoops,
            logger: logger
        )
        var configuration = ServerConfiguration(
            host: settings.host,
            port: settings.port,
            maxFrameSize: name.maxFrameSize,
            connectionSetup: settings.gatewayTLS
        )
        // The public edge: no host takes every slot, nor holds one without authenticating.
        configuration.maxConnectionsPerAddress = settings.gateway.maxConnectionsPerAddress
        configuration.acceptRatePerAddress = AcceptRate(
            perSecond: settings.gateway.acceptRatePerAddress,
            burst: settings.gateway.acceptBurstPerAddress
        )
        configuration.maxPartialFrameBytesPerAddress = settings.gateway.partialFrameMibPerAddress * GatewaySettings.mib
        configuration.authenticationWindow = .nanoseconds(
            Int64(settings.gateway.authenticationWindow.seconds * 1e9)
        )
        configuration.maxFrameSizeBeforeAuthentication = settings.gateway.frameKibBeforeAuthentication * 1024
        let server = RPCServer(
            configuration: configuration,
            services: [gateway],
            forwarder: gateway,
            // The gateway's own methods (health, Authenticate); the gateway counts what it forwards.
            interceptors: [ServerObservabilityInterceptor(metrics: metrics)],
            group: gatewayLoops,
            logger: logger
        )
        var companions: [any Service] = [gateway]
        if let port = settings.gateway.contactPagePort {
            let safety = RPCClient(
                configuration: .init(host: settings.peers.safety.host, port: settings.peers.safety.port)
            )
            companions.append(
                ContactPage.application(
                    host: settings.host,
                    port: port,
                    links: SafetyContactLinks(
                        client: safety,
                        credential: try settings.secrets.credential(.gateway, to: .safety)
                    ),
                    limits: try settings.gateway.contactPageLimits(),
                    logger: logger
                )
            )
        }
        return HearthProcess(name: name, server: server, companions: companions, metrics: metrics)
    default:
        let module = try await name.makeModule(settings: settings)
        let server = RPCServer(
            configuration: ServerConfiguration(
                host: settings.host,
                port: settings.port,
                maxFrameSize: name.maxFrameSize,
                callers: try name.callers(secrets: settings.secrets)
            ),
            services: module.services,
            interceptors: [ServerObservabilityInterceptor(metrics: metrics)],
            logger: logger
        )
        // A store at fault shows in health whether a call or background work met it.
        for scheduler in module.work {
            scheduler.observeFailures { [health = server.health, logger] error in
                health.noteFailure(error, logger: logger)
            }
        }
        return HearthProcess(
            name: name,
            server: server,
            companions: module.foundations + module.work,
            metrics: metrics
        )
    }
}
