import Testing

@testable import HearthRPC

/// Records each answer of a batcher, so tests read as a sequence of events.
private struct Script {
    var batcher = FlushBatcher()

    mutating func write() -> Bool { self.batcher.wrote() }
    mutating func readEnd() -> Bool { self.batcher.readEnded() }
    mutating func tickEnd() -> Bool { self.batcher.tickEnded() }
    mutating func take() -> Bool { self.batcher.takeUnflushed() }
}

@Suite("Flush batching")
struct FlushBatcherTests {
    @Test("frames written during a read batch flush once, at its end")
    func readBatch() {
        var script = Script()
        script.batcher.readStarted()
        let answers = [script.write(), script.write(), script.readEnd(), script.readEnd()]
        #expect(answers == [false, false, true, false])
    }

    @Test("frames written outside a read batch schedule one end-of-tick flush")
    func outsideReadBatch() {
        var script = Script()
        let answers = [script.write(), script.write(), script.tickEnd(), script.write()]
        // The first write schedules, the second shares it, the tick flushes, a new tick schedules again.
        #expect(answers == [true, false, true, true])
    }

    @Test("a read batch ending first flushes what the scheduled tick would have")
    func readEndsBeforeTick() {
        var script = Script()
        let scheduled = script.write()
        script.batcher.readStarted()
        let answers = [scheduled, script.write(), script.readEnd(), script.tickEnd()]
        #expect(answers == [true, false, true, false])
    }

    @Test("an explicit flush takes what is pending")
    func takeUnflushed() {
        var script = Script()
        let answers = [script.take(), script.write(), script.take(), script.take()]
        #expect(answers == [false, true, true, false])
    }
}
