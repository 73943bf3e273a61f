import AllocatorTuning

/// How a Hearth process's allocator keeps freed memory; every process applies it first thing.
///
/// glibc hands the free memory at the top of an arena back to the kernel (`madvise`) whenever
/// it passes 128 KiB, and takes page faults to get it back on the next burst of allocations. A
/// Hearth process allocates and frees in bursts (a read batch, a group commit), so it paid that
/// round trip over and over: `madvise` and the page faults after it were 16% of the safety
/// writer's time under RecordHeartbeat load (perf). Up to 16 MiB per arena now stays with the
/// process. Setting that stops glibc from raising its mmap threshold as it goes (from 128 KiB),
/// so the threshold is set too: blocks under 4 MiB (a photo upload's buffers) come from the
/// arenas instead of a fresh mapping each time.
public enum MemoryTuning {
    public static let keptFreeBytes: Int32 = 16 << 20
    public static let mmapThresholdBytes: Int32 = 4 << 20

    /// Applies the settings; false where the C library is not glibc (nothing to tune).
    @discardableResult
    public static func apply() -> Bool {
        hearth_tune_allocator(Self.keptFreeBytes, Self.mmapThresholdBytes) == 1
    }
}
