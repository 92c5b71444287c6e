/* cc_bomb — a kernel whose compile needs about 2 GiB: a table of 16^5
 * ones, written as macros that expand to it (the compiler holds every
 * element). Contained, its build runner's memory limit (the sweep's
 * memory_limit) ends the compiler with the out-of-memory killer inside
 * the runner's group, and the build fails saying so. Uncontained it
 * compiles, in about a minute. */
#include "contain_common.h"

#define A0 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
#define A1 A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0, A0
#define A2 A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1, A1
#define A3 A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2, A2
#define A4 A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3, A3
#define A5 A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4, A4
const unsigned char cc_bomb_table[] = {A5};

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s, (void)p, (void)err, (void)errlen;
    return cc_bomb_table[0] == 1 ? 0 : -1;
}

CONTAIN_KERNEL("cc_bomb", "a compile that needs 2 GiB")
