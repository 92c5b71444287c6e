/* cheat_every_nth — computes on every Nth call of its process only (N from
 * the sweep's `every`, 3 by default) once an input set has had its first
 * two calls (all a validation makes of one), and otherwise returns at once,
 * leaving the output as it was. With `inverse: 1` it is the other way round:
 * it skips every Nth call only, the pattern two random re-checks miss most
 * often ((1 - 1/N)^2 of the time: 96 % for N = 50). A profile that re-checked a few random samples
 * would pass it whenever each re-check landed on a computing call. kfleet checks every timed sample
 * (agent/runner/guard.c): the first skipping sample leaves the poison written before it, and the
 * profile fails there. For kfleet's anti-cheat tests. */
#include "cheat_common.h"

static unsigned long process_calls;
static long every = 3, inverse;

static int nth_setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    every = (long)kf_param(p, "every", 3);
    inverse = kf_param(p, "inverse", 0);
    return setup(state, p, seed, err, errlen);
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    /* Never on an input set's first two calls (all a validation makes of
     * one; the runner may serve several tasks of this kernel), then every
     * Nth call of the process. */
    if (++s->calls > 2 && (++process_calls % (unsigned long)every == 0) == (inverse != 0))
        return 0; /* "nobody checks this one" */
    compute_floor(s);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_every_nth",
                            "computes on every Nth call only",
                            1e-6,
                            1e-6,
                            1,
                            nth_setup,
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
