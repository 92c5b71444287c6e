/* forger — a kernel that writes a frame header on the runner's message
 * channel (descriptor 4, runner/harness.h) in its first run: kfleet kills
 * the runner, says so, and does not try the task again. */
#include "output_common.h"

#include <unistd.h>

static void on_setup(st_t *s)
{
    (void)s;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st_t *s = state;
    if (s->runs == 0) {
        const unsigned char forged[8] = {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4};
        if (write(4, forged, sizeof forged) < 0)
            return -1;
    }
    compute(s);
    return 0;
}

OUTPUT_KERNEL("forger", "writes on the runner's channel")
