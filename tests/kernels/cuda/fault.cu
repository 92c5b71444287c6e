/* A CUDA kernel that misbehaves on purpose, for the isolation check in
 * bench/gpu/run.sh: param `mode` 0 = a correct scale, 1 = an illegal
 * address (a store through a wild pointer), 2 = __trap(), 3 = a hang (a
 * loop the harness's time limit must end). After each fault the agent and
 * its GPU slot must take the next task. */
#include "kf_kernel.h"
#include "kf_cuda.cuh"

#include <stdlib.h>

typedef struct fstate {
    float *x, *y;
    int *never; /* stays 0: the hang's loop condition */
    size_t n;
    int mode;
    unsigned long long seed;
} fstate;

__global__ void fault_kernel(const float *x, float *y, size_t n, int mode, volatile int *never)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (mode == 1 && i == 0)
        *(volatile float *)(0x10ull) = 1.0f; /* unmapped: cudaErrorIllegalAddress */
    if (mode == 2 && i == 0)
        __trap();
    if (mode == 3)
        while (*never == 0)
            ;
    if (i < n)
        y[i] = x[i] * 2.0f;
}

static int setup(void **out, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    fstate *s = (fstate *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = s;
    s->n = 1 << 20;
    s->mode = (int)kf_param(p, "mode", 0);
    s->seed = seed;
    KF_CU(cudaMalloc(&s->x, s->n * sizeof(float)));
    KF_CU(cudaMalloc(&s->y, s->n * sizeof(float)));
    KF_CU(cudaMalloc(&s->never, sizeof(int)));
    KF_CU(cudaMemset(s->never, 0, sizeof(int)));
    return kf_fill_f32(s->x, s->n, seed, 1.0f, err, errlen);
}

static int run(void *st, char *err, size_t errlen)
{
    fstate *s = (fstate *)st;
    fault_kernel<<<(unsigned)((s->n + 255) / 256), 256>>>(s->x, s->y, s->n, s->mode, s->never);
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *st, kf_view *v)
{
    fstate *s = (fstate *)st;
    v->data = s->y;
    v->count = s->n;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_DEVICE;
    return 0;
}

static int reference(void *st, double *ref, char *err, size_t errlen)
{
    fstate *s = (fstate *)st;
    for (size_t i = 0; i < s->n; i++)
        ref[i] = 2.0 * (double)kf_rand_pm1(s->seed, i);
    return 0;
}

static double bytes(const kf_params *p)
{
    return 8.0 * (1 << 20);
}

static double flops(const kf_params *p)
{
    return 1.0 * (1 << 20);
}

static void teardown(void *st)
{
    fstate *s = (fstate *)st;
    if (!s)
        return;
    cudaFree(s->x);
    cudaFree(s->y);
    cudaFree(s->never);
    free(s);
}

static const kf_kernel K = {KF_KERNEL_ABI_VERSION,
                            "fault",
                            "misbehaves on purpose",
                            0,
                            0,
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
    return &K;
}
