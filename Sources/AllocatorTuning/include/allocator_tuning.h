#ifndef HEARTH_ALLOCATOR_TUNING_H
#define HEARTH_ALLOCATOR_TUNING_H

/// Lets each glibc malloc arena keep up to `keep_free_bytes` of free memory at its top instead
/// of handing it back to the kernel (mallopt M_TRIM_THRESHOLD), and serves blocks below
/// `mmap_threshold_bytes` from the arenas (M_MMAP_THRESHOLD: setting the first stops glibc from
/// raising this one by itself, so it is set as well). Returns 1 when both are set, 0 when the C
/// library is not glibc or refused either.
int hearth_tune_allocator(int keep_free_bytes, int mmap_threshold_bytes);

#endif
