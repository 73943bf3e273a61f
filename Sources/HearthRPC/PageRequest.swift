public import HearthCore
public import SwiftProtobuf

/// Which page of a list a call asks for: its `page_size` and `page_token`, checked. A store
/// reads `size + 1` items after `after`; ``page(of:cursor:)`` makes the answer of them.
public struct PageRequest: Sendable, Equatable {
    /// Items in the page.
    public var size: Int
    /// The last item of the page before; nil for the first page.
    public var after: PageCursor?

    /// Checks `size` (0 means `defaultSize`, at most `maxSize`) and `token` (empty, or one this
    /// service issued), reporting both at once.
    /// - Parameters:
    ///   - fields: the request's names for the two.
    ///   - other: the request's other fields' violations, reported first, with these.
    /// - Throws: ``RPCError`` INVALID_ARGUMENT naming the field(s) at fault.
    public init(
        size: UInt32,
        token: String,
        defaultSize: Int,
        maxSize: Int,
        fields: (size: String, token: String) = ("page_size", "page_token"),
        alongWith other: [FieldViolation] = []
    ) throws {
        precondition(1 <= defaultSize && defaultSize <= maxSize, "a page holds 1 to maxSize items")
        var violations = other
        if size > maxSize {
            violations.append(
                FieldViolation(field: fields.size, description: "must be at most \(maxSize) (has \(size))")
            )
        }
        var after: PageCursor?
        if !token.isEmpty {
            after = PageCursor(token: token)
            if after == nil {
                violations.append(
                    FieldViolation(field: fields.token, description: "is not a page token this service issued")
                )
            }
        }
        guard violations.isEmpty else { throw RPCError.invalidArgument(violations) }
        self.size = size == 0 ? defaultSize : Int(size)
        self.after = after
    }

    /// How many items to read: one more than the page holds tells whether another follows.
    public var limit: Int { self.size + 1 }

    /// The page out of the (up to ``limit``) items read, and the token of the next page, empty
    /// when this is the last.
    public func page<Item>(of items: [Item], cursor: (Item) -> PageCursor) -> (
        items: ArraySlice<Item>, nextToken: String
    ) {
        self.page(of: items, cursor: cursor, bytes: { _ in 0 }, budget: .max)
    }

    /// ``page(of:cursor:)`` for items whose size could outgrow a frame: the page ends early once
    /// its items' `bytes` would pass `budget` (it always holds one, so paging moves on).
    public func page<Item>(
        of items: [Item],
        cursor: (Item) -> PageCursor,
        bytes: (Item) -> Int,
        budget: Int
    ) -> (items: ArraySlice<Item>, nextToken: String) {
        var end = 0
        var total = 0
        while end < min(items.count, self.size) {
            total += bytes(items[end])
            if end > 0, total > budget { break }
            end += 1
        }
        let page = items[..<end]
        guard end < items.count, let last = page.last else { return (page, "") }
        return (page, cursor(last).token)
    }
}

extension SwiftProtobuf.Message {
    /// Its size on the wire in bytes (found by encoding it), for a page that must fit a frame.
    public var encodedSize: Int { (try? self.serializedBytes() as [UInt8])?.count ?? 0 }
}
