import AllocatorTuning

/// How a Hearth process's allocator keeps freed memory; every process applies it first thing.
///
/// glibc hands the free memory at the top of an arena back to the kernel (`madvise`) whenever
/// it passes 128 KiB, and takes page faults to get it back on the next burst of allocations. A
/// Hearth process allocates and frees in bursts (a read batch, a group commit), so it paid that
/// round trip over and over: `madvise` and the page faults after it were 16% of the safety
/// writer's time under RecordHeartbeat load (perf). Up to 16 MiB per arena now stays with the
/// process.
public enum MemoryTuning {
    public static let keptFreeBytes: Int32 = 16 << 20

    /// Applies the setting; false where the C library is not glibc (nothing to tune).
    @discardableResult
    public static func apply() -> Bool {
        hearth_keep_free_heap(Self.keptFreeBytes) == 1
    }
}
