import Testing

@testable import HearthRPC

/// Each test drives a batcher through a sequence of events and checks what it answered.
@Suite("Flush batching")
struct FlushBatcherTests {
    @Test("frames written during a read batch flush once, at its end")
    func readBatch() {
        var batcher = FlushBatcher()
        batcher.readStarted()
        let writes = [batcher.wrote(), batcher.wrote()]
        let ends = [batcher.readEnded(), batcher.readEnded()]
        #expect(writes == [.none, .none])
        #expect(ends == [true, false])
    }

    @Test("frames written outside a read batch schedule one end-of-tick flush")
    func outsideReadBatch() {
        var batcher = FlushBatcher()
        // The first write schedules, the second shares it, the tick flushes, a new tick schedules again.
        let writes = [batcher.wrote(), batcher.wrote()]
        let tickFlushes = batcher.tickEnded()
        let nextWrite = batcher.wrote()
        #expect(writes == [.scheduleTickEnd, .none])
        #expect(tickFlushes)
        #expect(nextWrite == .scheduleTickEnd)
    }

    @Test("a read batch ending first flushes what the scheduled tick would have")
    func readEndsBeforeTick() {
        var batcher = FlushBatcher()
        let first = batcher.wrote()
        batcher.readStarted()
        let second = batcher.wrote()
        let readFlushes = batcher.readEnded()
        let tickFlushes = batcher.tickEnded()
        #expect([first, second] == [.scheduleTickEnd, .none])
        #expect(readFlushes && !tickFlushes)
    }

    @Test("an explicit flush takes what is pending")
    func takeUnflushed() {
        var batcher = FlushBatcher()
        let before = batcher.takeUnflushed()
        _ = batcher.wrote()
        let takes = [batcher.takeUnflushed(), batcher.takeUnflushed()]
        #expect(!before)
        #expect(takes == [true, false])
    }

    @Test("a long read batch is flushed every flushEvery frames, and its rest at its end")
    func longBatch() {
        var batcher = FlushBatcher(flushEvery: 3)
        batcher.readStarted()
        let writes = (1...7).map { _ in batcher.wrote() }
        let endFlushes = batcher.readEnded()
        let left = batcher.takeUnflushed()
        #expect(writes == [.none, .none, .flush, .none, .none, .flush, .none])
        #expect(endFlushes && !left)
    }

    @Test("a flush inside a tick leaves the scheduled end-of-tick flush to the frames after it")
    func flushInsideTick() {
        var batcher = FlushBatcher(flushEvery: 2)
        let writes = [batcher.wrote(), batcher.wrote(), batcher.wrote()]
        let ticks = [batcher.tickEnded(), batcher.tickEnded()]
        #expect(writes == [.scheduleTickEnd, .flush, .none])
        #expect(ticks == [true, false])
    }
}
