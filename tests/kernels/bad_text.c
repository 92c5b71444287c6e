/* bad_text — a C kernel whose error is not UTF-8 text and carries a C1
 * CSI, a right-to-left override and a DEL (issue 44): every output shows
 * it escaped, the JSON keeps the rest of it
 * (tests/integration/test_inert_text.sh). */
#include "kf_kernel.h"

#include <stdio.h>

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
    snprintf(err, errlen, "KFBYTES \xff not UTF-8 \xc2\x9b"
                          "31m \xe2\x80\xae"
                          "evil\x7f done");
    return -1;
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
        ref[i] = 0;
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

static const kf_kernel k = {KF_KERNEL_ABI_VERSION, "bad_text", "an error that is not UTF-8", 1e-6,
                            1e-6, 1, setup, run, output, reference, bytes, bytes, teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
