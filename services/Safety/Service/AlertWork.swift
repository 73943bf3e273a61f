import Foundation
import HearthCore
public import HearthMail
public import HearthPush
import HearthScheduler
import Logging

/// Where alert emails go: an SMTP server, or the log when none is configured.
public protocol MailTransport: Sendable {
    func send(_ message: MailMessage) async throws
}

extension SMTPClient: MailTransport {}

/// Without an SMTP server: each email is written to the log (development only).
public struct LogMailTransport: MailTransport {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func send(_ message: MailMessage) async throws {
        self.logger.notice(
            "email (no SMTP server configured)",
            metadata: ["to": "\(message.to.address)", "subject": "\(message.subject)", "body": "\(message.body)"]
        )
    }
}

/// How alerts leave the building.
public struct AlertChannels: Sendable {
    public var mail: any MailTransport
    public var from: MailAddress
    public var push: any PushSender

    public init(mail: any MailTransport, from: MailAddress, push: any PushSender) {
        self.mail = mail
        self.from = from
        self.push = push
    }
}

/// The words of each message the switch decides, in the user's language.
enum AlertWords {
    /// A decided item's: a warning push, or the alert email.
    static func texts(_ profile: ProfileRecord, _ item: DueItem, _ now: Date) -> (subject: String, body: String) {
        let texts = profile.texts
        switch item {
        case .warning(let minutes):
            let push = texts.warningPush(minutesBefore: minutes)
            return (push.title, push.body)
        case .alert:
            return texts.alertEmail(lastCheckIn: profile.lastCheckInAt ?? profile.periodStart, now: now)
        }
    }

    /// The all-clear email after a check-in `at`, to a contact who was alerted.
    static func allClear(_ profile: ProfileRecord, _ at: Date) -> (subject: String, body: String) {
        profile.texts.allClearEmail(checkedInAt: at)
    }

    static func reminderText(_ profile: ProfileRecord) -> (subject: String, body: String) {
        let push = profile.texts.reminderPush()
        return (push.title, push.body)
    }
}

/// The switch's deciding: what fell due goes into the alert outbox (in batches, one transaction
/// each); then the senders are told to look. It never waits for a delivery, so a slow SMTP
/// server holds back no warning.
struct AlertDecider: DueWork {
    static let batch = 500

    let store: SafetyStore
    let wakeSenders: @Sendable () -> Void

    func nextDueTime() async throws -> Date? {
        try await self.store.nextDecisionTime()
    }

    func runDue(now: Date) async throws {
        while try await self.store.decideDue(
            now: now,
            limit: Self.batch,
            texts: AlertWords.texts,
            reminderText: AlertWords.reminderText
        ) == Self.batch {}
        // Also after a pass that decided nothing: a call may have queued a message itself.
        self.wakeSenders()
    }
}

/// Delivers one channel's messages from the alert outbox: claims up to ``sendersAtOnce`` that
/// are due (in a write that counts the attempt), sends them at once, records each outcome as
/// it comes, and claims again. One sender per channel, so a stuck SMTP server holds back no
/// push.
struct AlertSender: DueWork {
    static let sendersAtOnce = 64
    /// How long a claimed message whose outcome could not be written (a full disk) waits
    /// before it is tried again. A process start releases claims at once.
    static let lease: TimeInterval = 10 * 60

    let channel: AlertRecord.Channel
    let store: SafetyStore
    let channels: AlertChannels
    let logger: Logger
    /// The domain Message-IDs end in.
    let messageDomain: String

    func nextDueTime() async throws -> Date? {
        try await self.store.nextAttemptTime(self.channel)
    }

    func runDue(now: Date) async throws {
        while true {
            let claimed = try await self.store.claimDue(
                self.channel,
                now: now,
                limit: Self.sendersAtOnce,
                lease: Self.lease
            )
            await claimed.forEachConcurrently(atMost: Self.sendersAtOnce) { alert in
                await self.deliver(alert)
                return true
            }
            if claimed.count < Self.sendersAtOnce { return }
        }
    }

    private func deliver(_ alert: AlertRecord) async {
        let outcome: Result<String, DeliveryFailure>
        do {
            switch alert.channel {
            case .email:
                try await self.channels.mail.send(
                    MailMessage(
                        from: self.channels.from,
                        to: MailAddress(alert.address),
                        subject: alert.subject,
                        body: alert.body,
                        date: self.store.now,
                        // Stable across retries and restarts: a resend is recognizably the same message.
                        messageID: "\(alert.id)@\(self.messageDomain)"
                    )
                )
            case .push:
                guard !alert.address.isEmpty else {
                    throw DeliveryFailure(
                        message: "no push token on the profile",
                        isPermanent: true,
                        mayHaveArrived: false
                    )
                }
                try await self.channels.push.send(
                    PushMessage(
                        id: alert.id,
                        userID: alert.userID,
                        kind: "safety.\(alert.kind)",
                        title: alert.subject,
                        body: alert.body,
                        data: ["push_token": alert.address],
                        createdAt: alert.createdAt
                    )
                )
            }
            outcome = .success("")
        } catch let failure as DeliveryFailure {
            outcome = .failure(failure)
        } catch let error as SMTPError {
            outcome = .failure(
                DeliveryFailure(
                    message: error.description,
                    isPermanent: error.isPermanent,
                    mayHaveArrived: error.mayHaveDelivered
                )
            )
        } catch let error as PushRejected {
            outcome = .failure(DeliveryFailure(message: error.description, isPermanent: true, mayHaveArrived: false))
        } catch {
            // Nothing says how far it got.
            outcome = .failure(DeliveryFailure(message: "\(error)", isPermanent: false, mayHaveArrived: true))
        }
        if case .failure(let failure) = outcome {
            self.logger.warning(
                "alert not delivered",
                metadata: ["alert": "\(alert.id)", "kind": "\(alert.kind)", "error": "\(failure.message)"]
            )
        }
        do {
            try await self.store.record(alert.id, attempt: outcome, now: self.store.now)
        } catch {
            self.logger.error(
                "could not record a delivery; tried again after the lease",
                metadata: ["alert": "\(alert.id)", "error": "\(error)"]
            )
        }
    }
}
