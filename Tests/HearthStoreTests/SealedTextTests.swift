import Foundation
import Testing

@testable import HearthStore

@Suite("Sealed text")
struct SealedTextTests {
    @Test("a value read sealed opens when asked for, once; one that does not open fails then, not when read")
    func opensWhenAsked() throws {
        let keys = DataKeys.random()
        let read = SealedText(
            sealed: keys.seal("Mei Chen", context: "profile.name/mei"),
            context: "profile.name/mei",
            keys: keys
        )
        #expect(try read.open() == "Mei Chen")
        #expect(try read.open() == "Mei Chen")
        #expect(try SealedText("Kai").open() == "Kai")
        #expect(try SealedText(sealed: Data(), context: "profile.name/mei", keys: keys).open() == "")

        // Sealed for another row: holding it is harmless, opening it fails.
        let moved = SealedText(
            sealed: keys.seal("Mei Chen", context: "profile.name/kai"),
            context: "profile.name/mei",
            keys: keys
        )
        #expect(throws: SealedValueUnreadable.self) { try moved.open() }
        var forged = keys.seal("Mei Chen", context: "profile.name/mei")
        forged[forged.count - 1] ^= 1
        #expect(throws: SealedValueUnreadable.self) {
            try SealedText(sealed: forged, context: "profile.name/mei", keys: keys).open()
        }
        #expect(throws: SealedValueUnreadable.self) {
            try SealedText(sealed: Data("Mei Chen".utf8), context: "profile.name/mei", keys: keys).open()
        }
    }

    @Test("written back to its place it keeps its bytes; elsewhere, or under a retired key, it is sealed again")
    func sealedForWriting() throws {
        try DataKeysTests.withKeyFile { file, ring in
            try Self.sealedForWriting(keys: DataKeys(file: file), file: file, ring: ring)
        }
    }

    private static func sealedForWriting(keys: DataKeys, file: URL, ring: DataKeyRing) throws {
        let bytes = keys.seal("Mei Chen", context: "profile.name/mei")
        let read = SealedText(sealed: bytes, context: "profile.name/mei", keys: keys)
        #expect(try read.sealed(for: "profile.name/mei", with: keys) == bytes)

        // Another place: the text sealed for it (and it opens there only).
        let elsewhere = try read.sealed(for: "profile.name/kai", with: keys)
        #expect(elsewhere != bytes)
        #expect(try keys.open(elsewhere, context: "profile.name/kai") == "Mei Chen")

        // Another ring object: sealed again with it.
        let other = DataKeys(ring: keys.current)
        #expect(try read.sealed(for: "profile.name/mei", with: other) != bytes)

        // After a rotation the bytes sealed under the old key are not written back as they are.
        try ring.addingKey().text.write(to: file, atomically: true, encoding: .utf8)
        try keys.reload()
        let rotated = try read.sealed(for: "profile.name/mei", with: keys)
        #expect(DataKeys.keyID(of: bytes) == 1 && DataKeys.keyID(of: rotated) == 2)
        #expect(try keys.open(rotated, context: "profile.name/mei") == "Mei Chen")

        // Clear text is sealed at every write; a value that does not open is not written.
        let clear: SealedText = "Kai \("Tanaka")"
        #expect(
            try keys.open(try clear.sealed(for: "profile.name/kai", with: keys), context: "profile.name/kai")
                == "Kai Tanaka"
        )
        let moved = SealedText(sealed: bytes, context: "profile.name/kai", keys: keys)
        #expect(throws: SealedValueUnreadable.self) { try moved.sealed(for: "profile.name/mei", with: keys) }
    }

    @Test("equal when they hold the same bytes or open to the same text; printed without it")
    func equalityAndDescription() {
        let keys = DataKeys.random()
        let read = SealedText(
            sealed: keys.seal("Mei Chen", context: "profile.name/mei"),
            context: "profile.name/mei",
            keys: keys
        )
        #expect(read == "Mei Chen")
        #expect(read != "Mei")
        let unreadable = SealedText(sealed: Data("Mei Chen".utf8), context: "profile.name/mei", keys: keys)
        #expect(unreadable == unreadable)
        #expect(unreadable != SealedText(sealed: Data("Mei Chen!".utf8), context: "profile.name/mei", keys: keys))
        #expect(unreadable != "Mei Chen")
        #expect(!"\(read)".contains("Mei") && !"\(SealedText("Mei Chen"))".contains("Mei"))
    }
}
