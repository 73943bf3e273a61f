import Foundation
import HearthContracts
import HearthCore
public import HearthRPC
import HearthStore
import SwiftProtobuf

extension SafetyService {
    /// Safety's part of an account export: the profile, contacts and status as GetProfile,
    /// ListContacts and GetStatus answer them (names and addresses opened), and the check-ins
    /// kept (``SafetyStore/checkIns(of:)``), oldest first. A user without a profile has nothing
    /// here (their contacts and check-ins went with it): an empty export, no status either.
    public func exportUser(_ request: Hearth_Safety_V1_ExportUserRequest, _ context: RPCContext) async throws
        -> Hearth_Safety_V1_UserExport
    {
        let user = try context.verifiedUser()
        var export = Hearth_Safety_V1_UserExport()
        // The profile as the status read it, in the same transaction.
        guard let snapshot = try await self.store.status(user) else { return export }
        let now = self.store.now
        export.profile = snapshot.profile.message
        export.status = snapshot.message(now: now)
        export.contacts = try await self.store.contacts(user).map { $0.message(now: now) }
        export.checkIns = try await self.store.checkIns(of: user).map(\.message)
        return export
    }
}

extension SafetyStore.CheckInRow {
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
