import Foundation
import Testing

@testable import HearthStore

@Suite("Data keys")
struct DataKeysTests {
    @Test("a sealed value opens to its text for the context it was sealed for, and for no other")
    func sealAndOpen() throws {
        let keys = DataKeys.random()
        let sealed = keys.seal("Mei Chen", context: "profile.name/mei")
        #expect(try keys.open(sealed, context: "profile.name/mei") == "Mei Chen")
        #expect(!sealed.contains("Mei".utf8), "the text is not in it")
        #expect(DataKeys.keyID(of: sealed) == 1)
        #expect(throws: SealedValueUnreadable.self) { try keys.open(sealed, context: "profile.name/kai") }
        #expect(throws: SealedValueUnreadable.self) { try keys.open(sealed, context: "profile.email/mei") }
        // Two seals of one text differ (a nonce each), and both open.
        let again = keys.seal("Mei Chen", context: "profile.name/mei")
        #expect(again != sealed)
        #expect(try keys.open(again, context: "profile.name/mei") == "Mei Chen")
        // Empty: a value emptied since it was sealed.
        #expect(try keys.open(Data(), context: "alert.body/a") == "")
    }

    @Test("base64url: RFC 4648's alphabet unpadded, and back from it padded or not")
    func base64URL() {
        // The two bytes whose base64 holds "+" and "/" (RFC 4648 section 10's alphabet).
        #expect(Data([0xFB, 0xFF]).base64URLEncoded == "-_8")
        #expect(Data("f".utf8).base64URLEncoded == "Zg")
        #expect(Data("foob".utf8).base64URLEncoded == "Zm9vYg")
        #expect(Data().base64URLEncoded == "")
        var generator = SystemRandomNumberGenerator()
        for count in 0..<70 {
            let bytes = Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            let text = bytes.base64URLEncoded
            #expect(text.utf8.allSatisfy { !"+/=".utf8.contains($0) })
            #expect(text.utf8.count == (count * 8 + 5) / 6)
            #expect(Data(base64URLEncoded: text) == bytes)
            #expect(Data(base64URLEncoded: bytes.base64EncodedString()) == bytes)
        }
    }

