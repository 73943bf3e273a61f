import Testing

@testable import HearthMail

/// Which refusals of RCPT TO say the address does not exist: only those bounce a contact.
@Suite("SMTP: unknown mailboxes")
struct UnknownMailboxTests {
    @Test(
        "a bad destination address (5.1.x) or a bare 551 or 553 is an unknown mailbox",
        arguments: [
            (550, "5.1.1 No such user here"), (550, "5.1.10 Recipient address rejected: null MX"),
            (551, "5.1.6 User not local"), (553, "5.1.3 Bad recipient address syntax"), (551, "User not local"),
            (553, "mailbox name not allowed"),
        ]
    )
    func unknown(code: Int, message: String) {
        #expect(SMTPError.isUnknownMailbox(code: code, message: message))
    }

    @Test(
        "a relay's policy, a full mailbox, a bare 550 or a passing failure is not",
        arguments: [
            (550, "5.7.1 Relaying denied"), (554, "5.7.1 Relay access denied"), (530, "5.7.0 Authentication required"),
            (552, "5.2.2 Mailbox full"), (550, "Requested action not taken: mailbox unavailable"),
            (450, "4.1.1 Try again later"), (451, "4.3.0 Local error"), (0, "connection reset"),
            (553, "5.7.1 Sender address rejected"),
        ]
    )
    func notUnknown(code: Int, message: String) {
        #expect(!SMTPError.isUnknownMailbox(code: code, message: message))
    }
}
