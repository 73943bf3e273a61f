import ArgumentParser
import Foundation

/// How a command authenticates its calls: a token for the gateway, or a link's credential and a
/// user id to call one service directly.
public struct CallerOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(help: "A client token (JWT) for the gateway, sent as 'authorization: Bearer TOKEN'. Default: $HEARTH_TOKEN")
    public var token: String?

    @Option(
        help:
            "Call a service directly with this credential: the gateway's link to it, DATA/secrets/gateway-SERVICE.key (load-testing one service)."
    )
    public var internalSecret: String?

    @Option(help: "With --internal-secret: the user id the call acts for.")
    public var user = "hearth-cli"

    /// The metadata these options add to each call.
    public var metadata: [String: String] {
        if let internalSecret {
            return ["x-hearth-internal": internalSecret, "x-hearth-user": self.user]
        }
        if let token = self.token ?? ProcessInfo.processInfo.environment["HEARTH_TOKEN"], !token.isEmpty {
            return ["authorization": "Bearer \(token)"]
        }
        return [:]
    }

    /// Direct calls go to the process that serves the method; all others to the gateway.
    public func defaultTarget(for method: String) -> Target {
        let process = self.internalSecret != nil ? (ProcessName.owner(of: method) ?? .gateway) : .gateway
        return Target(host: "127.0.0.1", port: process.defaultPort)
    }
}
