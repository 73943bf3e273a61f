import HearthContracts
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import SafetyService

/// What reaches an email's headers and words: the user's name (the alarm's subject) and a
/// contact's name (its greeting) may hold no control character, so no line break can start a
/// header of its own.
@Suite("Safety: control characters", .timeLimit(.minutes(1)))
struct SafetyControlCharacterTests {
    @Test(
        "a profile name or a contact name with a line break or another control character is refused, naming the field"
    )
    func refusedInNames() async throws {
        try await withSafetySystem { system in
            let injected = "Joey\r\nBcc: everyone@example.com"
            let profileFields = await violatedFields {
                _ = try await system.service.upsertProfile(
                    .with {
                        $0.name = injected
                        $0.email = "joey@example.com"
                        $0.thresholdHours = 24
                        $0.timeZone = "Asia/Taipei"
                        $0.preferredLanguage = "en"
                    },
                    callContext("joey")
                )
            }
            #expect(profileFields == ["name"])
            _ = try await system.service.upsertProfile(
                .with {
                    $0.name = "Joey"
                    $0.email = "joey@example.com"
                    $0.thresholdHours = 24
                    $0.timeZone = "Asia/Taipei"
                    $0.preferredLanguage = "en"
                },
                callContext("joey")
            )
            for name in ["Ann\u{85}Lee", "Ann\u{7}", "Ann\u{1B}[31m"] {
                let contactFields = await violatedFields {
                    _ = try await system.service.addContact(
                        .with {
                            $0.email = "ann@example.net"
                            $0.name = name
                        },
                        callContext("joey")
                    )
                }
                #expect(contactFields == ["name"], "\(name.debugDescription)")
            }
            let contacts = try await system.service.listContacts(.init(), callContext("joey"))
            #expect(contacts.contacts.isEmpty, "nothing kept of a refused contact")
        }
    }
}
