import ArgumentParser
import HearthMail
import Testing

@testable import HearthCommands

@Suite("Safety's words: the product's name and the app's check-in link")
struct SafetyOptionsTests {
    @Test(
        "--product-name: Hearth unless told, 1 to 40 characters on one line, the sender name too; --check-in-link a URL of at most 200"
    )
    func productName() throws {
        let defaults = try MailOptions.parse([])
        #expect(defaults.productName == "Hearth" && defaults.from.name == "Hearth")
        let forty = String(repeating: "n", count: 40)
        let named = try MailOptions.parse(["--product-name", forty])
        #expect(named.productName == forty && named.from.name == forty)
        #expect(throws: Never.self) { try MailOptions.parse(["--product-name", "家"]) }
        for refused in [String(repeating: "n", count: 41), "", " Nest", "Nest\nGuard", "Nest \"Guard\""] {
            #expect(throws: (any Error).self, "\(refused)") { try MailOptions.parse(["--product-name", refused]) }
        }
        #expect(defaults.checkInLink == "hearth://safety/check-in")
        #expect(try MailOptions.parse(["--check-in-link", "myapp://check-in"]).checkInLink == "myapp://check-in")
        for refused in ["", "check-in", "myapp:", "myapp://" + String(repeating: "c", count: 193)] {
            #expect(throws: (any Error).self, "\(refused)") { try MailOptions.parse(["--check-in-link", refused]) }
        }
        #expect(throws: Never.self) {
            try MailOptions.parse(["--check-in-link", "myapp://" + String(repeating: "c", count: 192)])
        }
    }
}
