import ArgumentParser
import Foundation
import HearthCommandLine
import HearthPush
import Logging

/// `--push-webhook`: where services POST notifications; without it they go to the log.
struct PushOptions: ParsableArguments {
    @Option(
        help: "https:// URL that services POST notifications to as JSON (retried until accepted). Default: the log."
    )
    var pushWebhook: String?

    @Flag(help: "Let --push-webhook be plain http:// (a receiver on this machine or a private network).")
    var allowHTTPWebhook = false

    /// A webhook that cannot be a URL to POST to would fail every push, retried for good; one in
    /// plaintext sends what users are told (names, captions) readable on the way, unless the
    /// operator says so.
    func validate() throws {
        guard let webhook = self.pushWebhook else {
            guard !self.allowHTTPWebhook else { throw ValidationError("--allow-http-webhook needs --push-webhook") }
            return
        }
        let schemes = self.allowHTTPWebhook ? ["http", "https"] : ["https"]
        guard let url = URL(string: webhook), schemes.contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else {
            throw ValidationError(
                "--push-webhook must be an https:// URL with a host"
                    + (self.allowHTTPWebhook ? " (or http://)" : " (http:// only with --allow-http-webhook)")
                    + ", not \"\(webhook)\""
            )
        }
    }

    func sender(logger: Logger) -> any PushSender {
        self.pushWebhook.map { WebhookPushSender(url: $0) } ?? LogPushSender(logger: logger)
    }
}
