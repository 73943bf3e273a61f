import Foundation
import HearthContracts
import HearthCore
import HearthStore
import SwiftProtobuf

extension ProfileRecord {
    /// The name, opened; "" when it does not open.
    var openedName: String { (try? self.name.open()) ?? "" }

    /// The name as the switch's words say it to a contact, mid-sentence: the user's, or words
    /// that name no one when it does not open (a contact page, a link's words).
    var spokenName: String {
        (AlertTexts.Language(rawValue: self.language) ?? .english).naming(self.openedName).0
    }

    /// What the switch says to and about this user, in their language and zone; without their
    /// name when it does not open (``AlertTexts/name``): a damaged value silences no alarm.
    func texts(product: String) -> AlertTexts {
        AlertTexts(
            language: self.language,
            name: self.openedName,
            timeZone: TimeZone(iana: self.timeZone) ?? .gmt,
            product: product
        )
    }

    var message: Hearth_Safety_V1_Profile {
        get throws {
            let (name, email) = (try self.name.open(), try self.email.open())
            return .with {
                $0.userID = self.userID
                $0.name = name
                $0.email = email
                $0.thresholdHours = UInt32(self.thresholdHours)
                $0.preferredLanguage = self.language
                $0.timeZone = self.timeZone
                $0.dailyReminder = .with {
                    $0.enabled = self.reminderEnabled
                    $0.hour = UInt32(self.reminderHour)
                    $0.minute = UInt32(self.reminderMinute)
                }
                $0.pushToken = self.pushToken
                $0.countActivityAsCheckIn = self.countActivity
                $0.isActive = self.isActive
                $0.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
                $0.updatedAt = Google_Protobuf_Timestamp(millisecondsOf: self.updatedAt)
            }
        }
    }
}

extension ContactRecord {
    func message(now: Date) throws -> Hearth_Safety_V1_Contact {
        let consent = self.consent
        let (email, name) = (try self.email.open(), try self.name.open())
        return .with {
            $0.id = self.id
            $0.email = email
            $0.name = name
            $0.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
            $0.state = .init(consent.state)
            if let invited = consent.invitedAt { $0.invitedAt = Google_Protobuf_Timestamp(millisecondsOf: invited) }
            if let expires = consent.expiresAt {
                $0.invitationExpiresAt = Google_Protobuf_Timestamp(millisecondsOf: expires)
            }
            $0.invitationsSent = UInt32(self.invitationsSent)
            if let answered = consent.answeredAt { $0.answeredAt = Google_Protobuf_Timestamp(millisecondsOf: answered) }
            $0.receivesAlarms = consent.receivesAlarms(at: now)
        }
    }
}

extension Hearth_Safety_V1_ContactState {
    init(_ state: ContactState) {
        self =
            switch state {
            case .invited: .invited
            case .confirmed: .confirmed
            case .declined: .declined
            case .optedOut: .optedOut
            case .bounced: .bounced
            }
    }
}

extension Hearth_Safety_V1_ContactLink {
    init(_ view: LinkView) {
        self.init()
        self.outcome =
            switch view.check {
            case .usable: .linkOk
            case .notFound: .linkNotFound
            case .expired: .linkExpired
            case .alreadyAnswered: .linkAlreadyAnswered
            }
        self.personName = view.personName
        self.language = view.language
        if let state = view.state { self.state = .init(state) }
    }
}

extension StatusSnapshot {
    func message(now: Date) -> Hearth_Safety_V1_Status {
        var status = Hearth_Safety_V1_Status()
        status.state = .init(self.clock.state(at: now))
        if status.state == .notArmed {
            status.notArmedReason =
                switch self.invitations {
                case _ where !self.profile.isActive: .inactive
                case .none: .noContact
                case .open: .awaitingConfirmation
                case .expired: .invitationExpired
                }
        }
        if let last = self.profile.lastCheckInAt {
            status.lastCheckInAt = Google_Protobuf_Timestamp(millisecondsOf: last)
        }
        if self.clock.armed {
            status.deadline = Google_Protobuf_Timestamp(millisecondsOf: self.clock.deadline)
            status.remainingSeconds = Int64(self.clock.deadline.timeIntervalSince(now).rounded(.down))
        }
        if let paused = self.profile.pausedUntil, paused > now {
            status.pausedUntil = Google_Protobuf_Timestamp(millisecondsOf: paused)
        }
        status.snoozes = UInt32(self.profile.snoozesInARow)
        for alert in self.alerts {
            if alert.kind.hasPrefix("warning_"), alert.state == .sent, let minutes = UInt32(alert.kind.dropFirst(8)) {
                status.warnings.append(
                    .with {
                        $0.minutesBefore = minutes
                        $0.sentAt = Google_Protobuf_Timestamp(millisecondsOf: alert.sentAt ?? alert.createdAt)
                    }
                )
            } else if alert.channel == .email, alert.state != .cancelled {
                status.emails.append(
                    .with {
                        $0.contactID = alert.contactID
                        $0.email = self.addresses[alert.contactID] ?? ""
                        $0.kind = alert.kind == AlertRecord.Kind.allClear ? "ALL_CLEAR" : "ALERT"
                        $0.state =
                            switch alert.state {
                            case .pending, .cancelled: .pending
                            case .sent: .sent
                            case .failed: .failed
                            }
                        $0.attempts = UInt32(alert.attempts)
                        $0.lastError = alert.lastError
                        if let sent = alert.sentAt { $0.sentAt = Google_Protobuf_Timestamp(millisecondsOf: sent) }
                    }
                )
            }
        }
        return status
    }
}

// MARK: Between the rules' words and the protobuf messages

extension ProfileDraft {
    init(_ request: Hearth_Safety_V1_UpsertProfileRequest) {
        self.init(
            name: request.name,
            email: request.email,
            thresholdHours: request.thresholdHours,
            preferredLanguage: request.preferredLanguage,
            timeZone: request.timeZone,
            reminderHour: request.dailyReminder.hour,
            reminderMinute: request.dailyReminder.minute,
            pushToken: request.pushToken
        )
    }
}

extension Hearth_Safety_V1_SwitchState {
    init(_ phase: SwitchPhase) {
        self =
            switch phase {
            case .normal: .normal
            case .warning: .warning
            case .expired: .expired
            case .paused: .paused
            case .notArmed: .notArmed
            }
    }
}
