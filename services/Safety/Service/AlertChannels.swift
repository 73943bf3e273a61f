import Foundation
import HearthContracts
import HearthCore
public import HearthMail
public import HearthPush
import HearthRPC
import HearthStore
public import Logging

/// Where alert emails go: an SMTP server, or the log when none is configured.
public protocol MailTransport: Sendable {
    func send(_ message: MailMessage) async throws
}

extension SMTPClient: MailTransport {}

/// Without an SMTP server: each email is written to the log (development only), its links
/// included, so that a contact can be confirmed from the printed link. Addresses are masked
/// (`m***@example.com`), in the text too: a log is no place for them.
public struct LogMailTransport: MailTransport {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func send(_ message: MailMessage) async throws {
        self.logger.notice(
            "email (no SMTP server configured)",
            metadata: [
                "to": "\(message.to.masked)",
                "subject": "\(message.subject.maskingEmailAddresses)",
                "body": "\(message.body.maskingEmailAddresses)",
            ]
        )
    }
}

/// How alerts leave the building.
public struct AlertChannels: Sendable {
    public var mail: any MailTransport
    public var from: MailAddress
    public var push: any PushSender
    /// Where the contact page is served, as contacts reach it (`https://hearth.example`): the
    /// links in their emails point there.
    public var contactPage: String
    /// What the app is called in the emails and pushes ("Hearth Alert: Joey hasn't checked in").
    public var productName: String
    /// Where a warning or reminder push opens the app: its check-in button.
    public var checkInLink: String

    public init(
        mail: any MailTransport,
        from: MailAddress,
        push: any PushSender,
        contactPage: String = AlertChannels.localContactPage,
        productName: String = AlertChannels.defaultProductName,
        checkInLink: String = AlertChannels.defaultCheckInLink
    ) {
        self.mail = mail
        self.from = from
        self.push = push
        self.contactPage = contactPage
        self.productName = productName
        self.checkInLink = checkInLink
    }

    /// Unless the operator names another (`--check-in-link`).
    public static let defaultCheckInLink = "hearth://safety/check-in"

    /// Unless the operator names it (`--product-name`).
    public static let defaultProductName = AlertTexts.defaultProduct

    /// The gateway's contact page on this machine, as `hearth up` serves it.
    public static let localContactPage = "http://127.0.0.1:7180"

    /// The push of a claimed message, presented as its kind asks (``PushPresentation``): a
    /// warning critical or time-sensitive with "I'm safe" and "Snooze" buttons and a link to the
    /// check-in button, the reminder with "I'm safe".
    /// - Throws: ``SealedValueUnreadable`` when its token or words do not open.
    func push(_ claim: ClaimedAlert) throws(SealedValueUnreadable) -> PushMessage {
        let alert = claim.alert
        let texts = AlertTexts(language: claim.language ?? "en", name: "", timeZone: .gmt, product: self.productName)
        let presentation = texts.presentation(ofPush: alert.kind)
        return PushMessage(
            id: alert.id,
            userID: alert.userID,
            kind: "safety.\(alert.kind)",
            title: try alert.subject.open(),
            body: try alert.body.open(),
            data: ["push_token": try alert.address.open()],
            createdAt: alert.createdAt,
            interruptionLevel: presentation.urgency.level,
            category: presentation.category,
            actions: presentation.actions.isEmpty
                ? nil
                : presentation.actions.map {
                    PushMessage.Action(id: $0.kind.rawValue, title: $0.title, method: $0.kind.method)
                },
            deepLink: presentation.opensCheckIn ? self.checkInLink : nil
        )
    }

    /// The email of a claimed message. One to a contact ends with its links (an invitation's
    /// Confirm and Decline, and an opt-out link in every one) and carries the opt-out link as
    /// `List-Unsubscribe`, one click (RFC 8058): a mail client's unsubscribe button opts out.
    /// - Throws: ``SealedValueUnreadable`` when its address or words do not open.
    func email(_ claim: ClaimedAlert, date: Date, messageID: String) throws(SealedValueUnreadable) -> MailMessage {
        var message = MailMessage(
            from: self.from,
            to: MailAddress(try claim.alert.address.open()),
            subject: try claim.alert.subject.open(),
            body: try claim.alert.body.open(),
            date: date,
            messageID: messageID
        )
        guard let links = claim.links else { return message }
        let optOut = ContactPagePath.optOut.link(base: self.contactPage, token: links.optOut.text)
        let texts = AlertTexts(
            language: links.language,
            name: links.personName,
            timeZone: .gmt,
            product: self.productName
        )
        message.body +=
            "\n\n"
            + texts.contactLinks(
                confirm: links.answer.map { ContactPagePath.confirm.link(base: self.contactPage, token: $0.text) },
                decline: links.answer.map { ContactPagePath.decline.link(base: self.contactPage, token: $0.text) },
                optOut: optOut
            )
        message.headers = [
            MailHeader("List-Unsubscribe", "<\(optOut)>"),
            MailHeader("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
        ].compactMap { $0 }
        return message
    }
}

extension PushPresentation.Urgency {
    var level: PushMessage.InterruptionLevel {
        switch self {
        case .active: .active
        case .timeSensitive: .timeSensitive
        case .critical: .critical
        }
    }
}

extension PushPresentation.ActionKind {
    /// The call the app makes for the button.
    var method: String {
        switch self {
        case .imSafe: Hearth_Safety_V1_Safety.Method.recordHeartbeat.name
        case .snooze: Hearth_Safety_V1_Safety.Method.snooze.name
        }
    }
}
