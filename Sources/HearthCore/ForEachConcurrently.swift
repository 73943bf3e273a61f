extension Sequence where Element: Sendable {
    /// Runs `body` on the elements in order, at most `limit` at once, each started as an
    /// earlier one ends; returns once all that were started have ended. Once `body` returns
    /// false, no further element is started (those under way finish).
    public func forEachConcurrently(
        atMost limit: Int,
        _ body: @escaping @Sendable (Element) async -> Bool
    ) async {
        precondition(limit > 0, "at least one at a time")
        await withTaskGroup(of: Bool.self) { group in
            var waiting = self.makeIterator()
            var started = 0
            while started < limit, let element = waiting.next() {
                group.addTask { await body(element) }
                started += 1
            }
            var going = true
            while let goOn = await group.next() {
                going = going && goOn
                if going, let element = waiting.next() { group.addTask { await body(element) } }
            }
        }
    }
}
