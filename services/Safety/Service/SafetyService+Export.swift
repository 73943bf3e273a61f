import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
import HearthStore
import SwiftProtobuf

extension SafetyService {
    /// Safety's part of an account export: the profile, contacts and status as GetProfile,
    /// ListContacts and GetStatus answer them (names and addresses opened), the check-ins kept
    /// (``SafetyStore/checkIns(of:)``), oldest first, and every message the switch decided, of
    /// this period and earlier ones (``SafetyStore/messages(of:)``), by when it was decided: a
    /// pending one with its address and words opened, never their sealed bytes. A user without a
    /// profile has nothing here (their contacts, check-ins and messages went with it): an empty
    /// export, no status either.
    public func exportUser(_ request: Hearth_Safety_V1_ExportUserRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_UserExport
    {
        let user = try context.verifiedUser()
        var export = Hearth_Safety_V1_UserExport()
        // The profile as the status read it, in the same transaction.
        guard let snapshot = try await self.store.status(user) else { return export }
        let now = self.store.now
        export.profile = try snapshot.profile.message
        export.status = snapshot.message(now: now)
        export.contacts = try await self.store.contacts(user).map { try $0.message(now: now) }
        export.checkIns = try await self.store.checkIns(of: user).map(\.message)
        export.messages = try await self.store.messages(of: user).map { try $0.exported }
        return export
    }
}

extension CheckInRow {
    var message: Hearth_Safety_V1_CheckInRecord {
        .with {
            $0.at = Google_Protobuf_Timestamp(millisecondsOf: self.at)
            $0.source = self.source
            $0.timeZone = self.timeZone
            $0.deviceInfo = self.deviceInfo
            $0.counted = self.counted
        }
    }
}

extension AlertRecord {
    /// The message as an export shows it: what it was, to whom, what became of it, and its
    /// address and words as the row holds them (opened while pending, emptied once final).
    var exported: Hearth_Safety_V1_MessageRecord {
        get throws {
            var message = Hearth_Safety_V1_MessageRecord()
            message.id = self.id
            message.kind = self.exportedKind
            let warning = "warning_"
            if self.kind.hasPrefix(warning), let minutes = UInt32(self.kind.dropFirst(warning.count)) {
                message.minutesBefore = minutes
            }
            message.channel =
                switch self.channel {
                case .email: .email
                case .push: .push
                }
            message.contactID = self.exportedContactID
            message.address = try self.address.open()
            message.subject = try self.subject.open()
            message.body = try self.body.open()
            message.state =
                switch self.state {
                case .pending: .pending
                case .sent: .sent
                case .failed: .failed
                case .cancelled: .cancelled
                }
            message.attempts = UInt32(self.attempts)
            message.lastError = self.lastError
            message.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
            if let sent = self.sentAt { message.sentAt = Google_Protobuf_Timestamp(millisecondsOf: sent) }
            if let next = self.nextAttemptAt { message.nextAttemptAt = Google_Protobuf_Timestamp(millisecondsOf: next) }
            message.mayHaveArrived = self.mayHaveArrived
            return message
        }
    }

    /// The stored kind (``MessageKind``, ``DueItem/kind``, ``ContactEvent/kind``) in the
    /// contract's words; unspecified for one this version does not know.
    private var exportedKind: Hearth_Safety_V1_MessageKind {
        switch self.kind {
        case MessageKind.alert: .alarm
        case MessageKind.allClear: .allClear
        case MessageKind.reminder: .reminder
        case MessageKind.invitation: .invitation
        case MessageKind.test: .test
        case ContactEvent.confirmed.kind: .contactConfirmed
        case ContactEvent.declined.kind: .contactDeclined
        case ContactEvent.optedOut.kind: .contactOptedOut
        case ContactEvent.bounced.kind: .contactBounced
        case MessageKind.graceEnded: .contactGraceEnded
        case let kind where kind.hasPrefix("warning_"): .warning
        default: .unspecified
        }
    }

    /// The contact an email went to, or a push to the user told of (kept as `contact:ID`, so
    /// that removing the contact does not cancel the user's news of it); empty for the user's
    /// own pushes (a reminder's keeps its day there) and tests.
    private var exportedContactID: String {
        switch self.channel {
        case .email: return self.contactID
        case .push:
            let news = "contact:"
            return self.contactID.hasPrefix(news) ? String(self.contactID.dropFirst(news.count)) : ""
        }
    }
}
