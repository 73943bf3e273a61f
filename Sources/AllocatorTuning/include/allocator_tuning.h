#ifndef HEARTH_ALLOCATOR_TUNING_H
#define HEARTH_ALLOCATOR_TUNING_H

/// Lets each glibc malloc arena keep up to `bytes` of free memory at its top instead of handing
/// it back to the kernel (mallopt M_TRIM_THRESHOLD). Returns 1 when set, 0 when the C library
/// is not glibc or refused it.
int hearth_keep_free_heap(int bytes);

#endif
