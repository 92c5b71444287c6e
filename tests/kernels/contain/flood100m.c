/* flood100m — a right kernel that prints 100 MiB of text on its stdout at
 * setup (1,638,400 lines of 64 bytes): the agent keeps 8 KiB and the
 * count, its log and heartbeats untouched, and the task passes. */
#include "contain_common.h"

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s, (void)p, (void)err, (void)errlen;
    for (long i = 0; i < 100L * 1024 * 1024 / 64; i++)
        printf("flood100m line %010ld .....................................\n", i);
    fflush(stdout);
    return 0;
}

CONTAIN_KERNEL("flood100m", "100 MiB of text on stdout")
