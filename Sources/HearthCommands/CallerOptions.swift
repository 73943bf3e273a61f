import ArgumentParser
import Foundation
import HearthPush
import Logging

/// How a command authenticates its calls: a token for the gateway, or the internal credential
/// and a user id to call one service directly.
struct CallerOptions: ParsableArguments {
    @Option(help: "A client token (JWT) for the gateway, sent as 'authorization: Bearer TOKEN'. Default: $HEARTH_TOKEN")
    var token: String?

    @Option(help: "Call a service directly with this internal credential (load-testing one service).")
    var internalSecret: String?

    @Option(help: "With --internal-secret: the user id the call acts for.")
    var user = "hearth-cli"

    /// The metadata these options add to each call.
    var metadata: [String: String] {
        if let internalSecret {
            return ["x-hearth-internal": internalSecret, "x-hearth-user": self.user]
        }
        if let token = self.token ?? ProcessInfo.processInfo.environment["HEARTH_TOKEN"], !token.isEmpty {
            return ["authorization": "Bearer \(token)"]
        }
        return [:]
    }

    /// Direct calls go to the process that serves the method; all others to the gateway.
    func defaultTarget(for method: String) -> Target {
        let process = self.internalSecret != nil ? (ProcessName.owner(of: method) ?? .gateway) : .gateway
        return Target(host: "127.0.0.1", port: process.defaultPort)
    }
}

/// `--push-webhook`: where services POST notifications; without it they go to the log.
struct PushOptions: ParsableArguments {
    @Option(help: "URL that services POST notifications to as JSON (retried until accepted). Default: the log.")
    var pushWebhook: String?

    /// A webhook that cannot be a URL to POST to would fail every push, retried for good.
    func validate() throws {
        guard let webhook = self.pushWebhook else { return }
        guard let url = URL(string: webhook), ["http", "https"].contains(url.scheme?.lowercased()),
            url.host?.isEmpty == false
        else {
            throw ValidationError("--push-webhook must be an http:// or https:// URL with a host, not \"\(webhook)\"")
        }
    }

    func sender(logger: Logger) -> any PushSender {
        self.pushWebhook.map { WebhookPushSender(url: $0) } ?? LogPushSender(logger: logger)
    }
}
