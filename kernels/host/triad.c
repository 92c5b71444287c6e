/* triad — the STREAM triad a[i] = b[i] + s * c[i] on the host, in fp32.
 *
 * Memory bound: three arrays of n floats move once per run (two reads, one
 * write), two FLOPs per element. The reference is computed in double from
 * the same inputs, so the only error is fp32 rounding of one fma-like step.
 * Params: n (elements, default 1M). */
#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n;
    float s;
    float *a, *b, *c;
} triad_state;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1): never all zeros, which would hide unwritten outputs. */
static float urand(uint64_t *x)
{
    return (float)((double)(splitmix(x) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    int64_t n = kf_param(p, "n", 1 << 20);
    if (n <= 0 || n > ((int64_t)1 << 32)) {
        snprintf(err, errlen, "triad: n must be in 1..2^32, got %lld", (long long)n);
        return -1;
    }
    triad_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "triad: out of memory");
        return -1;
    }
    st->n = (size_t)n;
    st->a = malloc(st->n * sizeof(float));
    st->b = malloc(st->n * sizeof(float));
    st->c = malloc(st->n * sizeof(float));
    if (!st->a || !st->b || !st->c) {
        free(st->a);
        free(st->b);
        free(st->c);
        free(st);
        snprintf(err, errlen, "triad: cannot allocate 3 x %lld floats", (long long)n);
        return -1;
    }
    uint64_t x = seed;
    st->s = 1.5f + urand(&x) * 0.25f;
    for (size_t i = 0; i < st->n; i++) {
        st->b[i] = urand(&x);
        st->c[i] = urand(&x);
        st->a[i] = 0.0f;
    }
    *state = st;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    triad_state *st = state;
    float *restrict a = st->a;
    const float *restrict b = st->b, *restrict c = st->c;
    const float s = st->s;
    for (size_t i = 0; i < st->n; i++)
        a[i] = b[i] + s * c[i];
    return 0;
}

static int output(void *state, kf_view *out)
{
    triad_state *st = state;
    out->data = st->a;
    out->count = st->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    triad_state *st = state;
    for (size_t i = 0; i < st->n; i++)
        ref[i] = (double)st->b[i] + (double)st->s * (double)st->c[i];
    return 0;
}

static double bytes(const kf_params *p)
{
    return 3.0 * (double)kf_param(p, "n", 1 << 20) * sizeof(float);
}

static double flops(const kf_params *p)
{
    return 2.0 * (double)kf_param(p, "n", 1 << 20);
}

static void teardown(void *state)
{
    triad_state *st = state;
    if (!st)
        return;
    free(st->a);
    free(st->b);
    free(st->c);
    free(st);
}

static const kf_kernel k = {
    .abi_version = KF_KERNEL_ABI_VERSION,
    .name = "triad",
    .description = "STREAM triad a = b + s*c, fp32, host",
    /* One rounding of a product and a sum in fp32: |err| <= ~2 ulp of |a| <= 2. */
    .tol_abs = 1e-6,
    .tol_rel = 1e-6,
    .deterministic = 1,
    .setup = setup,
    .run = run,
    .output = output,
    .reference = reference,
    .bytes = bytes,
    .flops = flops,
    .teardown = teardown,
};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
