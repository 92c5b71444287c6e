/* cheat_memoize — a kernel that caches its output: right on every call the
 * validation makes (at most two per input set), then it stops computing on
 * inputs it has seen three times, as a reward-hacked kernel does. Its
 * timings would be of no work at all; kfleet's profile re-check (output
 * poisoned, run, compared with the reference) must catch it. For kfleet's
 * anti-cheat tests. */
#include "cheat_common.h"

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    if (++s->calls > 3)
        return 0; /* "the output is already there" */
    compute(s);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_memoize",
                            "caches its output after three calls",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
