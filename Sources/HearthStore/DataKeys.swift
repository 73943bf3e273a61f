import Crypto
public import Foundation
import Synchronization

/// Seals personal data before it is written and opens it once read, with the keys of a
/// ``DataKeyRing`` (ChaChaPoly, an AEAD). A sealed value reads
///
///     0x01 | key id (4 bytes, big-endian) | nonce (12) | ciphertext | tag (16)
///
/// and is bound to where it is stored (`context`: its table, column and row, as the
/// associated data): a sealed value copied to another row or column does not open. The ring
/// can be read again from its file while the store is used (``reload()``), for a rotation.
public final class DataKeys: Sendable {
    /// Where the ring comes from; nil for one given as it is (tests).
    public let file: URL?
    private let ring: Mutex<DataKeyRing>

    public init(ring: DataKeyRing) {
        self.file = nil
        self.ring = Mutex(ring)
    }

    /// Reads the ring in `file`.
    public init(file: URL) throws {
        self.file = file
        self.ring = Mutex(try Self.read(file))
    }

    /// A new random ring, for a store that lives as long as its test.
    public static func random() -> DataKeys { DataKeys(ring: .generate()) }

    public var current: DataKeyRing { self.ring.withLock { $0 } }

    /// Reads the file again and uses its ring from now on, unless `accept` refuses it (a key
    /// still in use is missing). Answers the ring now used.
    @discardableResult
    public func reload(accepting accept: (DataKeyRing) throws -> Void = { _ in }) throws -> DataKeyRing {
        guard let file = self.file else { return self.current }
        let ring = try Self.read(file)
        let current = self.current
        guard ring.index == current.index else {
            throw DataKeyFileInvalid(
                source: file.path,
                line: nil,
                reason: "its index key is not the one in use: the keyed hashes would no longer match"
            )
        }
        // A key id names one key for good: another key under an id in use would open nothing
        // it sealed (two rotations at once could write such a file).
        for key in ring.keys where current.key(key.id).map({ $0.bytes != key.bytes }) ?? false {
            throw DataKeyFileInvalid(
                source: file.path,
                line: nil,
                reason: "its key \(key.id) is not the key \(key.id) in use"
            )
        }
        try accept(ring)
        self.ring.withLock { $0 = ring }
        return ring
    }

    private static func read(_ file: URL) throws -> DataKeyRing {
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw DataKeyFileInvalid(source: file.path, line: nil, reason: "cannot be read: \(error)")
        }
        return try DataKeyRing(parsing: text, source: file.path)
    }

    // MARK: Sealing

    static let version: UInt8 = 1
    static let headerSize = 5

    /// The id of the key values are sealed under now.
    public var sealingKeyID: UInt32 { self.ring.withLock { $0.sealing.id } }

    /// `text` sealed under the sealing key, bound to `context`.
    public func seal(_ text: String, context: String) -> Data {
        let key = self.ring.withLock { $0.sealing }
        // ChaChaPoly only fails for a key or nonce of the wrong size, which these are not.
        let box = Self.withUTF8(text) { text in
            Self.withUTF8(context) { context in
                try! ChaChaPoly.seal(text, using: key.symmetric, authenticating: context)
            }
        }
        var sealed = Data(capacity: Self.headerSize + box.combined.count)
        sealed.append(Self.version)
        withUnsafeBytes(of: key.id.bigEndian) { sealed.append(contentsOf: $0) }
        sealed.append(box.combined)
        return sealed
    }

    /// The text `sealed` holds, if it was sealed for `context` under a key of the ring. An
    /// empty value (text once there, forgotten since) opens as "".
    public func open(_ sealed: Data, context: String) throws(SealedValueUnreadable) -> String {
        if sealed.isEmpty { return "" }
        guard let id = Self.keyID(of: sealed) else { throw .malformed(context: context) }
        guard let key = self.ring.withLock({ $0.key(id) }) ?? self.rereadFile(for: id) else {
            throw .unknownKey(id, context: context)
        }
        do {
            let box = try ChaChaPoly.SealedBox(combined: sealed.dropFirst(Self.headerSize))
            let clear = try Self.withUTF8(context) {
                try ChaChaPoly.open(box, using: key.symmetric, authenticating: $0)
            }
            return String(decoding: clear, as: UTF8.self)
        } catch {
            throw .forged(context: context)
        }
    }

    /// `body` over `text`'s UTF-8 bytes, in place (a native string's), else copied.
    private static func withUTF8<T>(_ text: String, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        var text = text
        return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    /// Key `id` from the file read again, when it has it now: another process reading the same
    /// file (safety's replicas on one database) may have been told of a new key first, and
    /// sealed under it, while this one had not yet (a rotation under way).
    private func rereadFile(for id: UInt32) -> DataKeyRing.Key? {
        guard self.file != nil, (try? self.reload()) != nil else { return nil }
        return self.ring.withLock { $0.key(id) }
    }

    /// The id of the key `sealed` was sealed with; nil for a value that is not sealed.
    public static func keyID(of sealed: Data) -> UInt32? {
        guard sealed.count >= Self.headerSize + 12 + 16 else { return nil }
        return Self.keyID(ofPrefix: sealed)
    }

    /// The key id in the first 5 bytes of a sealed value; nil when they are not a sealed value's.
    public static func keyID(ofPrefix prefix: Data) -> UInt32? {
        guard prefix.count >= Self.headerSize else { return nil }
        // Read in place: slicing the `Data` four times was a fifth of an open.
        return prefix.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> UInt32? in
            guard bytes[0] == Self.version else { return nil }
            return UInt32(bytes[1]) << 24 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 8 | UInt32(bytes[4])
        }
    }

    /// The sealing key's id, as the first 5 bytes of what it seals: rows whose value does not
    /// start with them are to be sealed again (`substr(column, 1, 5) <> ?`).
    public var sealingPrefix: Data {
        var prefix = Data([Self.version])
        withUnsafeBytes(of: self.current.sealing.id.bigEndian) { prefix.append(contentsOf: $0) }
        return prefix
    }

    // MARK: Keyed hashes

    /// HMAC-SHA256 of `text` under the index key, base64url: equal texts, equal hashes, and
    /// nothing learned of the text without the key.
    public func keyedHash(_ text: String) -> String {
        let index = self.ring.withLock { $0.indexKey }
        let code = Self.withUTF8(text) { HMAC<SHA256>.authenticationCode(for: $0, using: index) }
        return Data(code).base64URLEncoded
    }
}

/// A sealed value that does not open.
public enum SealedValueUnreadable: Error, CustomStringConvertible {
    /// Sealed under a key the ring does not have (a key file from before a rotation).
    case unknownKey(UInt32, context: String)
    /// Altered, or moved from where it was sealed.
    case forged(context: String)
    /// Not a sealed value at all.
    case malformed(context: String)

    public var description: String {
        switch self {
        case .unknownKey(let id, let context):
            "\(context) is sealed under data key \(id), which the data key file does not hold"
        case .forged(let context): "\(context) does not open: altered, or moved from where it was sealed"
        case .malformed(let context): "\(context) is not a sealed value"
        }
    }
}
