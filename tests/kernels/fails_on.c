/* fails_on — a host kernel that is right for `fail` = 0, crashes (SIGSEGV)
 * for 1 and is off by one for 2: one kernel whose configurations pass and
 * fail, for the serving-runner tests (a runner leaves after its kernel's
 * failure, and the next configuration gets a fresh one). */
#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct st {
    float *out;
    int n, fail;
} st;

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)seed;
    st *s = calloc(1, sizeof *s);
    if (s) {
        s->n = (int)kf_param(p, "n", 1024);
        s->fail = (int)kf_param(p, "fail", 0);
        s->out = calloc((size_t)s->n, sizeof *s->out);
    }
    *state = s;
    if (!s || !s->out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    if (s->fail == 1) {
        volatile int *p = NULL;
        *p = 1;
    }
    for (int i = 0; i < s->n; i++)
        s->out[i] = (float)i + (s->fail == 2 ? 1.0f : 0.0f);
    return 0;
}

static int output(void *state, kf_view *v)
{
    st *s = state;
    v->data = s->out;
    v->count = (size_t)s->n;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    for (int i = 0; i < s->n; i++)
        ref[i] = i;
    return 0;
}

static double bytes(const kf_params *p)
{
    return (double)kf_param(p, "n", 1024) * 4.0;
}

static void teardown(void *state)
{
    st *s = state;
    if (s)
        free(s->out);
    free(s);
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "fails_on",
                            "right, crashing or wrong by its `fail` parameter",
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
