import Testing

@testable import HearthCore

@Suite("Masked addresses")
struct MaskedAddressesTests {
    @Test("an address shows its first character and its domain")
    func masked() {
        #expect(MaskedAddress.mask("mei.chen@example.com") == "m***@example.com")
        #expect(MaskedAddress.mask("k@example.com") == "k***@example.com")
        #expect(MaskedAddress.mask("not an address") == "***")
        #expect(MaskedAddress.mask("@example.com") == "***")
    }

    @Test("every address in a text is masked, whatever characters its local part has, the rest kept")
    func maskedInText() {
        #expect(
            "550 5.1.1 <zebulon.haversham@example.net>: Recipient address rejected".maskingEmailAddresses
                == "550 5.1.1 <z***@example.net>: Recipient address rejected"
        )
        #expect(
            "to a@x.org and O'Brien+tag@mail.example.ie".maskingEmailAddresses
                == "to a***@x.org and O***@mail.example.ie"
        )
        #expect("first/last{x}~y@ex.com said".maskingEmailAddresses == "f***@ex.com said")
        #expect("no address here".maskingEmailAddresses == "no address here")
    }
}
