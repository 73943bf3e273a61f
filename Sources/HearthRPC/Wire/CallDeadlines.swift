import NIOCore

/// The deadlines of one connection's calls, so that the connection keeps one timer instead of
/// one per call.
///
/// A timer per call cost an allocation to schedule, and NIO cancels a timer by searching every
/// timer of its event loop under a lock: with thousands of calls in flight each answer paid for
/// all of them. Here a call's deadline is an entry in a queue ordered by time; an answered
/// call's entry is not searched for but dropped when it reaches the front (or when answered
/// calls' entries outnumber live ones). Calls on a connection mostly share one timeout, so a
/// new deadline nearly always goes at the back.
///
/// A pure state machine: its owner arms the timer where told and asks which keys are due when
/// it fires; `isGone` tells a key whose call has already ended.
struct CallDeadlines<Key: Hashable> {
    private var entries: [(deadline: NIODeadline, key: Key)] = []
    /// Entries before this index are already taken.
    private var head = 0
    /// When the owner's timer fires, if one is armed.
    private(set) var armedAt: NIODeadline?

    /// Entries kept, including those of ended calls not yet dropped.
    var count: Int { self.entries.count - self.head }

    /// Adds `key`'s deadline. Returns the time to arm the timer at, when it must be armed
    /// anew (none is armed, or this deadline comes before the armed one); the owner then
    /// cancels the timer it had, if any.
    mutating func add(
        _ key: Key,
        deadline: NIODeadline,
        liveCalls: Int,
        isGone: (Key) -> Bool
    ) -> NIODeadline? {
        self.dropEnded(liveCalls: liveCalls, isGone: isGone)
        if let last = self.entries.last, self.head < self.entries.count, deadline < last.deadline {
            let index = self.insertionIndex(for: deadline)
            self.entries.insert((deadline, key), at: index)
        } else {
            self.entries.append((deadline, key))
        }
        guard let armed = self.armedAt, armed <= deadline else {
            self.armedAt = deadline
            return deadline
        }
        return nil
    }

    /// The armed timer fired at `now`: the keys whose deadline has passed, oldest first (some
    /// may belong to calls that already ended), and when to arm the timer next, if at all.
    mutating func fire(now: NIODeadline) -> (due: [Key], rearmAt: NIODeadline?) {
        var due: [Key] = []
        while self.head < self.entries.count, self.entries[self.head].deadline <= now {
            due.append(self.entries[self.head].key)
            self.head += 1
        }
        self.reclaimTaken()
        self.armedAt = self.head < self.entries.count ? self.entries[self.head].deadline : nil
        return (due, self.armedAt)
    }

    /// Forgets every deadline; the owner cancels its timer.
    mutating func removeAll() {
        self.entries.removeAll()
        self.head = 0
        self.armedAt = nil
    }

    /// Drops ended calls' entries from the front, and all of them once they outnumber the
    /// live calls (a long call at the front would otherwise keep every later one).
    private mutating func dropEnded(liveCalls: Int, isGone: (Key) -> Bool) {
        while self.head < self.entries.count, isGone(self.entries[self.head].key) {
            self.head += 1
        }
        if self.count > 2 * liveCalls + 64 {
            self.entries = self.entries[self.head...].filter { !isGone($0.key) }
            self.head = 0
        } else {
            self.reclaimTaken()
        }
    }

    /// Gives back the room of taken entries once they are half the array.
    private mutating func reclaimTaken() {
        if self.head == self.entries.count {
            self.entries.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head > 64, self.head * 2 > self.entries.count {
            self.entries.removeFirst(self.head)
            self.head = 0
        }
    }

    /// Where a deadline earlier than the last goes: after every entry not later than it.
    private func insertionIndex(for deadline: NIODeadline) -> Int {
        var low = self.head
        var high = self.entries.count
        while low < high {
            let middle = (low + high) / 2
            if self.entries[middle].deadline <= deadline { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// ``CallDeadlines`` with the one event-loop timer it asks for: what both ends of a
/// connection keep for their calls' deadlines.
struct DeadlineTimer<Key: Hashable> {
    private var deadlines = CallDeadlines<Key>()
    private var timer: Scheduled<Void>?
    /// Where the armed timer calls its owner, kept to arm it again; nil when none is armed.
    private var target: (loop: any EventLoop, fire: @Sendable () -> Void)?

    /// Adds `key`'s deadline, arming the timer (to call `fire` on `loop`, where the owner then
    /// calls ``takeDue()``) when it must fire sooner. `fire` is made only when nothing is armed:
    /// most calls arm nothing.
    mutating func add(
        _ key: Key,
        deadline: NIODeadline,
        liveCalls: Int,
        isGone: (Key) -> Bool,
        loop: any EventLoop,
        fire: @autoclosure () -> @Sendable () -> Void
    ) {
        guard let armAt = self.deadlines.add(key, deadline: deadline, liveCalls: liveCalls, isGone: isGone) else {
            return
        }
        if self.target == nil { self.target = (loop, fire()) }
        self.arm(at: armAt)
    }

    /// The timer fired: the keys now due (some may be of calls that already ended); the
    /// timer is armed again for the next deadline, if any.
    mutating func takeDue() -> [Key] {
        self.timer = nil
        // On the loop's clock, as the deadlines were set (a test's loop keeps its own time).
        let (due, rearmAt) = self.deadlines.fire(now: self.target?.loop.now ?? .now())
        if let rearmAt { self.arm(at: rearmAt) } else { self.target = nil }
        return due
    }

    /// Forgets every deadline and stops the timer (and lets go of its owner).
    mutating func cancelAll() {
        self.deadlines.removeAll()
        self.timer?.cancel()
        self.timer = nil
        self.target = nil
    }

    private mutating func arm(at deadline: NIODeadline) {
        guard let target = self.target else { return }
        self.timer?.cancel()
        self.timer = target.loop.scheduleTask(deadline: deadline, target.fire)
    }
}
