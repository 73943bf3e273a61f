import HearthCore
import Testing

@Suite("Allocator tuning")
struct AllocatorTuningTests {
    @Test("on glibc the kept-free heap setting takes (it once compiled to nothing and did not)")
    func settingTakes() {
        #if canImport(Glibc)
            #expect(MemoryTuning.apply())
        #else
            #expect(!MemoryTuning.apply())
        #endif
    }
}
