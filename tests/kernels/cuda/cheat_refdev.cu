/* cheat_refdev — a kernel that uses its device reference (kf_reference_device,
 * kf_kernel.h) to cheat the comparison on the GPU: y = 2x over n floats.
 *
 *   mode 0: honest, the twin row: run() computes y, the reference 2x in double.
 *   mode 1: run() does nothing; kf_reference_device writes the right values into the
 *           harness's reference AND into the output, hoping the check reads them there.
 *   mode 2: as 1, but the output write is left on a non-blocking stream of its own behind a
 *           50 ms spin, hoping it lands after the harness poisoned the output.
 *
 * The harness computes the device reference first and waits for the whole context, then
 * poisons the output and runs: modes 1 and 2 leave the poison and fail validation with
 * every element non-finite, under the device comparison and under KF_COMPARE=host (whose
 * host reference() writes nothing to the output) alike. For kfleet's anti-cheat runs
 * (bench/gpu/devcompare.yaml). Params: n, mode. */
#include "kf_cuda.cuh"

#include <stdlib.h>

typedef struct {
    size_t n;
    int mode;
    cudaStream_t side;
    float *x, *y;
} cr_state;

__global__ static void cr_fill(float *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = kf_rand_pm1(seed, i);
}

__global__ static void cr_twice(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = 2.f * x[i];
}

/* The reference, and with late != 0 first a spin of that many ns, then the output too. */
__global__ static void cr_ref(double *r, float *y, const float *x, size_t n,
                              unsigned long long late)
{
    if (late) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        while (t - t0 < late);
    }
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (r)
            r[i] = 2.0 * (double)x[i];
        if (y)
            y[i] = 2.f * x[i];
    }
}

static void teardown(void *state)
{
    cr_state *s = (cr_state *)state;
    if (!s)
        return;
    if (s->side)
        cudaStreamDestroy(s->side);
    cudaFree(s->x);
    cudaFree(s->y);
    free(s);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    cr_state *s = (cr_state *)calloc(1, sizeof *s);
    *state = s;
    if (!s) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    s->n = (size_t)kf_param(p, "n", 16 << 20);
    s->mode = (int)kf_param(p, "mode", 0);
    if (s->mode < 0 || s->mode > 2) {
        snprintf(err, errlen, "mode=%d: use 0 (honest), 1 or 2", s->mode);
        return -1;
    }
    KF_CU(cudaStreamCreateWithFlags(&s->side, cudaStreamNonBlocking));
    KF_CU(cudaMalloc((void **)&s->x, s->n * sizeof(float)));
    KF_CU(cudaMalloc((void **)&s->y, s->n * sizeof(float)));
    cr_fill<<<1024, 256>>>(s->x, s->n, seed);
    KF_CU_LAUNCHED();
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    cr_state *s = (cr_state *)state;
    if (s->mode == 0) {
        cr_twice<<<1024, 256>>>(s->y, s->x, s->n);
        KF_CU_LAUNCHED();
    }
    return 0;
}

static int output(void *state, kf_view *out)
{
    cr_state *s = (cr_state *)state;
    out->data = s->y;
    out->count = s->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

/* The host reference (KF_COMPARE=host): x read back, nothing written to the output. */
static int reference(void *state, double *ref, char *err, size_t errlen)
{
    cr_state *s = (cr_state *)state;
    float *x = (float *)malloc(s->n * sizeof *x);
    if (!x || cudaMemcpy(x, s->x, s->n * sizeof *x, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(x);
        snprintf(err, errlen, "cannot read x back");
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        ref[i] = 2.0 * (double)x[i];
    free(x);
    return 0;
}

extern "C" int kf_reference_device(void *state, double *dref, char *err, size_t errlen)
{
    cr_state *s = (cr_state *)state;
    cr_ref<<<1024, 256>>>(dref, s->mode == 1 ? s->y : NULL, s->x, s->n, 0);
    KF_CU_LAUNCHED();
    if (s->mode == 2) {
        cr_ref<<<1024, 256, 0, s->side>>>(NULL, s->y, s->x, s->n, 50000000ull);
        KF_CU_LAUNCHED();
    }
    return 0;
}

static double bytes(const kf_params *p)
{
    return 8.0 * (double)kf_param(p, "n", 16 << 20);
}

static double flops(const kf_params *p)
{
    return (double)kf_param(p, "n", 16 << 20);
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_refdev",
                            "y = 2x; modes 1-2 write the output from kf_reference_device",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            flops,
                            teardown};

extern "C" const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
