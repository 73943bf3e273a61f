public import Foundation
public import HearthStore

/// The personal values safety keeps sealed at rest (``DataKeys``): the user's name and email,
/// each contact's address and name, and a message's address and words until it is sent or
/// given up (then they are emptied). Each is sealed for its column and row, so a value moved
/// elsewhere does not open (tools that write a store directly seal with these too). Push tokens, time zones and check-in times are not sealed.
public enum SealedField: String, CaseIterable, Sendable {
    case profileName = "profile.name"
    case profileEmail = "profile.email"
    case contactEmail = "contact.email"
    case contactName = "contact.name"
    case alertAddress = "alert.address"
    case alertSubject = "alert.subject"
    case alertBody = "alert.body"

    var table: String { String(self.rawValue.prefix { $0 != "." }) }
    var column: String { String(self.rawValue.drop { $0 != "." }.dropFirst()) }
    /// The table's key column, whose value names the row.
    var keyColumn: String { self.table == "profile" ? "user_id" : "id" }

    /// What the value of `row` is bound to.
    public func context(row: String) -> String { "\(self.rawValue)/\(row)" }
}

extension DataKeys {
    public func seal(_ text: String, _ field: SealedField, row: String) -> Data {
        self.seal(text, context: field.context(row: row))
    }

    /// What to store of `text` as `field` of `row` (``SealedText/sealed(for:with:)``).
    func seal(_ text: SealedText, _ field: SealedField, row: String) throws -> Data {
        try text.sealed(for: field.context(row: row), with: self)
    }

    /// `sealed`, as `field` of `row` holds it, to be opened when it is used.
    func read(_ sealed: Data, _ field: SealedField, row: String) -> SealedText {
        SealedText(sealed: sealed, context: field.context(row: row), keys: self)
    }

    func open(_ sealed: Data, _ field: SealedField, row: String) throws(SealedValueUnreadable) -> String {
        try self.open(sealed, context: field.context(row: row))
    }

    /// How an email address is compared (``SafetyRules/addressKey(_:)``), as a keyed hash: the
    /// address itself is never stored in clear.
    public func addressKey(_ address: String) -> String {
        self.keyedHash(SafetyRules.addressKey(address))
    }
}
