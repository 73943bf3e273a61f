public import Foundation
import Synchronization

/// A personal value sealed at rest (``DataKeys``), as a record holds it: either text a call
/// gave, sealed when the record is written, or the bytes a read found, opened only when asked
/// for, once. A record read for its other columns (a switch's clock, a status) pays nothing to
/// open it: opening is a ChaChaPoly open and a few copies, about 2 us a value.
public struct SealedText: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private enum Form: Sendable {
        case clear(String)
        case sealed(Data, context: String, keys: DataKeys, opened: Opened)
    }

    /// The text once opened: a record's value read for several messages is opened once.
    private final class Opened: Sendable {
        let text = Mutex<String?>(nil)
    }

    private let form: Form

    /// Text in clear, to be sealed when written.
    public init(_ text: String) {
        self.form = .clear(text)
    }

    public init(stringLiteral text: String) {
        self.form = .clear(text)
    }

    public init(stringInterpolation: DefaultStringInterpolation) {
        self.form = .clear(String(stringInterpolation: stringInterpolation))
    }

    /// A value as read, sealed for `context` (its table, column and row), opened with `keys`.
    public init(sealed: Data, context: String, keys: DataKeys) {
        self.form = .sealed(sealed, context: context, keys: keys, opened: Opened())
    }

    /// The text, opened now when it was read sealed. An empty value opens as "".
    /// - Throws: ``SealedValueUnreadable`` when it does not open.
    public func open() throws(SealedValueUnreadable) -> String {
        switch self.form {
        case .clear(let text):
            return text
        case .sealed(let sealed, let context, let keys, let opened):
            if let text = opened.text.withLock({ $0 }) { return text }
            let text = try keys.open(sealed, context: context)
            opened.text.withLock { $0 = text }
            return text
        }
    }

    /// What to store for `context`: the bytes read there, as they are (unopened: writing back
    /// what was read loses nothing), when they are sealed under `keys`' sealing key (a
    /// rotation's old key is left behind); else the text, sealed now.
    /// - Throws: ``SealedValueUnreadable`` for bytes read elsewhere, or under another key, that
    ///   do not open.
    public func sealed(for context: String, with keys: DataKeys) throws(SealedValueUnreadable) -> Data {
        if case .sealed(let sealed, let readFrom, let readWith, _) = self.form, readFrom == context, readWith === keys,
            DataKeys.keyID(of: sealed) == keys.sealingKeyID
        {
            return sealed
        }
        return keys.seal(try self.open(), context: context)
    }

    /// Equal when both hold the same bytes sealed for the same place (nothing opened), or else
    /// open to the same text; a value that does not open equals only its own bytes.
    public static func == (lhs: SealedText, rhs: SealedText) -> Bool {
        if case .sealed(let left, let leftContext, _, _) = lhs.form,
            case .sealed(let right, let rightContext, _, _) = rhs.form,
            left == right, leftContext == rightContext
        {
            return true
        }
        guard let left = try? lhs.open(), let right = try? rhs.open() else { return false }
        return left == right
    }

    /// Never the text: a record logged or printed does not show what is sealed.
    public var description: String {
        switch self.form {
        case .clear: "SealedText(clear)"
        case .sealed(let sealed, let context, _, _): "SealedText(\(sealed.count) bytes sealed for \(context))"
        }
    }
}
