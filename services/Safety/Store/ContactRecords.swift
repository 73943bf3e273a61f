import Crypto
import Foundation
import GRDB
import HearthStore

/// An emergency contact and where they stand in agreeing to be one. The address and name are
/// sealed at rest; `emailKey` is the address's keyed hash (``DataKeys/addressKey(_:)``).
struct ContactRecord: TableRecord, Equatable, Sendable {
    static let databaseTableName = "contact"
    var id: String
    var userID: String
    var email: SealedText
    var emailKey: String
    var name: SealedText
    var createdAt: Date
    /// A ``ContactState``.
    var state: String
    var invitedAt: Date?
    var invitationExpiresAt: Date?
    /// Invitations sent to this address for this user, this contact's and earlier ones'.
    var invitationsSent: Int
    var answeredAt: Date?
    var alarmsUntil: Date?
}

extension ContactRecord {
    enum Columns {
        static let id = Column("id")
        static let userID = Column("user_id")
    }

    /// The columns reads select, in the order `init(columns:keys:)` takes them.
    static let selection = """
        SELECT id, user_id, email, email_key, name, created_at, state, invited_at, invitation_expires_at,
            invitations_sent, answered_at, alarms_until
        """

    /// A row of ``selection``, on either store; the address and name are opened with `keys`
    /// when asked for: a claim or a switch's pass that needs neither never fails on them.
    init(columns: some StoredColumns, keys: DataKeys) throws {
        self.id = try columns.string(0)
        self.userID = try columns.string(1)
        self.email = try keys.read(columns.bytes(2), .contactEmail, row: self.id)
        self.emailKey = try columns.string(3)
        self.name = try keys.read(columns.bytes(4), .contactName, row: self.id)
        self.createdAt = try columns.date(5)
        self.state = try columns.string(6)
        self.invitedAt = try columns.optionalDate(7)
        self.invitationExpiresAt = try columns.optionalDate(8)
        self.invitationsSent = try columns.int(9)
        self.answeredAt = try columns.optionalDate(10)
        self.alarmsUntil = try columns.optionalDate(11)
    }

    func insert(in db: Database, sealingWith keys: DataKeys) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO contact (id, user_id, email, email_key, name, created_at, state, invited_at,
                    invitation_expires_at, invitations_sent, answered_at, alarms_until)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            binding: self.id,
            self.userID,
            try keys.seal(self.email, .contactEmail, row: self.id),
            self.emailKey,
            try keys.seal(self.name, .contactName, row: self.id),
            self.createdAt.stored,
            self.state,
            self.invitedAt?.stored,
            self.invitationExpiresAt?.stored,
            self.invitationsSent,
            self.answeredAt?.stored,
            self.alarmsUntil?.stored
        )
    }

    /// Saves where the contact stands (its address and name never change).
    func updateConsent(in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE contact SET state = ?, invited_at = ?, invitation_expires_at = ?, invitations_sent = ?,
                    answered_at = ?, alarms_until = ?
                WHERE id = ?
                """
        ).execute(
            binding: self.state,
            self.invitedAt?.stored,
            self.invitationExpiresAt?.stored,
            self.invitationsSent,
            self.answeredAt?.stored,
            self.alarmsUntil?.stored,
            self.id
        )
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

    /// How the user's pushes name them: their name, else their address; "" when neither can
    /// be read (the push then names no one: a damaged value fails no answer of theirs).
    var label: String {
        if let name = try? self.name.open(), !name.isEmpty { return name }
        return (try? self.email.open()) ?? ""
    }
}

/// The secret of a link in an email to a contact: 256 random bits, base64url. Only its SHA-256
/// is stored, so a copy of the store confirms no one.
struct LinkToken: Sendable, Equatable {
    let text: String

    /// A new, random one.
    static func make() -> LinkToken {
        // Eight bytes a draw: a draw is a system call (one a byte was 3% of an alert sender's CPU).
        var generator = SystemRandomNumberGenerator()
        var bytes = Data(capacity: 32)
        for _ in 0..<4 { withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) } }
        return LinkToken(text: bytes.base64URLEncoded)
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

extension ContactLinks {
    /// A link's token to store: what it does, and until when (nil: for good).
    struct NewToken: Sendable {
        let token: LinkToken
        let purpose: LinkPurpose
        let expiresAt: Date?
        /// The contact's id, user and address key.
        let contactID: String
        let userID: String
        let addressKey: String
    }

    /// The links of `alert`, claimed at `now` for an attempt, and the tokens to store for them;
    /// nil for a message that is no email to a contact (or whose contact or user is gone).
    static func mint(for alert: AlertRecord, contact: ContactRecord?, profile: ProfileRecord?, at now: Date)
        -> (links: ContactLinks, tokens: [NewToken])?
    {
        guard alert.channel == .email, !alert.contactID.isEmpty, let contact, let profile else { return nil }
        let asksAnswer = alert.kind == MessageKind.invitation && contact.consent.isAwaitingAnswer(at: now)
        return Self.mint(
            for: alert,
            profile: profile,
            answer: asksAnswer ? .init(until: contact.invitationExpiresAt) : nil,
            contact: (contact.id, contact.userID, contact.emailKey)
        )
    }

    /// The links of a message the switch decided, claimed as it was recorded: never an
    /// invitation, and its contact is the one it names (whose address key it holds).
    static func mint(forDecided alert: AlertRecord, profile: ProfileRecord) -> (
        links: ContactLinks, tokens: [NewToken]
    )? {
        guard alert.channel == .email, !alert.contactID.isEmpty else { return nil }
        return Self.mint(
            for: alert,
            profile: profile,
            answer: nil,
            contact: (alert.contactID, alert.userID, alert.addressKey)
        )
    }

    /// An invitation's answer links, and until when they act (nil: for good).
    private struct AnswerLinks {
        let until: Date?
    }

    private static func mint(
        for alert: AlertRecord,
        profile: ProfileRecord,
        answer: AnswerLinks?,
        contact: (id: String, userID: String, addressKey: String)
    ) -> (links: ContactLinks, tokens: [NewToken]) {
        let token = { (token: LinkToken, purpose: LinkPurpose, expiresAt: Date?) in
            NewToken(
                token: token,
                purpose: purpose,
                expiresAt: expiresAt,
                contactID: contact.id,
                userID: contact.userID,
                addressKey: contact.addressKey
            )
        }
        let optOut = LinkToken.make()
        var tokens = [token(optOut, .optOut, nil)]
        let answerToken = answer.map { answer in
            let made = LinkToken.make()
            tokens.append(token(made, .answer, answer.until))
            return made
        }
        let links = ContactLinks(
            answer: answerToken,
            optOut: optOut,
            language: profile.language,
            // Without the name when it does not open: the links still work.
            personName: profile.spokenName
        )
        return (links, tokens)
    }
}