    @Test("an altered value, a value under an unknown key, and text that is not sealed are refused")
    func refusals() throws {
        let keys = DataKeys.random()
        var sealed = keys.seal("kai@example.com", context: "contact.email/c1")
        sealed[sealed.endIndex - 1] ^= 1
        #expect {
            try keys.open(sealed, context: "contact.email/c1")
        } throws: { error in
            if case .forged = error as? SealedValueUnreadable { return true }
            return false
        }
        let other = DataKeys(ring: keys.current.addingKey().retiringOldKeys())
        let fromKey1 = keys.seal("kai@example.com", context: "contact.email/c1")
        #expect {
            try other.open(fromKey1, context: "contact.email/c1")
        } throws: { error in
            if case .unknownKey(1, _) = error as? SealedValueUnreadable { return true }
            return false
        }
        #expect {
            try keys.open(Data("kai@example.com".utf8), context: "contact.email/c1")
        } throws: { error in
            if case .malformed = error as? SealedValueUnreadable { return true }
            return false
        }
    }

    @Test("a ring with a new key seals with it and still opens what the old key sealed")
    func addedKey() throws {
        let keys = DataKeys.random()
        let old = keys.seal("Lin", context: "contact.name/c2")
        let rotated = DataKeys(ring: keys.current.addingKey())
        let new = rotated.seal("Lin", context: "contact.name/c2")
        #expect(DataKeys.keyID(of: new) == 2)
        #expect(new.prefix(5) == rotated.sealingPrefix)
        #expect(old.prefix(5) != rotated.sealingPrefix)
        #expect(try rotated.open(old, context: "contact.name/c2") == "Lin")
        // The index key stays: the keyed hashes are the same.
        #expect(rotated.keyedHash("kai@example.com") == keys.keyedHash("kai@example.com"))
        #expect(DataKeys.random().keyedHash("kai@example.com") != keys.keyedHash("kai@example.com"))
        #expect(!keys.keyedHash("kai@example.com").contains("kai"))
    }

    @Test("a key file reads back as it was written")
    func fileRoundTrip() throws {
        let ring = DataKeyRing.generate().addingKey().addingKey()
        let read = try DataKeyRing(parsing: ring.text, source: "data.key")
        #expect(read == ring)
        #expect(read.ids == [1, 2, 3] && read.sealing.id == 3)
        #expect(read.retiringOldKeys().ids == [3])
    }

    @Test(
        "a key file that cannot be used says which line and why",
        arguments: [
            ("key 1 \(String(repeating: "A", count: 43))\n", nil, "no index key"),
            ("index \(String(repeating: "A", count: 43))\n", nil, "no key"),
            // 31 bytes: one short.
            ("index \(String(repeating: "A", count: 42))\nkey 1 \(String(repeating: "A", count: 43))\n", 1, "index"),
            ("index \(String(repeating: "A", count: 43))\nkey 0 \(String(repeating: "A", count: 43))\n", 2, "from 1"),
            (
                "index \(String(repeating: "A", count: 43))\nkey 1 \(String(repeating: "A", count: 43))\n"
                    + "key 1 \(String(repeating: "B", count: 43))\n", 3, "twice"
            ),
            ("index \(String(repeating: "A", count: 43))\nsecret 1 x\n", 2, "expected"),
        ] as [(String, Int?, String)]
    )
    func invalidFile(text: String, line: Int?, reason: String) {
        #expect {
            _ = try DataKeyRing(parsing: text, source: "data.key")
        } throws: { error in
            guard let invalid = error as? DataKeyFileInvalid else { return false }
            return invalid.line == line && invalid.reason.contains(reason) && "\(invalid)".hasPrefix("data.key")
        }
    }

    @Test(
        "a value sealed under a key this process has not read yet opens once the file has it; a forged key id still fails"
    )
    func unknownKeyRereadsTheFile() throws {
        try Self.withKeyFile { file, first in
            // Two processes on one file; the other is told of the new key first and seals with it.
            let mine = try DataKeys(file: file)
            try first.addingKey().text.write(to: file, atomically: true, encoding: .utf8)
            let theirs = try DataKeys(file: file)
            let sealed = theirs.seal("Mei", context: "profile.name:mei")
            #expect(DataKeys.keyID(of: sealed) == 2)
            #expect(try mine.open(sealed, context: "profile.name:mei") == "Mei")
            #expect(mine.current.sealing.id == 2, "it seals with the file's key from then on")
            var forged = sealed
            forged[forged.startIndex + 4] = 9
            #expect(throws: SealedValueUnreadable.self) { try mine.open(forged, context: "profile.name:mei") }
        }
    }

    @Test("a reload takes the file's new ring, unless the check refuses it or its index key changed")
    func reload() throws {
        try Self.withKeyFile { file, first in
            let keys = try DataKeys(file: file)
            try first.addingKey().text.write(to: file, atomically: true, encoding: .utf8)
            struct Refused: Error {}
            #expect(throws: Refused.self) { try keys.reload { _ in throw Refused() } }
            #expect(keys.current == first, "a refused ring is not used")
            #expect(try keys.reload().ids == [1, 2])
            #expect(keys.current.sealing.id == 2)
            try DataKeyRing.generate().addingKey().addingKey().text.write(to: file, atomically: true, encoding: .utf8)
            #expect(throws: DataKeyFileInvalid.self) { try keys.reload() }
            #expect(keys.current.ids == [1, 2])
            // The same index key, but another key under id 2 (two rotations at once could write it).
            let stranger = DataKeyRing.Key(id: 2, bytes: DataKeyRing.generate().sealing.bytes)
            let other = DataKeyRing(index: first.index, keys: [first.keys[0], stranger])
            try other.text.write(to: file, atomically: true, encoding: .utf8)
            #expect {
                try keys.reload()
            } throws: { error in
                (error as? DataKeyFileInvalid)?.reason.contains("key 2 is not the key 2 in use") == true
            }
            #expect(keys.current.sealing.bytes != stranger.bytes)
        }
    }

    /// Runs `body` with a data key file holding a new ring, in a folder deleted afterwards.
    static func withKeyFile(_ body: (URL, DataKeyRing) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-keys-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.key")
        let first = DataKeyRing.generate()
        try first.text.write(to: file, atomically: true, encoding: .utf8)
        try body(file, first)
    }
}
