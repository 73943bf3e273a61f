import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContactPage
import HearthContracts
import HearthGateway
import HearthRPC

/// The gateway's routes and limits, from flags or a JSON file.
struct GatewaySettings: ParsableArguments {
    @Option(
        name: .customLong("backend"),
        help: """
            A route, repeatable: PREFIX=HOST:PORT[,HOST:PORT...] (replicas used round-robin). \
            A HOST that is a name stands for every address it has, looked up again every 5 s and after a failed \
            connect (a Kubernetes headless Service: a replica per ready pod); an address joins once it answers a \
            health check, and one that is gone is closed once its calls end. \
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
            KiB a frame may have on a connection until a call on it has passed authentication; a larger one \
            closes the connection (RESOURCE_EXHAUSTED). Clients call hearth.gateway.v1.Gateway/Authenticate first.
            """
    )
    var frameKibBeforeAuthentication = GatewaySettings.defaultFrameKibBeforeAuthentication

    /// Room for the largest token (8 KiB) and the rest of a call's metadata; what Hearth's
    /// clients of the gateway assume.
    static let minimumFrameKibBeforeAuthentication = RPCClient.gatewayFrameSizeBeforeAuthentication / 1024
    static let defaultFrameKibBeforeAuthentication = 64

    @Option(
        help: """
            Serve the contact page (the links in emails to emergency contacts) over HTTP on this port, \
            on the gateway's host. Default: not served. Behind TLS in production (an ingress or proxy).
            """
    )
    var contactPagePort: Int?

    @Option(
        help: """
            Contact page: requests asking safety (those carrying a link's token) that one client address may make \
            a minute, sustained; one more is answered 429 with Retry-After. IPv6 addresses count by their /64.
            """
    )
    var contactPageRatePerMinute = ContactPage.Limits().perMinute

    @Option(help: "Contact page: requests asking safety that one client address may make at once.")
    var contactPageBurst = ContactPage.Limits().burst

    @Option(help: "Contact page: client addresses whose rates are kept; past it, the one idle longest is forgotten.")
    var contactPageMaxAddresses = ContactPage.Limits().maxAddresses

    @Option(help: "Contact page: requests asking safety at once, over all clients; one more is answered 503.")
    var contactPageMaxInFlight = ContactPage.Limits().maxInFlight

    @Option(
        help: """
            Contact page: close a connection that completes no request head this long after it opened or was last \
            answered (however slowly its bytes come), or whose request body takes longer than this after its head.
            """
    )
    var contactPageReadTimeout = DurationArgument(ContactPage.Limits().readTimeout)

    @Option(help: "Contact page: connections held open at once; further ones wait to be accepted.")
    var contactPageMaxConnections = ContactPage.Limits().maxConnections

    @Flag(
        help: """
            Contact page: count each request against the last address of its X-Forwarded-For (the one the proxy \
            added), not the connection's peer. Only behind a proxy that sets the header: any client can send one.
            """
    )
    var contactPageTrustForwardedFor = false

    @Option(
        help: """
            Also accept EdDSA (Ed25519) tokens signed by this public key, base64url (a JWK's x). \
            HS256 tokens (the shared secret's, as hearth token signs) are then refused unless --accept-hs256.
            """
    )
    var eddsaPublicKey: String?

    @Flag(
        name: .customLong("accept-hs256"),
        help: "With --eddsa-public-key, still accept HS256 tokens signed with the shared secret."
    )
    var acceptHS256 = false

    @Option(
        help:
            "Accept only tokens whose iss is exactly this. Default: any issuer. Example: --jwt-issuer https://id.example.com"
    )
    var jwtIssuer: String?

    @Option(
        help: "Accept only tokens whose aud (a string or an array of strings) includes this. Default: any audience."
    )
    var jwtAudience: String?

    @Option(
        help: """
            The longest a token may live: exp - iat at most this, and exp at most this (plus 60 s for clocks \
            that differ) from now, so that a token without iat lives no longer. Example: --jwt-max-lifetime 1h
            """
    )
    var jwtMaxLifetime = DurationArgument(.seconds(Int64(TokenPolicy.defaultMaxLifetime)))

