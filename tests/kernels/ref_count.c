/* ref_count — an honest kernel whose reference() fails once its process
 * has called it more than `n` times (the task's parameter n): a profile
 * of two input sets (cold, on the host) must compute each set's reference
 * once, before its samples, and re-check against those (issue 32: checks
 * computed once, not per re-check). For test_harness. */
#include "cheat_common.h"

#include <stdio.h>

static unsigned ref_calls;
static int64_t ref_limit;

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    compute(state);
    return 0;
}

static int counted_setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    ref_limit = kf_param(p, "n", 0);
    return setup(state, p, seed, err, errlen);
}

static int counted_reference(void *state, double *ref, char *err, size_t errlen)
{
    if (++ref_calls > ref_limit) {
        snprintf(err, errlen, "reference() called %u times in this process, limit %lld", ref_calls,
                 (long long)ref_limit);
        return -1;
    }
    return reference(state, ref, err, errlen);
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "ref_count",
                            "honest; its reference() fails past n calls of its process",
                            1e-6,
                            1e-6,
                            1,
                            counted_setup,
                            run,
                            output,
                            counted_reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
