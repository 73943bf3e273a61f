#include "allocator_tuning.h"

#include <stdlib.h>  // defines __GLIBC__ when the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int hearth_keep_free_heap(int bytes) {
#if defined(__GLIBC__)
    return mallopt(M_TRIM_THRESHOLD, bytes);
#else
    (void)bytes;
    return 0;
#endif
}
