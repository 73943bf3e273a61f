import AllocatorTuning
import Testing

@Suite("Allocator tuning")
struct AllocatorTuningTests {
    @Test("on glibc the kept-free heap setting takes (it once compiled to nothing and did not)")
    func settingTakes() {
        #if canImport(Glibc)
            #expect(hearth_keep_free_heap(16 << 20) == 1)
        #else
            #expect(hearth_keep_free_heap(16 << 20) == 0)
        #endif
    }
}
