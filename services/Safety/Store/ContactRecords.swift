import Crypto
import Foundation
import GRDB
import HearthStore

/// An emergency contact and where they stand in agreeing to be one.
struct ContactRecord: Codable, FetchableRecord, PersistableRecord, Equatable, Sendable {
    static let databaseTableName = "contact"
    var id: String
    var userID: String
    var email: String
    var emailKey: String
    var name: String
    var createdAt: Date
    /// A ``ContactState``.
    var state: String
    var invitedAt: Date?
    var invitationExpiresAt: Date?
    /// Invitations sent to this address for this user, this contact's and earlier ones'.
    var invitationsSent: Int
    var answeredAt: Date?
    var alarmsUntil: Date?

    enum CodingKeys: String, CodingKey {
        case id, email, name, state
        case userID = "user_id"
        case emailKey = "email_key"
        case createdAt = "created_at"
        case invitedAt = "invited_at"
        case invitationExpiresAt = "invitation_expires_at"
        case invitationsSent = "invitations_sent"
        case answeredAt = "answered_at"
        case alarmsUntil = "alarms_until"
    }
}

extension ContactRecord {
    /// The columns queries name, from the coding keys (GRDB's recommended practice).
    enum Columns {
        static let id = Column(CodingKeys.id)
        static let userID = Column(CodingKeys.userID)
    }

    /// Read column by column (GRDB's Decodable path costs several times more on a hot read).
    init(row: Row) throws {
        self.id = try row.decode(String.self, forColumn: "id")
        self.userID = try row.decode(String.self, forColumn: "user_id")
        self.email = try row.decode(String.self, forColumn: "email")
        self.emailKey = try row.decode(String.self, forColumn: "email_key")
        self.name = try row.decode(String.self, forColumn: "name")
        self.createdAt = try row.decode(Date.self, forColumn: "created_at")
        self.state = try row.decode(String.self, forColumn: "state")
        self.invitedAt = try row.decode(Date?.self, forColumn: "invited_at")
        self.invitationExpiresAt = try row.decode(Date?.self, forColumn: "invitation_expires_at")
        self.invitationsSent = try row.decode(Int.self, forColumn: "invitations_sent")
        self.answeredAt = try row.decode(Date?.self, forColumn: "answered_at")
        self.alarmsUntil = try row.decode(Date?.self, forColumn: "alarms_until")
    }

    /// Its agreement, as the rules see it.
    var consent: ContactConsent {
        get {
            ContactConsent(
                state: ContactState(rawValue: self.state) ?? .invited,
                invitedAt: self.invitedAt,
                expiresAt: self.invitationExpiresAt,
                answeredAt: self.answeredAt,
                alarmsUntil: self.alarmsUntil
            )
        }
        set {
            self.state = newValue.state.rawValue
            self.invitedAt = newValue.invitedAt
            self.invitationExpiresAt = newValue.expiresAt
            self.answeredAt = newValue.answeredAt
            self.alarmsUntil = newValue.alarmsUntil
        }
    }

    /// How the user's pushes name them: their name, else their address.
    var label: String { self.name.isEmpty ? self.email : self.name }
}

extension DerivableRequest<ContactRecord> {
    /// One user's contacts.
    func of(user: String) -> Self { self.filter(ContactRecord.Columns.userID == user) }
}

/// The secret of a link in an email to a contact: 256 random bits, base64url. Only its SHA-256
/// is stored, so a copy of the store confirms no one.
struct LinkToken: Sendable, Equatable {
    let text: String

    /// A new, random one.
    static func make() -> LinkToken {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return LinkToken(text: Data(bytes).base64URLEncoded)
    }

    /// One as a link carried it; nil for text that no token could be (43 base64url characters).
    init?(_ text: String) {
        guard text.utf8.count == 43,
            text.utf8.allSatisfy({ Self.alphabet.contains($0) })
        else { return nil }
        self.text = text
    }

    private init(text: String) { self.text = text }

    /// What the store keeps.
    var hash: Data { Data(SHA256.hash(data: Data(self.text.utf8))) }

    private static let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}

extension Data {
    /// Base64 with `-` and `_`, unpadded (RFC 4648 section 5): safe in a URL as it is.
    var base64URLEncoded: String {
        self.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// The tokens of the links an email to a contact carries, made when it is claimed for sending
/// (each attempt its own), and the words of the links' block.
struct ContactLinks: Sendable, Equatable {
    /// An invitation's Confirm and Decline links; nil for other emails.
    var answer: LinkToken?
    var optOut: LinkToken
    var language: String
    /// The user's name: the opt-out link stops every email about them.
    var personName: String
}
