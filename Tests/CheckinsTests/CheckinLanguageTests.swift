import Foundation
import GRDB
import HearthContracts
import HearthCore
import HearthPush
import HearthRPC
import HearthStore
import HearthTestSupport
import Logging
import SwiftProtobuf
import Testing

@testable import CheckinsService

@Suite("Checkins in the owner's language")
struct CheckinLanguageTests {
    @Test("the catalog is whole; the owner's check-in push is in the language they created the session in")
    func ownerLanguage() async throws {
        #expect(CheckinText.catalog.gaps == [])
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession(ownerLanguage: "zh-TW")
        _ = try await fixture.checkIn(session, caption: "散步完了")
        let (_, english) = try await fixture.nestAndSession(owner: "omar")
        _ = try await fixture.checkIn(english, caption: "Walk done")
        let messages = try await fixture.service.store.base.writer.read { db in
            try String.fetchAll(db, sql: "SELECT message FROM push_outbox ORDER BY rowid")
        }
        .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(messages.map { $0?["title"] as? String } == ["新的照護動態", "New check-in"])
        #expect(messages.map { $0?["body"] as? String } == ["您的保母：散步完了", "Your sitter: Walk done"])
    }
}
