/* cheat_side_stream — a triad a = b + 3c over n floats launched on a
 * non-blocking stream of its own when side = 1 (on stream 0 when 0), as a
 * reward-hacked kernel does to leave the timed stream: its events would
 * bracket nothing. kfleet's profile must time it until the device is idle
 * (the row's median close to the side = 0 row's, flagged outside-stream).
 * For kfleet's anti-cheat tests. Params: n, side. */
#include "kf_cuda.cuh"

#include <stdlib.h>

typedef struct {
    size_t n;
    int side;
    cudaStream_t stream;
    float *a, *b, *c;
} st_t;

__global__ static void fill(float *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = kf_rand_pm1(seed, i);
}

__global__ static void triad(float *a, const float *b, const float *c, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i] + 3.f * c[i];
}

static void teardown(void *state)
{
    st_t *s = (st_t *)state;
    if (!s)
        return;
    if (s->stream)
        cudaStreamDestroy(s->stream);
    cudaFree(s->a);
    cudaFree(s->b);
    cudaFree(s->c);
    free(s);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    st_t *s = (st_t *)calloc(1, sizeof *s);
    *state = s;
    if (!s) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    s->n = (size_t)kf_param(p, "n", 64 << 20);
    s->side = (int)kf_param(p, "side", 1);
    if (s->side)
        KF_CU(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    KF_CU(cudaMalloc((void **)&s->a, s->n * sizeof(float)));
    KF_CU(cudaMalloc((void **)&s->b, s->n * sizeof(float)));
    KF_CU(cudaMalloc((void **)&s->c, s->n * sizeof(float)));
    fill<<<1024, 256>>>(s->b, s->n, seed);
    fill<<<1024, 256>>>(s->c, s->n, seed + 1);
    KF_CU_LAUNCHED();
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    st_t *s = (st_t *)state;
    triad<<<2048, 256, 0, s->side ? s->stream : 0>>>(s->a, s->b, s->c, s->n);
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *state, kf_view *out)
{
    st_t *s = (st_t *)state;
    out->data = s->a;
    out->count = s->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    st_t *s = (st_t *)state;
    float *b = (float *)malloc(s->n * sizeof *b), *c = (float *)malloc(s->n * sizeof *c);
    if (!b || !c || cudaMemcpy(b, s->b, s->n * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(c, s->c, s->n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(b);
        free(c);
        snprintf(err, errlen, "cannot read the inputs back");
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        ref[i] = (double)b[i] + 3.0 * (double)c[i];
    free(b);
    free(c);
    return 0;
}

/* The reference on the device too (kf_kernel.h), so the side = 1 row is also checked on the
 * GPU: the harness's comparison must see the side stream's output (it waits for the whole
 * context first), and the profile must still time the run until idle. The same doubles as
 * reference(): each operation rounded on its own. */
__global__ static void triad_ref(double *r, const float *b, const float *c, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        r[i] = __dadd_rn((double)b[i], __dmul_rn(3.0, (double)c[i]));
}

extern "C" int kf_reference_device(void *state, double *dref, char *err, size_t errlen)
{
    st_t *s = (st_t *)state;
    triad_ref<<<1024, 256>>>(dref, s->b, s->c, s->n);
    KF_CU_LAUNCHED();
    return 0;
}

static double bytes(const kf_params *p)
{
    return 12.0 * (double)kf_param(p, "n", 64 << 20);
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_side_stream",
                            "a triad on a non-blocking stream of its own",
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

extern "C" const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
