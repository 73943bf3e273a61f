/// A call's metadata as it came in its REQUEST frame: lower-case keys and their values, in
/// order. A key sent twice reads as its last value, as the wire's `map<string, string>` says.
///
/// It keeps the frame's entries as they were decoded: a handful of keys are searched faster
/// than a dictionary is built, and most calls read two or three of them.
public struct Metadata: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The most entries a call may carry; a REQUEST with more is answered INVALID_ARGUMENT.
    /// Keys are searched one by one, and a key sent many times is kept once per copy (a map
    /// would have folded them), so a frame of empty entries must not become millions of them.
    public static let maxEntries = 64

    let entries: [Hearth_Rpc_V1_Frame.MetadataEntry]

    init(entries: [Hearth_Rpc_V1_Frame.MetadataEntry]) {
        self.entries = entries
    }

    public init(_ dictionary: [String: String] = [:]) {
        self.entries = Self.entries(of: dictionary)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.entries = elements.map(Self.entry)
    }

    /// The value of `key`, nil when the call did not send it.
    public subscript(key: String) -> String? {
        self.entries.last { $0.key == key }?.value
    }

    /// The entries whose keys `keep` accepts, in order, then `extra`: what a proxy sends on.
    public func filtered(keeping keep: (String) -> Bool, adding extra: KeyValuePairs<String, String>) -> Metadata {
        var entries = self.entries.filter { keep($0.key) }
        entries.reserveCapacity(entries.count + extra.count)
        for (key, value) in extra { entries.append(Self.entry(key, value)) }
        return Metadata(entries: entries)
    }

    /// The entries as sent, a key sent twice counted twice.
    public var count: Int { self.entries.count }

    /// Each key once.
    public var keys: Set<String> { Set(self.entries.map(\.key)) }

    public func makeIterator() -> some IteratorProtocol<(key: String, value: String)> {
        self.entries.lazy.map { (key: $0.key, value: $0.value) }.makeIterator()
    }

    /// A dictionary's entries as the frame carries them.
    static func entries(of dictionary: [String: String]) -> [Hearth_Rpc_V1_Frame.MetadataEntry] {
        dictionary.map(Self.entry)
    }

    private static func entry(_ key: String, _ value: String) -> Hearth_Rpc_V1_Frame.MetadataEntry {
        var entry = Hearth_Rpc_V1_Frame.MetadataEntry()
        entry.key = key
        entry.value = value
        return entry
    }
}

/// A frame that only swift-protobuf could read held more metadata entries than any call may
/// carry: refused before they are built.
struct TooManyMetadataEntries: Error, CustomStringConvertible {
    let count: Int

    var description: String { "\(self.count) metadata entries; at most \(Metadata.maxEntries)" }
}
