import HearthCore
import HearthTestSupport
import Synchronization
import Testing

@Suite("Calls answered in batches", .timeLimit(.minutes(1)))
struct BatchedCallsTests {
    struct Odd: Error, Equatable { let value: Int }

    @Test("calls made while a batch runs are answered by the next ones, at most maxBatch a batch, each its own answer")
    func callsMadeMeanwhileShareBatches() async throws {
        let calls = BatchedCalls<Int, Int>(maxBatch: 8)
        let batches = Mutex<[[Int]]>([])
        let firstMayEnd = Mutex(false)
        let body: BatchedCalls<Int, Int>.Body = { inputs in
            batches.withLock { $0.append(inputs) }
            // The first batch runs until every other call waits.
            while inputs == [0], !firstMayEnd.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(1)) }
            return inputs.map { $0 % 2 == 0 ? .success($0 * 10) : .failure(Odd(value: $0)) }
        }
        let first = Task { try await calls.call(0, batchedBy: body) }
        try await eventually("the first batch runs") { batches.withLock { $0.count } == 1 }
        let rest = (1..<20).map { value in
            Task { () -> Result<Int, Odd> in
                do { return .success(try await calls.call(value, batchedBy: body)) } catch {
                    return .failure(error as! Odd)
                }
            }
        }
        try await eventually("the other 19 calls wait") { calls.waiting == 19 }
        firstMayEnd.withLock { $0 = true }
        #expect(try await first.value == 0)
        for (index, task) in rest.enumerated() {
            let value = index + 1
            #expect(await task.value == (value % 2 == 0 ? .success(value * 10) : .failure(Odd(value: value))))
        }
        let sizes = batches.withLock { $0.map(\.count) }
        #expect(sizes == [1, 8, 8, 3], "what waited, in batches of at most 8")
        #expect(batches.withLock { $0.flatMap { $0 } }.sorted() == Array(0..<20), "each call in exactly one batch")
        #expect(calls.waiting == 0)
    }

    @Test("a call after the drain ended starts another")
    func laterCallStartsAgain() async throws {
        let calls = BatchedCalls<Int, Int>(maxBatch: 4)
        let body: BatchedCalls<Int, Int>.Body = { inputs in inputs.map { .success($0 + 1) } }
        #expect(try await calls.call(1, batchedBy: body) == 2)
        #expect(try await calls.call(2, batchedBy: body) == 3)
    }
}
