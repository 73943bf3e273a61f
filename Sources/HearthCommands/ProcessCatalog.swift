import ArgumentParser
import EchoService
import Foundation
import HearthRPC
import Logging
import SwiftProtobuf

/// The processes `hearth` can run. Each service issue adds its own.
enum ProcessName: String, CaseIterable, ExpressibleByArgument, Sendable {
    case echo

    /// The loopback port `hearth up` gives it (DESIGN.md's table; echo after the services).
    var defaultPort: Int {
        switch self {
        case .echo: 7105
        }
    }

    /// The RPC packages it serves; `hearth call` picks its default target from these.
    var packages: [String] {
        switch self {
        case .echo: ["hearth.echo."]
        }
    }

    /// Builds the services of this process, with stores under `dataDirectory`.
    func makeServices(dataDirectory: URL) throws -> [any RPCService] {
        switch self {
        case .echo: [EchoService()]
        }
    }

    /// Which process serves `method` (`package.Service/Method`).
    static func owner(of method: String) -> ProcessName? {
        Self.allCases.first { process in process.packages.contains { method.hasPrefix($0) } }
    }
}

/// Every method any process serves, with its message types, so tools can speak JSON.
enum MethodCatalog {
    static func method(named name: String) -> RPCMethod? {
        Self.all[name]
    }

    static let all: [String: RPCMethod] = {
        let health = HealthService(state: HealthState(serving: []))
        let methods = [EchoService().methods, health.methods].flatMap { $0 }
        return Dictionary(uniqueKeysWithValues: methods.map { ($0.name, $0) })
    }()
}

/// Builds the RPC server of one process.
func makeServer(
    _ process: ProcessName,
    host: String,
    port: Int,
    dataDirectory: URL,
    metrics: MethodMetrics,
    logger: Logger
) throws -> RPCServer {
    var serverLogger = logger
    serverLogger[metadataKey: "process"] = "\(process.rawValue)"
    return RPCServer(
        configuration: ServerConfiguration(host: host, port: port),
        services: try process.makeServices(dataDirectory: dataDirectory),
        interceptors: [ServerObservabilityInterceptor(metrics: metrics)],
        logger: serverLogger
    )
}
