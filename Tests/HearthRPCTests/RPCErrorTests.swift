import Foundation
import SwiftProtobuf
import Testing

@testable import HearthRPC

@Suite("RPC errors on the wire")
struct RPCErrorTests {
    @Test("an error with 100,000 violations, or a huge message, goes out cut to 100 violations and a 4 KiB message")
    func bounded() throws {
        let violations = (0..<100_000).map {
            FieldViolation(field: "actions[\($0)].text", description: String(repeating: "long ", count: 400))
        }
        let status = RPCError.invalidArgument(violations).wireStatus
        #expect(status.violations.count == 100)
        #expect(status.violations[99].field == "actions[99].text")
        #expect(
            status.violations[0].description_p.utf8.count <= 1024 && status.violations[0].description_p.hasSuffix("...")
        )
        #expect(status.message.hasPrefix("invalid actions[0].text, actions[1].text"))
        #expect(status.message.hasSuffix("(99900 more field violations left out)"))
        let bytes: [UInt8] = try status.serializedBytes()
        #expect(bytes.count < 112 * 1024, "\(bytes.count) bytes")

        // Cut at a scalar's edge, never inside one.
        let accented = RPCError(.notFound, String(repeating: "é", count: 5000)).wireStatus.message
        #expect(accented.utf8.count <= 4096 && accented.hasSuffix("...") && !accented.contains("\u{FFFD}"))
        #expect(RPCError(.notFound, "short").wireStatus.message == "short")
    }

    @Test("checked text is bounded in bytes too: one character with a million combining marks is refused")
    func textBytes() throws {
        let zalgo = "a" + String(repeating: "\u{301}", count: 1_000_000)
        #expect(zalgo.count == 1)
        guard case .failure(let violation) = FieldChecks.trimmed(zalgo, field: "title", characters: 1...100) else {
            Issue.record("a 2 MB title of one character passed")
            return
        }
        #expect(
            violation.field == "title" && violation.description.hasPrefix("has 2000001 bytes of UTF-8; at most 6400")
        )
        // 280 of the longest emoji sequences still pass.
        let kiss = "🧑🏻‍❤️‍💋‍🧑🏼"
        let caption = String(repeating: kiss, count: 280)
        #expect(
            caption.count == 280
                && (try? FieldChecks.trimmed(caption, field: "caption", characters: 1...280).get()) == caption
        )
    }

    @Test("an empty id is INVALID_ARGUMENT on its field, not NOT_FOUND; an empty zone is required, not unknown")
    func emptyRequiredFields() {
        let missing = RPCError.notFound("check-in", "")
        #expect(missing.code == .invalidArgument && missing.violations.map(\.field) == ["check_in_id"])
        #expect(RPCError.notFound("task", "t1").code == .notFound)
        guard case .failure(let violation) = FieldChecks.zone("") else {
            Issue.record("an empty zone was taken")
            return
        }
        #expect(violation.description.hasPrefix("is required"))
        guard case .failure(let unknown) = FieldChecks.zone("Mars/Base") else {
            Issue.record("an unknown zone was taken")
            return
        }
        #expect(unknown.description.hasPrefix("'Mars/Base' is not an IANA time zone"))
    }

    @Test("identifiers fit in characters and bytes; text cut to fit keeps whole characters")
    func fitsAndCut() {
        #expect(FieldChecks.fits(String(repeating: "é", count: 128), characters: 128))
        #expect(!FieldChecks.fits(String(repeating: "x", count: 129), characters: 128))
        let heavy = "a" + String(repeating: "\u{301}", count: 4_095)  // one character, 8,191 bytes
        #expect(FieldChecks.fits(heavy, characters: 128), "8,191 bytes: within 128 x 64")
        #expect(!FieldChecks.fits(heavy + "\u{301}\u{301}", characters: 128), "8,195 bytes: one character all the same")

        #expect(FieldChecks.cut("héllo wörld", characters: 5) == "héllo")
        #expect(FieldChecks.cut("short", characters: 512) == "short")
        // Two characters of 40,001 bytes each: the first alone is past 512 x 64 bytes.
        let huge = "a" + String(repeating: "\u{301}", count: 20_000)
        #expect(FieldChecks.cut(huge + "b", characters: 512) == "")
        let cut = FieldChecks.cut(String(repeating: "ab", count: 300) + huge, characters: 512)
        #expect(cut == String(repeating: "ab", count: 256) && cut.utf8.count <= 512 * 64)
        let mixed = FieldChecks.cut(
            String(repeating: "x", count: 100) + heavy + heavy + heavy + heavy + heavy,
            characters: 110
        )
        #expect(mixed == String(repeating: "x", count: 100), "no heavy character fits in what is left")
    }
}
