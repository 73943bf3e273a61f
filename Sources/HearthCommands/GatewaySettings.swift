import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthGateway
import HearthRPC

/// The gateway's routes and limits, from flags or a JSON file.
struct GatewaySettings: ParsableArguments {
    @Option(
        name: .customLong("backend"),
        help: """
            A route, repeatable: PREFIX=HOST:PORT[,HOST:PORT...] (replicas used round-robin). \
            Default: every Hearth service on its loopback port. Example: --backend hearth.echo.=10.0.0.5:7105,10.0.0.6:7105. \
            A route within one service's package (hearth.checkins., say) gets that service's request size limit; \
            any other route 4 MiB.
            """
    )
    var backends: [String] = []

    @Option(
        help:
            "Routes from a JSON file, e.g. {'routes': {'hearth.echo.': ['127.0.0.1:7105']}} in JSON quotes; --backend adds to them."
    )
    var config: String?

    @Option(help: "The longest any forwarded call may wait, e.g. 15s.")
    var routeTimeout = DurationArgument(.seconds(15))

    @Option(help: "Calls a second each user may make, sustained.")
    var rateLimit: Double = 50

    @Option(help: "Calls each user may make in a burst.")
    var burst: Double = 100

    @Option(help: "Calls each user may have in flight at once (one user's slow calls cannot fill a replica's 1,024).")
    var maxInFlight = 100

    @Option(help: "Open connections one IP address may hold; one more is refused (RESOURCE_EXHAUSTED).")
    var maxConnectionsPerAddress = 256

    @Option(
        help: "Connections one IP address may open a second, sustained; one faster is refused (RESOURCE_EXHAUSTED)."
    )
    var acceptRatePerAddress: Double = 50

    @Option(help: "Connections one IP address may open in a burst.")
    var acceptBurstPerAddress: Double = 256

    @Option(
        help: """
            MiB of requests still arriving that one IP address may hold, of the 512 all share; \
            a frame past it is refused (RESOURCE_EXHAUSTED). At least one photo upload (11 MiB).
            """
    )
    var partialFrameMibPerAddress = 128

    @Option(
        help:
            "Close a connection that has completed no authenticated call this long after it opened (health checks do not count)."
    )
    var authenticationWindow = DurationArgument(.seconds(10))

    @Option(
        help: """
            Serve the contact page (the links in emails to emergency contacts) over HTTP on this port, \
            on the gateway's host. Default: not served. Behind TLS in production (an ingress or proxy).
            """
    )
    var contactPagePort: Int?

    @Option(help: "Also accept EdDSA (Ed25519) tokens signed by this public key, base64url (a JWK's x).")
    var eddsaPublicKey: String?

    /// The gateway's configuration: routes from the file and flags, else the local services.
    func configuration(internalCredential: String) throws -> Gateway.Configuration {
        var routes: [String: [(host: String, port: Int)]] = [:]
        if let config {
            struct File: Decodable { var routes: [String: [String]] }
            let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: config)))
            for (prefix, addresses) in file.routes { routes[prefix] = try Self.targets(addresses, route: prefix) }
        }
        for backend in self.backends {
            guard let equals = backend.firstIndex(of: "="), equals != backend.startIndex else {
                throw ValidationError("--backend takes PREFIX=HOST:PORT[,HOST:PORT], got '\(backend)'")
            }
            let prefix = String(backend[..<equals])
            let addresses = backend[backend.index(after: equals)...].split(separator: ",").map(String.init)
            routes[prefix, default: []] += try Self.targets(addresses, route: prefix)
        }
        if routes.isEmpty {
            for process in ProcessName.services {
                for package in process.packages { routes[package] = [("127.0.0.1", process.defaultPort)] }
            }
        }
        guard self.rateLimit > 0, self.burst >= 1 else {
            throw ValidationError("--rate-limit must be positive and --burst at least 1")
        }
        guard self.maxInFlight >= 1 else { throw ValidationError("--max-in-flight must be at least 1") }
        guard self.maxConnectionsPerAddress >= 1 else {
            throw ValidationError("--max-connections-per-address must be at least 1")
        }
        guard self.acceptRatePerAddress > 0, self.acceptBurstPerAddress >= 1 else {
            throw ValidationError(
                "--accept-rate-per-address must be positive and --accept-burst-per-address at least 1"
            )
        }
        let photo = (ProcessName.gateway.maxFrameSize + Self.mib - 1) / Self.mib
        guard self.partialFrameMibPerAddress >= photo, self.partialFrameMibPerAddress <= 512 else {
            throw ValidationError("--partial-frame-mib-per-address must be from \(photo) (a photo upload) to 512")
        }
        guard self.authenticationWindow.duration > .zero else {
            throw ValidationError("--authentication-window must be longer than 0")
        }
        return Gateway.Configuration(
            routes: routes,
            internalCredential: internalCredential,
            routeTimeout: self.routeTimeout.duration,
            rateLimit: RateLimiter.Limits(perSecond: self.rateLimit, burst: self.burst, maxInFlight: self.maxInFlight),
            maxFrameSize: ProcessName.gateway.maxFrameSize,
            maxRequestFrameSizes: Self.requestFrameSizes(of: routes.keys),
            internalMethods: Self.servicesOnly
        )
    }

    static let mib = 1024 * 1024

    /// Where `hearth up` serves the contact page (safety's default links point there).
    static let localContactPagePort = 7180

    /// The methods whose contracts say "Internal": ForwardActivity (a service reports a user's
    /// activity to safety) and GetNestRole (routines asks checkins who may do what).
    static let servicesOnly = Set(Contracts.services.flatMap(\.methods).filter(\.servicesOnly).map(\.name))

    /// Each route's request frame limit: that of the service whose package it falls under
    /// (checkins takes photos). A route broader than one package, or of another service, is not
    /// named: it gets DESIGN's 4 MiB, which every Hearth server takes.
    static func requestFrameSizes(of prefixes: some Sequence<String>) -> [String: Int] {
        var sizes: [String: Int] = [:]
        for prefix in prefixes {
            if let process = ProcessName.owner(of: prefix) { sizes[prefix] = process.maxFrameSize }
        }
        return sizes
    }

    private static func targets(_ addresses: [String], route: String) throws -> [(host: String, port: Int)] {
        guard !addresses.isEmpty else { throw ValidationError("route \(route) has no backend") }
        return try addresses.map { address in
            guard let target = Target(argument: address) else {
                throw ValidationError("route \(route): '\(address)' is not HOST:PORT")
            }
            return (target.host, target.port)
        }
    }
}
