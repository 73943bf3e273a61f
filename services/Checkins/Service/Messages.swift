import Foundation
import HearthContracts
import SwiftProtobuf

extension NestRecord {
    var message: Hearth_Checkins_V1_Nest {
        var nest = Hearth_Checkins_V1_Nest()
        nest.id = self.id
        nest.name = self.name
        nest.ownerUserID = self.ownerUserID
        nest.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
        return nest
    }
}

extension SessionRecord {
    func message(now: Date) -> Hearth_Checkins_V1_Session {
        var session = Hearth_Checkins_V1_Session()
        session.id = self.id
        session.nestID = self.nestID
        session.ownerUserID = self.ownerUserID
        session.sitterUserID = self.sitterUserID
        session.startsAt = Google_Protobuf_Timestamp(millisecondsOf: self.startsAt)
        session.endsAt = Google_Protobuf_Timestamp(millisecondsOf: self.endsAt)
        session.timeZone = self.timeZone
        session.active = self.startsAt <= now && now < self.endsAt
        return session
    }
}

extension CheckInRecord {
    var message: Hearth_Checkins_V1_CheckIn {
        var checkIn = Hearth_Checkins_V1_CheckIn()
        checkIn.id = self.id
        checkIn.sessionID = self.sessionID
        checkIn.submitterUserID = self.submitterUserID
        checkIn.caption = self.caption
        checkIn.capturedAt = Google_Protobuf_Timestamp(millisecondsOf: self.capturedAt)
        checkIn.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
        checkIn.hasPhoto_p = self.photoFormat != nil
        if let format = self.photoFormat {
            checkIn.photo = .with {
                $0.format = format
                $0.width = UInt32(self.photoWidth ?? 0)
                $0.height = UInt32(self.photoHeight ?? 0)
                $0.byteSize = UInt64(self.photoBytes ?? 0)
            }
        }
        checkIn.photoAltText = self.photoAltText
        if let viewedAt = self.viewedAt { checkIn.viewedAt = Google_Protobuf_Timestamp(millisecondsOf: viewedAt) }
        checkIn.clientRequestID = self.clientRequestID
        return checkIn
    }
}

extension TemplateRecord {
    var message: Hearth_Checkins_V1_Template {
        var template = Hearth_Checkins_V1_Template()
        template.id = self.id
        template.nestID = self.nestID
        template.text = self.text
        return template
    }
}

extension Hearth_Checkins_V1_NestRole {
    init(_ role: NestRole) {
        self =
            switch role {
            case .owner: .owner
            case .sitter: .sitter
            case .none: .none
            }
    }
}
