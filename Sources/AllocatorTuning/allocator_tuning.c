#include "allocator_tuning.h"

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
