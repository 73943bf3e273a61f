import HearthCore
import HearthRPC
import Testing

/// Control characters in the texts a user names things with (``FieldChecks/trimmed(_:field:characters:maxBytes:allowingLineFeeds:)``):
/// refused at the edges of the C0, DEL and C1 ranges, with their neighbours accepted.
@Suite("Control characters in user texts")
struct ControlCharacterTests {
    static func check(_ text: String, allowingLineFeeds: Bool = false) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(text, field: "name", characters: 1...100, allowingLineFeeds: allowingLineFeeds)
    }

    @Test(
        "C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F) are refused inside a text, each named with its position",
        arguments: [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9F] as [UInt32]
    )
    func refused(_ value: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(value))
        let text = "Ann" + String(Character(scalar)) + "Bcc: someone@example.com"
        guard case .failure(let violation) = Self.check(text) else {
            Issue.record("U+\(String(value, radix: 16)) accepted")
            return
        }
        #expect(violation.field == "name")
        #expect(violation.description.contains("control character"), "\(violation.description)")
        #expect(violation.description.contains("at position 4"), "\(violation.description)")
    }

    @Test(
        "the neighbours of the ranges are ordinary text: space, tilde, no-break space, and letters of any script",
        arguments: ["Ann Lee", "tilde~", "no\u{A0}break", "\u{A1}Hola!", "喬伊", "Zoë 👩‍👩‍👧"]
    )
    func accepted(_ text: String) throws {
        #expect(try Self.check(text).get() == text)
    }

    @Test("white space around a text is trimmed before the check: a trailing newline is no control character inside it")
    func trimmedFirst() throws {
        #expect(try Self.check("\t Ann \r\n").get() == "Ann")
    }

    @Test("a text of several lines keeps its line feeds where allowed, and nothing else")
    func lineFeeds() throws {
        #expect(try Self.check("first line\nsecond line", allowingLineFeeds: true).get() == "first line\nsecond line")
        for other in ["first\r\nsecond", "first\tsecond", "first\u{85}second", "first\u{1B}[2Jsecond"] {
            guard case .failure(let violation) = Self.check(other, allowingLineFeeds: true) else {
                Issue.record("\(other.debugDescription) accepted")
                continue
            }
            #expect(violation.description.contains("but for line feeds"))
        }
        #expect(FieldChecks.firstControl(in: "a\nb") != nil, "refused where not allowed")
    }
}
