/* flood — a right kernel that writes 16 MiB of zero bytes on its stdout at
 * each setup: the agent keeps 8 KiB of it and the count, its heartbeats
 * and log untouched, and the task passes (docs/reliability.md). */
#include "output_common.h"

static void on_setup(st_t *s)
{
    (void)s;
    static char zeros[1 << 16];
    for (int i = 0; i < 256; i++)
        fwrite(zeros, 1, sizeof zeros, stdout);
    fflush(stdout);
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    compute(state);
    return 0;
}

OUTPUT_KERNEL("flood", "16 MiB of zeros on stdout")
