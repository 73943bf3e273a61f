import NIOCore
import Testing

@testable import HearthRPC

@Suite("Call deadlines")
struct CallDeadlinesTests {
    static func at(_ millis: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(1_000_000_000 + millis * 1_000_000)) }

    @Test("one timer: armed for the first deadline, not again for later ones, re-armed for an earlier one")
    func arming() {
        var deadlines = CallDeadlines<Int>()
        #expect(deadlines.add(1, deadline: Self.at(100), liveCalls: 1) { _ in false } == Self.at(100))
        #expect(deadlines.add(2, deadline: Self.at(200), liveCalls: 2) { _ in false } == nil)
        #expect(deadlines.add(3, deadline: Self.at(100), liveCalls: 3) { _ in false } == nil)
        #expect(deadlines.add(4, deadline: Self.at(50), liveCalls: 4) { _ in false } == Self.at(50))
        #expect(deadlines.armedAt == Self.at(50))
    }

    @Test("firing hands out what is due, in deadline order, and says when to fire next")
    func firing() {
        var deadlines = CallDeadlines<Int>()
        for (key, millis) in [(1, 300), (2, 100), (3, 200), (4, 100), (5, 400)] {
            _ = deadlines.add(key, deadline: Self.at(Int64(millis)), liveCalls: key) { _ in false }
        }
        #expect(deadlines.fire(now: Self.at(99)) == ([], Self.at(100)))
        #expect(deadlines.fire(now: Self.at(100)) == ([2, 4], Self.at(200)))
        #expect(deadlines.fire(now: Self.at(350)) == ([3, 1], Self.at(400)))
        #expect(deadlines.fire(now: Self.at(400)) == ([5], nil))
        #expect(deadlines.count == 0 && deadlines.armedAt == nil)
        // Empty again: the next deadline arms the timer.
        #expect(deadlines.add(6, deadline: Self.at(500), liveCalls: 1) { _ in false } == Self.at(500))
    }

    @Test("answered calls' entries do not pile up, even behind a call that runs long")
    func endedCallsAreDropped() {
        var deadlines = CallDeadlines<Int>()
        var live: Set<Int> = [0]
        _ = deadlines.add(0, deadline: Self.at(10_000), liveCalls: 1) { !live.contains($0) }
        // 20,000 short calls, each answered before the next starts, all with later deadlines.
        for key in 1...20_000 {
            live.insert(key)
            _ = deadlines.add(key, deadline: Self.at(10_000 + Int64(key)), liveCalls: live.count) { !live.contains($0) }
            // At most twice the calls live when it was added (2), plus 64, plus itself.
            #expect(deadlines.count <= 2 * live.count + 64 + 1)
            live.remove(key)
        }
        // Only the long call is still due when its time comes.
        let (due, next) = deadlines.fire(now: Self.at(200_000))
        #expect(due.filter { live.contains($0) } == [0])
        #expect(next == nil)
    }

    @Test("removeAll forgets every deadline and the timer")
    func removeAll() {
        var deadlines = CallDeadlines<Int>()
        _ = deadlines.add(1, deadline: Self.at(100), liveCalls: 1) { _ in false }
        deadlines.removeAll()
        #expect(deadlines.count == 0 && deadlines.armedAt == nil)
        #expect(deadlines.fire(now: Self.at(1_000)) == ([], nil))
    }
}
