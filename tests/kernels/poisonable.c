/* poisonable — a right kernel, unless compiled with -DKF_POISON: then every
 * element is off by 1. tests/integration/test_shared_trust.sh gives one
 * agent a compiler that adds the define (a poisoned build) and checks that
 * no other agent runs that build unless the operator trusts its builder. */
#include "kf_kernel.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024
static float out[N];

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)p;
    (void)seed;
    (void)err;
    (void)errlen;
    *state = out;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    for (int i = 0; i < N; i++)
#ifdef KF_POISON
        out[i] = (float)i + 1.0f;
#else
        out[i] = (float)i;
#endif
    return 0;
}

static int output(void *state, kf_view *v)
{
    v->data = state;
    v->count = N;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    for (int i = 0; i < N; i++)
        ref[i] = i;
    return 0;
}

static double bytes(const kf_params *p)
{
    (void)p;
    return N * 4.0;
}

static void teardown(void *state)
{
    (void)state;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "poisonable",
                            "right unless built with -DKF_POISON",
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
