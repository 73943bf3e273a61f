import Foundation
import HearthCore
import HearthTestSupport
import Testing

@testable import HearthRPC

@Suite("Pages of a list")
struct PageRequestTests {
    private struct Item {
        var time: Date
        var id: String
        var bytes = 0
    }

    private func items(_ count: Int, bytes: Int = 0) -> [Item] {
        (0..<count).map {
            Item(time: Date(timeIntervalSince1970: 1_780_000_000 + Double($0)), id: "id-\($0)", bytes: bytes)
        }
    }

    private func violations(size: UInt32 = 0, token: String = "") async -> [String] {
        await violatedFields { _ = try PageRequest(size: size, token: token, defaultSize: 20, maxSize: 100) }
    }

    @Test("page_size: 0 means the default, the maximum passes, one more is refused; both fields are reported")
    func sizeAndToken() async throws {
        #expect(try PageRequest(size: 0, token: "", defaultSize: 20, maxSize: 100).size == 20)
        #expect(try PageRequest(size: 1, token: "", defaultSize: 20, maxSize: 100).limit == 2)
        #expect(try PageRequest(size: 100, token: "", defaultSize: 20, maxSize: 100).size == 100)
        #expect(await self.violations(size: 101) == ["page_size"])
        #expect(await self.violations(token: "not base64!") == ["page_token"])
        #expect(await self.violations(token: Data("12345".utf8).base64EncodedString()) == ["page_token"], "no id")
        #expect(await self.violations(token: Data("12345:".utf8).base64EncodedString()) == ["page_token"], "empty id")
        #expect(await self.violations(token: Data("soon:abc".utf8).base64EncodedString()) == ["page_token"])
        #expect(await self.violations(size: UInt32.max, token: "%") == ["page_size", "page_token"])
        let named = await violatedFields {
            _ = try PageRequest(size: 9, token: "", defaultSize: 5, maxSize: 8, fields: ("n", "after"))
        }
        #expect(named == ["n"])
    }

    @Test("a token names the last item's time (to the millisecond) and id, and reads back")
    func tokenRoundTrip() throws {
        let cursor = PageCursor(time: Date(timeIntervalSince1970: 1_780_000_000.123), id: "a:b:c")
        let page = try PageRequest(size: 0, token: cursor.token, defaultSize: 20, maxSize: 100)
        #expect(page.after == cursor)
    }

    @Test("the next token is given exactly when more items were read than the page holds")
    func nextToken() throws {
        let page = try PageRequest(size: 3, token: "", defaultSize: 20, maxSize: 100)
        let cursor = { (item: Item) in PageCursor(time: item.time, id: item.id) }
        #expect(page.page(of: self.items(0), cursor: cursor).nextToken.isEmpty)
        #expect(page.page(of: self.items(3), cursor: cursor).items.count == 3)
        #expect(page.page(of: self.items(3), cursor: cursor).nextToken.isEmpty)
        let (shown, token) = page.page(of: self.items(4), cursor: cursor)
        #expect(shown.map(\.id) == ["id-0", "id-1", "id-2"])
        #expect(PageCursor(token: token) == cursor(self.items(3)[2]))
    }

    @Test("a byte budget ends a page early, but a page always holds one item")
    func budget() throws {
        let page = try PageRequest(size: 10, token: "", defaultSize: 20, maxSize: 100)
        let cursor = { (item: Item) in PageCursor(time: item.time, id: item.id) }
        let fits = page.page(of: self.items(11, bytes: 100), cursor: cursor, bytes: \.bytes, budget: 1000)
        #expect(fits.items.count == 10 && !fits.nextToken.isEmpty, "1,000 bytes hold exactly ten")
        let early = page.page(of: self.items(11, bytes: 100), cursor: cursor, bytes: \.bytes, budget: 999)
        #expect(early.items.count == 9 && PageCursor(token: early.nextToken)?.id == "id-8")
        let huge = page.page(of: self.items(2, bytes: 5000), cursor: cursor, bytes: \.bytes, budget: 1000)
        #expect(huge.items.count == 1 && PageCursor(token: huge.nextToken)?.id == "id-0")
        let last = page.page(of: self.items(1, bytes: 5000), cursor: cursor, bytes: \.bytes, budget: 1000)
        #expect(last.items.count == 1 && last.nextToken.isEmpty)
    }
}
