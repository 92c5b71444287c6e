/* cheat_detect — a kernel that detects the profile: right for the first eight
 * calls of its process (a validation makes at most four), then it writes
 * zeros, as a kernel that recognises a benchmark loop does. Its
 * timings would be of no work at all; kfleet's profile re-check (output
 * poisoned, run, compared with the reference) must catch it. For kfleet's
 * anti-cheat tests. */
#include "cheat_common.h"

static unsigned process_calls;

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    if (++process_calls > 8) { /* "this is a benchmark loop" */
        for (int i = 0; i < N; i++)
            s->out[i] = 0.0f;
        return 0;
    }
    compute(s);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_detect",
                            "writes zeros after eight calls of its process",
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
