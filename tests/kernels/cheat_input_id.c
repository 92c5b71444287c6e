/* cheat_input_id — memoizes on its inputs' identity with a single-entry
 * cache: when called on the same input buffer as last time it copies the
 * result it kept (no work, and the output is right even after poisoning).
 * Validation sets up fresh inputs per seed and runs each at most twice;
 * a profile on one input set would time the copy. kfleet rotates every run
 * among K >= 2 input sets (agent/runner/profile.c), so no run sees the
 * inputs of the run before: its fastest sample must be at least the floor
 * (cheat_common.h). For kfleet's anti-cheat tests. */
#include "cheat_common.h"

#include <string.h>

static const float *last_in; /* the single entry: whose result `kept` is */
static float kept[N];

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    if (last_in == s->in && ++s->calls > 2) { /* past validation's two runs */
        memcpy(s->out, kept, sizeof kept);
        return 0;
    }
    compute_floor(s);
    memcpy(kept, s->out, sizeof kept);
    last_in = s->in;
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_input_id",
                            "copies its cached result when its inputs are the last",
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
