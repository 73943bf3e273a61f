import Testing

@testable import HearthMail

@Suite("Masked addresses")
struct MaskedAddressesTests {
    @Test("an address shows its first character and its domain")
    func masked() {
        #expect(MailAddress("mei.chen@example.com").masked == "m***@example.com")
        #expect(MailAddress("k@example.com").masked == "k***@example.com")
        #expect(MailAddress("not an address").masked == "***")
        #expect(MailAddress("@example.com").masked == "***")
    }

    @Test("every address in a text is masked, the rest kept")
    func maskedInText() {
        #expect(
            "550 5.1.1 <zebulon.haversham@example.net>: Recipient address rejected".maskingEmailAddresses
                == "550 5.1.1 <z***@example.net>: Recipient address rejected"
        )
        #expect(
            "to a@x.org and O'Brien+tag@mail.example.ie".maskingEmailAddresses
                == "to a***@x.org and O***@mail.example.ie"
        )
        #expect("no address here".maskingEmailAddresses == "no address here")
    }
}
