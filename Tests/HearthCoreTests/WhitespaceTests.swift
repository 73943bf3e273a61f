import Foundation
import HearthCore
import Testing

@Suite("Trimming whitespace")
struct WhitespaceTests {
    @Test("trims what Foundation's whitespacesAndNewlines trims, for every scalar of the first plane and past it")
    func sameAsFoundation() {
        // Past U+FFFF no scalar is whitespace in either; a sample of them checks that.
        let scalars =
            (0...0xFFFF).compactMap(Unicode.Scalar.init)
            + [0x1_0000, 0x1_F600, 0xE_0020, 0x10_FFFF]
            .compactMap(Unicode.Scalar.init)
        var differing: Set<UInt32> = []
        for scalar in scalars {
            let c = String(scalar)
            for text in [c, "\(c)a\(c)", "a\(c)b", "\(c)\(c) a b \(c)", "\u{20}\(c)"] {
                if text.trimmingWhitespace() != text.trimmingCharacters(in: .whitespacesAndNewlines) {
                    differing.insert(scalar.value)
                }
            }
        }
        #expect(differing.isEmpty, "differs for \(differing.sorted().map { "U+" + String($0, radix: 16) })")
    }

    @Test("ends trimmed, inner whitespace kept; an all-whitespace text is empty")
    func ends() {
        #expect("  Ana Lee \n".trimmingWhitespace() == "Ana Lee")
        #expect("\t\r\n\u{3000}".trimmingWhitespace() == "")
        #expect("".trimmingWhitespace() == "")
        #expect("Ana".trimmingWhitespace() == "Ana")
        #expect(" 李\u{2028}".trimmingWhitespace() == "李")
        // A combining mark after a space stays: trimming is by scalar, as Foundation's is.
        #expect(" \u{301}a".trimmingWhitespace() == "\u{301}a")
    }
}
