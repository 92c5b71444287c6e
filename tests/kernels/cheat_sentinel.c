/* cheat_sentinel — memoizes on its output: when the output still holds what
 * it wrote last (a few sentinel elements compared), it skips the work.
 * Validation poisons the output before every run, so it computes there; a
 * profile that poisoned only the runs it re-checks would time the other
 * samples doing nothing. kfleet poisons the output before every timed
 * sample (agent/runner/guard.c), so every sample does the work: its
 * fastest sample must be at least the floor (cheat_common.h). For kfleet's
 * anti-cheat tests. */
#include "cheat_common.h"

#include <string.h>

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    /* "out[0], out[N/2] and out[N-1] are what I computed last time". */
    if (s->calls > 0 && s->out[0] == 2.0f * s->in[0] + 1.0f &&
        s->out[N / 2] == 2.0f * s->in[N / 2] + 1.0f && s->out[N - 1] == 2.0f * s->in[N - 1] + 1.0f)
        return 0;
    s->calls++;
    compute_floor(s);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_sentinel",
                            "skips when its output still holds its last result",
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
