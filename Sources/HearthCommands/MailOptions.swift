import ArgumentParser
import Foundation
import HearthCommandLine
import HearthMail
import Logging
import SafetyService

/// Where the safety service sends email: an SMTP server (`--smtp-host`), or, when asked with
/// `--mail-to-log`, the log (development: the emails reach nobody).
struct MailOptions: ParsableArguments, Sendable {
    @Option(help: "SMTP server for alert emails. Safety needs it, or --mail-to-log.")
    var smtpHost: String?

    @Option(help: "SMTP port. Default: 587 with STARTTLS, 25 without.")
    var smtpPort: Int?

    @Option(help: "starttls (upgrade, required) or none (a trusted local relay).")
    var smtpSecurity: String = SMTPConfiguration.Security.startTLS.rawValue

    @Option(help: "SMTP login user (AUTH PLAIN).")
    var smtpUser: String?

    @Option(help: "File holding the SMTP password. Default: $HEARTH_SMTP_PASSWORD.")
    var smtpPasswordFile: String?

    @Option(help: "Trust this CA (PEM) for the SMTP server instead of the system's roots.")
    var smtpCAFile: String?

    @Option(help: "The From address of alert emails.")
    var mailFrom = "alerts@hearth.local"

    @Option(
        help: """
            What the app is called in safety's emails and pushes ("Hearth Alert: Joey hasn't checked in") and as \
            the emails' sender name: 1-40 characters.
            """
    )
    var productName = AlertChannels.defaultProductName

    @Option(
        help: """
            Where safety's warning and reminder pushes open the app (its check-in button): a URL with the app's \
            scheme, e.g. myapp://safety/check-in.
            """
    )
    var checkInLink = AlertChannels.defaultCheckInLink

    @Option(
        help: """
            Where emergency contacts open the links in their emails (Confirm, Decline, Opt out): the gateway's \
            contact page (--contact-page-port) as they reach it, e.g. https://hearth.example.
            """
    )
    var contactPageUrl = AlertChannels.localContactPage

    @Flag(
        help: """
            Without an SMTP server, write safety's emails to the log, where they reach nobody: for development \
            (hearth up does this when no --smtp-host is given). Without either, safety refuses to start.
            """
    )
    var mailToLog = false

    func validate() throws {
        guard self.smtpHost == nil || !self.mailToLog else {
            throw ValidationError("give --smtp-host or --mail-to-log, not both")
        }
        guard let url = URL(string: self.contactPageUrl), ["http", "https"].contains(url.scheme ?? ""),
            let host = url.host, !host.isEmpty, url.query == nil
        else { throw ValidationError("--contact-page-url is an http or https URL without a query") }
        // The links carry their tokens, and one-click unsubscribe takes only https (RFC 8058).
        guard url.scheme == "https" || isLoopback(host) else {
            throw ValidationError("--contact-page-url must be https (plain http only on this machine, for development)")
        }
        guard SMTPConfiguration.Security(rawValue: self.smtpSecurity) != nil else {
            throw ValidationError("--smtp-security is starttls or none")
        }
        guard MailAddress(self.mailFrom).isValid else { throw ValidationError("--mail-from is not an email address") }
        let product = self.productName.trimmingCharacters(in: .whitespacesAndNewlines)
        // A subject line and a sender name: one line, short, no quoting games.
        guard (1...40).contains(product.count), product == self.productName,
            !product.contains(where: { $0.isNewline || $0 == "\"" || $0.asciiValue.map { $0 < 0x20 } == true })
        else {
            throw ValidationError("--product-name is 1-40 characters on one line, without quotes or spaces around it")
        }
        guard self.checkInLink.count <= 200, let link = URL(string: self.checkInLink), let scheme = link.scheme,
            !scheme.isEmpty, link.absoluteString.count > scheme.count + 1
        else {
            throw ValidationError("--check-in-link is a URL the app opens, such as myapp://safety/check-in")
        }
    }

    /// Refuses a safety process that would send its alarms nowhere without being told to.
    /// - Throws: `ValidationError` saying what to give.
    func requireDestination() throws {
        guard self.smtpHost == nil, !self.mailToLog else { return }
        throw ValidationError(
            """
            safety emails emergency contacts: give --smtp-host (and --smtp-user, --smtp-password-file as needed), \
            or --mail-to-log to write the emails to the log instead, where they reach nobody (development)
            """
        )
    }

    /// The SMTP client, or the log when `--mail-to-log` is given.
    /// - Throws: `ValidationError` when neither is; an error reading the password file.
    func transport(logger: Logger) throws -> any MailTransport {
        guard let host = self.smtpHost else {
            try self.requireDestination()
            logger.warning(
                "no SMTP server (--smtp-host): alarm emails to emergency contacts are written to the log and reach nobody; for development only"
            )
            return LogMailTransport(logger: logger)
        }
        let security = SMTPConfiguration.Security(rawValue: self.smtpSecurity) ?? .startTLS
        var password = ProcessInfo.processInfo.environment["HEARTH_SMTP_PASSWORD"]
        if let file = self.smtpPasswordFile {
            password = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return SMTPClient(
            configuration: SMTPConfiguration(
                host: host,
                port: self.smtpPort ?? (security == .startTLS ? 587 : 25),
                security: security,
                username: self.smtpUser,
                password: password,
                trustRootsFile: self.smtpCAFile
            )
        )
    }

    var from: MailAddress { MailAddress(self.mailFrom, name: self.productName) }
}
