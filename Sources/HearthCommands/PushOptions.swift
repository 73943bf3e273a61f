import ArgumentParser
import Foundation
import HearthCommandLine
import HearthPush
import Logging

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
