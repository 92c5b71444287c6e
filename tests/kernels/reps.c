/* reps — a correct kernel whose run does its pass REPS times (a flag:
 * -DREPS=N), so one source gives a slow and a fast build of the "same"
 * kernel for kfleet's compare tests. y[i] = a * x[i] + y0[i] over n
 * elements. */
#include "kf_kernel.h"

#include <stdlib.h>

#ifndef REPS
#define REPS 1
#endif

typedef struct st {
    size_t n;
    float *x, *y0, *y;
} st;

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)kf_param(p, "n", 1 << 16);
    s->x = malloc(s->n * sizeof *s->x);
    s->y0 = malloc(s->n * sizeof *s->y0);
    s->y = malloc(s->n * sizeof *s->y);
    if (!s->x || !s->y0 || !s->y)
        return -1;
    uint64_t r = seed * 2654435761u + 1;
    for (size_t i = 0; i < s->n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        s->x[i] = (float)((r >> 40) & 0xFFFF) / 65536.0f;
        s->y0[i] = (float)((r >> 20) & 0xFFFF) / 65536.0f;
    }
    *state = s;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st *s = state;
    for (int k = 0; k < REPS; k++) {
        for (size_t i = 0; i < s->n; i++)
            s->y[i] = 3.0f * s->x[i] + s->y0[i];
        __asm__ volatile("" : : "r"(s->y) : "memory"); /* every pass is done */
    }
    return 0;
}

static int output(void *state, kf_view *v)
{
    st *s = state;
    v->data = s->y;
    v->count = s->n;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st *s = state;
    for (size_t i = 0; i < s->n; i++)
        ref[i] = 3.0 * (double)s->x[i] + (double)s->y0[i];
    return 0;
}

static double bytes(const kf_params *p)
{
    return 12.0 * (double)kf_param(p, "n", 1 << 16);
}

static void teardown(void *state)
{
    st *s = state;
    if (!s)
        return;
    free(s->x);
    free(s->y0);
    free(s->y);
    free(s);
}

static const kf_kernel K = {KF_KERNEL_ABI_VERSION,
                            "reps",
                            "a triad done REPS times",
                            1e-5,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            NULL,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &K;
}
