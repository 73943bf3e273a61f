/// What went wrong sending: the server's reply, or the connection.
public struct SMTPError: Error, Sendable, CustomStringConvertible {
    /// The reply code; 0 when the connection failed before an answer.
    public var code: Int
    public var message: String
    /// The connection failed after the message's content went out and before the server
    /// answered it: the server may have taken the message all the same.
    public var mayHaveDelivered = false
    /// The answer to RCPT TO says the address does not exist (``isUnknownMailbox(code:message:)``):
    /// not a refusal of the sender, a policy of the relay, or a full mailbox.
    public var refusedRecipient = false
    /// A 5xx answer: sending the same message again will fail the same way.
    public var isPermanent: Bool { self.code >= 500 }

    public var description: String { self.code == 0 ? self.message : "\(self.code) \(self.message)" }

    /// Whether a reply to RCPT TO says the mailbox does not exist, for good: 550, 551 or 553
    /// with an enhanced status of 5.1.x (RFC 3463: a bad destination address), or 551 or 553
    /// without one. Not a 5.7.x (a relay's policy: not authenticated, relaying denied, a listed
    /// sender), a 530 or a 552 (a full mailbox), nor a bare 550, which servers also use for policy:
    /// behind a misconfigured relay, those would cut every contact off.
    public static func isUnknownMailbox(code: Int, message: String) -> Bool {
        guard [550, 551, 553].contains(code) else { return false }
        let first = message.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
        let parts = first.split(separator: ".")
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else {
            return code != 550
        }
        return parts[0] == "5" && parts[1] == "1"
    }
}
