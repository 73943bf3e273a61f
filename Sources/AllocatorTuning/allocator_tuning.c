#include "allocator_tuning.h"

#include <stdlib.h>  // defines __GLIBC__ when the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int hearth_tune_allocator(int keep_free_bytes, int mmap_threshold_bytes) {
#if defined(__GLIBC__)
    return mallopt(M_TRIM_THRESHOLD, keep_free_bytes) == 1 && mallopt(M_MMAP_THRESHOLD, mmap_threshold_bytes) == 1;
#else
    (void)keep_free_bytes;
    (void)mmap_threshold_bytes;
    return 0;
#endif
}
