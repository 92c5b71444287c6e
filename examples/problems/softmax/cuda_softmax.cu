/* A CUDA C candidate of softmax (docs/problems.md, kf_candidate in
 * kernels/kf_kernel.h): one block of 256 threads per row, three passes
 * (max, sum of exponentials, write), launched on stream 0. Its input is
 * the problem's x (rows x cols, device memory), its output the problem's;
 * no tolerances, reference or seeds. */
#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

__global__ static void softmax_rows(const float *__restrict__ x, float *__restrict__ y, int cols)
{
    __shared__ float red[32];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *out = y + (size_t)blockIdx.x * cols;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float m = -__int_as_float(0x7f800000);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        m = fmaxf(m, row[c]);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0)
        red[warp] = m;
    __syncthreads();
    m = lane < nwarps ? red[lane] : -__int_as_float(0x7f800000);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += __expf(row[c] - m);
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        red[warp] = s;
    __syncthreads();
    s = lane < nwarps ? red[lane] : 0.f;
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    const float inv = 1.f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[c] = __expf(row[c] - m) * inv;
}

typedef struct {
    int rows, cols;
} shape;

static int prepare(void **scratch, const kf_params *p, const kf_view *in, size_t nin,
                   const kf_view *out, char *err, size_t errlen)
{
    (void)out;
    shape *sh = (shape *)malloc(sizeof *sh);
    if (!sh || nin != 1 || in[0].dtype != KF_DTYPE_F32 || in[0].location != KF_LOC_DEVICE) {
        free(sh);
        snprintf(err, errlen, "cuda_softmax wants one float32 device input");
        return -1;
    }
    sh->rows = (int)kf_param(p, "rows", 0);
    sh->cols = (int)kf_param(p, "cols", 0);
    *scratch = sh;
    return sh->rows > 0 && sh->cols > 0 ? 0 : -1;
}

static int run(void *scratch, const kf_view *in, size_t nin, const kf_view *out, char *err,
               size_t errlen)
{
    (void)nin, (void)err, (void)errlen;
    const shape *sh = (const shape *)scratch;
    softmax_rows<<<sh->rows, 256>>>((const float *)in[0].data, (float *)out->data, sh->cols);
    return 0;
}

static void release(void *scratch)
{
    free(scratch);
}

static const kf_candidate c = {KF_KERNEL_ABI_VERSION,
                               "cuda_softmax",
                               "row softmax, a block of 256 threads per row, three passes",
                               prepare,
                               run,
                               release};

extern "C" const kf_candidate *kf_candidate_get(void)
{
    return &c;
}
