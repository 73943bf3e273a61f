import Crypto
public import Foundation

/// The keys personal data is sealed with at rest, as a data key file holds them:
///
///     # Hearth data keys. Secret: readable by the service's user only.
///     index 3q2-7w...
///     key 1 9sT0...
///     key 2 Hx4a...
///
/// Every `key` line opens what it sealed; the highest id seals (``sealing``). The `index` key
/// makes the keyed hashes that uniqueness and refusals are checked with (never the address
/// itself); it is not rotated, since a hash cannot be computed again from itself. Keys are 32
/// random bytes, base64url.
public struct DataKeyRing: Sendable, Equatable {
    public struct Key: Sendable, Equatable {
        public let id: UInt32
        public let bytes: Data
        /// The key as ChaChaPoly takes it, made once (each one made is an allocation and a copy).
        let symmetric: SymmetricKey

        public init(id: UInt32, bytes: Data) {
            self.id = id
            self.bytes = bytes
            self.symmetric = SymmetricKey(data: bytes)
        }

        public static func == (lhs: Key, rhs: Key) -> Bool { lhs.id == rhs.id && lhs.bytes == rhs.bytes }
    }

    /// Makes the keyed hashes.
    public let index: Data
    /// The index key as HMAC takes it, made once.
    let indexKey: SymmetricKey
    /// Ascending by id; never empty.
    public let keys: [Key]

    /// The key new seals use: the newest.
    public var sealing: Key { self.keys[self.keys.count - 1] }
    public var ids: [UInt32] { self.keys.map(\.id) }

    init(index: Data, keys: [Key]) {
        precondition(!keys.isEmpty, "a ring has a key")
        self.index = index
        self.indexKey = SymmetricKey(data: index)
        self.keys = keys.sorted { $0.id < $1.id }
    }

    /// A new ring: a fresh index key and key 1.
    public static func generate() -> DataKeyRing {
        DataKeyRing(index: Self.randomKey(), keys: [Key(id: 1, bytes: Self.randomKey())])
    }

    /// This ring with a fresh key after the newest, which seals from now on.
    public func addingKey() -> DataKeyRing {
        DataKeyRing(index: self.index, keys: self.keys + [Key(id: self.sealing.id + 1, bytes: Self.randomKey())])
    }

    /// This ring with the sealing key alone: the others retired.
    public func retiringOldKeys() -> DataKeyRing {
        DataKeyRing(index: self.index, keys: [self.sealing])
    }

    /// The key with `id`, if the ring has it.
    public func key(_ id: UInt32) -> Key? { self.keys.first { $0.id == id } }

    private static func randomKey() -> Data {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
    }

    // MARK: The file

    /// The file's text.
    public var text: String {
        var lines = [
            "# Hearth data keys. Secret: readable by the service's user only. The highest key seals;",
            "# every key opens. `hearth rotate-data-key` adds one and retires the others.",
            "index \(self.index.base64URLEncoded)",
        ]
        lines += self.keys.map { "key \($0.id) \($0.bytes.base64URLEncoded)" }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Reads a file's text; `source` names it in errors.
    public init(parsing text: String, source: String) throws(DataKeyFileInvalid) {
        var index: Data?
        var keys: [Key] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            let invalid = { (why: String) in DataKeyFileInvalid(source: source, line: number + 1, reason: why) }
            switch (fields.first, fields.count) {
            case ("index", 2):
                guard index == nil else { throw invalid("a second index key") }
                guard let bytes = Data(base64URLEncoded: fields[1]), bytes.count == 32 else {
                    throw invalid("the index key is not 32 bytes of base64url")
                }
                index = bytes
            case ("key", 3):
                guard let id = UInt32(fields[1]), id > 0 else { throw invalid("a key id is a number from 1") }
                guard !keys.contains(where: { $0.id == id }) else { throw invalid("key \(id) twice") }
                guard let bytes = Data(base64URLEncoded: fields[2]), bytes.count == 32 else {
                    throw invalid("key \(id) is not 32 bytes of base64url")
                }
                keys.append(Key(id: id, bytes: bytes))
            default:
                throw invalid("expected `index KEY` or `key ID KEY`")
            }
        }
        guard let index else { throw DataKeyFileInvalid(source: source, line: nil, reason: "no index key") }
        guard !keys.isEmpty else { throw DataKeyFileInvalid(source: source, line: nil, reason: "no key") }
        self.init(index: index, keys: keys)
    }
}

/// A data key file that cannot be used as it is.
public struct DataKeyFileInvalid: Error, CustomStringConvertible {
    public var source: String
    public var line: Int?
    public var reason: String

    public var description: String {
        "\(self.source)\(self.line.map { ", line \($0)" } ?? ""): \(self.reason)"
    }
}

extension Data {
    /// Base64 with `-` and `_`, unpadded (RFC 4648 section 5).
    /// Byte by byte over base64's text (Foundation's `replacingOccurrences` three times over was
    /// 2% of an alert sender's CPU).
    public var base64URLEncoded: String {
        let base64 = self.base64EncodedString().utf8
        var url: [UInt8] = []
        url.reserveCapacity(base64.count)
        for byte in base64 {
            switch byte {
            case UInt8(ascii: "+"): url.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): url.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: url.append(byte)
            }
        }
        return String(decoding: url, as: UTF8.self)
    }

    /// Reads base64url, padded or not; nil for anything else.
    public init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.contains("=") == false { base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4) }
        self.init(base64Encoded: base64)
    }
}
