/* matmul — blocked (tiled) fp32 matrix product C = A * B on the host.
 *
 * Compute bound at these sizes: 2n^3 FLOPs over 3n^2 floats. The tiling
 * (param `block`) keeps a block x block tile of B hot in cache while rows of
 * A stream past it; sweeping `block` shows the cache effect. The reference
 * is the naive triple loop in double.
 * Params: n (square size, default 256), block (tile edge, default 32). */
#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n, bs;
    float *a, *b, *c;
} mm_state;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float urand(uint64_t *x)
{
    return (float)((double)(splitmix(x) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    int64_t n = kf_param(p, "n", 256), bs = kf_param(p, "block", 32);
    if (n <= 0 || n > 8192) {
        snprintf(err, errlen, "matmul: n must be in 1..8192, got %lld", (long long)n);
        return -1;
    }
    if (bs <= 0 || bs > n) {
        snprintf(err, errlen, "matmul: block must be in 1..n (%lld), got %lld", (long long)n,
                 (long long)bs);
        return -1;
    }
    mm_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "matmul: out of memory");
        return -1;
    }
    st->n = (size_t)n;
    st->bs = (size_t)bs;
    size_t nn = st->n * st->n;
    st->a = malloc(nn * sizeof(float));
    st->b = malloc(nn * sizeof(float));
    st->c = malloc(nn * sizeof(float));
    if (!st->a || !st->b || !st->c) {
        free(st->a);
        free(st->b);
        free(st->c);
        free(st);
        snprintf(err, errlen, "matmul: cannot allocate 3 x %lld^2 floats", (long long)n);
        return -1;
    }
    uint64_t x = seed;
    for (size_t i = 0; i < nn; i++) {
        st->a[i] = urand(&x);
        st->b[i] = urand(&x);
    }
    *state = st;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    mm_state *st = state;
    const size_t n = st->n, bs = st->bs;
    float *restrict c = st->c;
    const float *restrict a = st->a, *restrict b = st->b;
    for (size_t i = 0; i < n * n; i++)
        c[i] = 0.0f;
    for (size_t kk = 0; kk < n; kk += bs) {
        size_t ke = kk + bs < n ? kk + bs : n;
        for (size_t jj = 0; jj < n; jj += bs) {
            size_t je = jj + bs < n ? jj + bs : n;
            for (size_t i = 0; i < n; i++) {
                for (size_t k = kk; k < ke; k++) {
                    const float aik = a[i * n + k];
                    for (size_t j = jj; j < je; j++)
                        c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
    }
    return 0;
}

static int output(void *state, kf_view *out)
{
    mm_state *st = state;
    out->data = st->c;
    out->count = st->n * st->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    mm_state *st = state;
    const size_t n = st->n;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t k = 0; k < n; k++)
                s += (double)st->a[i * n + k] * (double)st->b[k * n + j];
            ref[i * n + j] = s;
        }
    return 0;
}

static double bytes(const kf_params *p)
{
    double n = (double)kf_param(p, "n", 256);
    return 3.0 * n * n * sizeof(float);
}

static double flops(const kf_params *p)
{
    double n = (double)kf_param(p, "n", 256);
    return 2.0 * n * n * n;
}

static void teardown(void *state)
{
    mm_state *st = state;
    if (!st)
        return;
    free(st->a);
    free(st->b);
    free(st->c);
    free(st);
}

static const kf_kernel k = {
    .abi_version = KF_KERNEL_ABI_VERSION,
    .name = "matmul",
    .description = "blocked fp32 matmul C = A*B, host",
    /* An fp32 dot product of n terms in [-1,1) has error ~ n * 2^-24 * sqrt(n)
     * in the worst case; for n <= 8192 that is < 6e-3 absolute, and the
     * relative L2 error stays near 1e-6. */
    .tol_abs = 1e-2,
    .tol_rel = 1e-5,
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