    /// What the gateway asks of a token beyond its signature and times.
    /// - Throws: `ValidationError` when a flag is empty, out of range, or means nothing alone.
    func tokenPolicy() throws -> TokenPolicy {
        guard self.jwtIssuer?.isEmpty != true, self.jwtAudience?.isEmpty != true else {
            throw ValidationError("--jwt-issuer and --jwt-audience must not be empty")
        }
        guard self.jwtMaxLifetime.duration > .zero else {
            throw ValidationError("--jwt-max-lifetime must be longer than 0")
        }
        guard !self.acceptHS256 || self.eddsaPublicKey != nil else {
            throw ValidationError(
                "--accept-hs256 is for a gateway given --eddsa-public-key (HS256 is accepted without one)"
            )
        }
        return TokenPolicy(
            issuer: self.jwtIssuer,
            audience: self.jwtAudience,
            maxLifetime: self.jwtMaxLifetime.seconds,
            acceptsHS256WithEdDSA: self.acceptHS256
        )
    }

    /// The gateway's configuration: routes from the file and flags, else the local services.
    func configuration(secrets: Secrets) throws -> Gateway.Configuration {
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
        let largest = ProcessName.gateway.maxFrameSize / 1024
        guard (Self.minimumFrameKibBeforeAuthentication...largest).contains(self.frameKibBeforeAuthentication) else {
            throw ValidationError(
                "--frame-kib-before-authentication must be from \(Self.minimumFrameKibBeforeAuthentication) "
                    + "(a call with the largest token) to \(largest) (the gateway's frame limit)"
            )
        }
        // Each route is called with the credential of the gateway's link to the process that
        // serves its package.
        var credentials: [String: String] = [:]
        for prefix in routes.keys {
            guard let process = ProcessName.owner(of: prefix), process != .gateway else {
                throw ValidationError(
                    "no Hearth process serves route \(prefix), so there is no credential to call it with"
                )
            }
            credentials[prefix] = try secrets.credential(.gateway, to: process)
        }
        return Gateway.Configuration(
            routes: routes,
            credentials: credentials,
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

    /// The methods whose contracts say "Internal" (ForwardActivity, GetNestRole, each service's
    /// ExportUser and EraseUser, ...): for Hearth's own processes, refused to clients.
    static let servicesOnly = Set(Contracts.services.flatMap(\.methods).filter(\.servicesOnly).map(\.name))

    /// Each route's request frame limit: that of the service whose package it falls under
    /// (checkins takes photos). (A route no Hearth process serves is refused before this: there
    /// is no link to call it with.)
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

extension GatewaySettings {
    /// The contact page's limits, from the `--contact-page-*` flags.
    /// - Throws: `ValidationError` when one is out of range.
    func contactPageLimits() throws -> ContactPage.Limits {
        guard self.contactPageRatePerMinute > 0, self.contactPageRatePerMinute.isFinite,
            self.contactPageBurst >= 1, self.contactPageBurst.isFinite
        else {
            throw ValidationError("--contact-page-rate-per-minute must be positive and --contact-page-burst at least 1")
        }
        guard self.contactPageMaxAddresses >= 1, self.contactPageMaxInFlight >= 1, self.contactPageMaxConnections >= 1
        else {
            throw ValidationError(
                "--contact-page-max-addresses, --contact-page-max-in-flight and --contact-page-max-connections "
                    + "must be at least 1"
            )
        }
        guard self.contactPageReadTimeout.duration > .zero else {
            throw ValidationError("--contact-page-read-timeout must be longer than 0")
        }
        return ContactPage.Limits(
            perMinute: self.contactPageRatePerMinute,
            burst: self.contactPageBurst,
            maxAddresses: self.contactPageMaxAddresses,
            maxInFlight: self.contactPageMaxInFlight,
            readTimeout: self.contactPageReadTimeout.duration,
            maxConnections: self.contactPageMaxConnections,
            trustForwardedFor: self.contactPageTrustForwardedFor
        )
    }
}
