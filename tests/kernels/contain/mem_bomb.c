/* mem_bomb — setup allocates and touches 16 MiB at a time. Contained, the
 * runner's memory limit (the sweep's memory_limit) ends it with the
 * out-of-memory killer inside its group: the task fails "the kernel used
 * more than N GiB", at its first attempt. Uncontained it stops at 4 GiB
 * and fails saying it was never stopped. */
#include "contain_common.h"

#include <string.h>

#define CHUNK (16u << 20)

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s, (void)p;
    static char *keep[256];
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        keep[i] = malloc(CHUNK);
        if (!keep[i]) {
            snprintf(err, errlen, "malloc refused after %zu MiB", i * (CHUNK >> 20));
            return -1;
        }
        memset(keep[i], (int)i + 1, CHUNK);
    }
    snprintf(err, errlen, "MEM_BOMB: allocated 4 GiB and was never stopped");
    return -1;
}

CONTAIN_KERNEL("mem_bomb", "allocates until stopped")
