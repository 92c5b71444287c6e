/* tolfn — a kernel whose tolerances are a function of its configuration
 * (kf_kernel.h's kf_tolerances, issue 41): its output is off by 1e-3 at
 * every element, and it states atol = 1e-4 for n = 1024 (where that fails)
 * and 1e-2 beyond (where it passes). For kfleet's tolerance tests. */
#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n;
    float *x, *out;
} st;

static void teardown(void *state)
{
    st *s = state;
    if (s) {
        free(s->x);
        free(s->out);
        free(s);
    }
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    st *s = calloc(1, sizeof *s);
    size_t n = (size_t)kf_param(p, "n", 1024);
    if (!s || !(s->x = malloc(n * sizeof(float))) || !(s->out = malloc(n * sizeof(float)))) {
        teardown(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->n = n;
    uint64_t z = seed | 1;
    for (size_t i = 0; i < n; i++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        s->x[i] = (float)(z >> 40) / (float)(1 << 24);
    }
    *state = s;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st *s = state;
    for (size_t i = 0; i < s->n; i++)
        s->out[i] = s->x[i] + 1e-3f;
    return 0;
}

static int output(void *state, kf_view *v)
{
    st *s = state;
    *v = (kf_view){.data = s->out, .count = s->n, .dtype = KF_DTYPE_F32, .location = KF_LOC_HOST};
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st *s = state;
    for (size_t i = 0; i < s->n; i++)
        ref[i] = s->x[i];
    return 0;
}

static double bytes(const kf_params *p)
{
    return 8.0 * (double)kf_param(p, "n", 1024);
}

int kf_tolerances(const kf_params *p, kf_dtype out, kf_tol *t, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (out != KF_DTYPE_F32)
        return -1;
    t->close = 1;
    t->atol = kf_param(p, "n", 1024) <= 1024 ? 1e-4 : 1e-2;
    t->rtol = 0;
    t->tol_abs = 1; /* the element-wise bound decides */
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "tolfn",
                            "tolerances by configuration",
                            1e-6,
                            1e-2,
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
