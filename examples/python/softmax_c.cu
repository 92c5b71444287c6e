/* softmax_c — row softmax of a rows x cols float32 matrix, as a C-ABI CUDA
 * kernel: one block of 256 threads per row, three passes (max, sum of
 * exponentials, write). softmax_cupy.py launches the very same device code
 * (the text between the markers, byte for byte; tests/integration/
 * test_python.sh checks it) from Python through CuPy, so the two rows of
 * examples/torch.yaml compare launching from C and from Python.
 * Params: rows, cols. */
#include "kf_cuda.cuh"

#include <math.h>
#include <stdlib.h>

#define KF_NAME "softmax_c"

// kfleet: softmax kernel begin
extern "C" __global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y,
                                        int cols)
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
// kfleet: softmax kernel end

#define SOFTMAX_THREADS 256

typedef struct {
    int rows, cols;
    float *x, *y;
} sm_state;

__global__ static void sm_fill(float *x, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = 4.f * kf_rand_pm1(seed, i);
}

static void teardown(void *state)
{
    sm_state *st = (sm_state *)state;
    if (!st)
        return;
    cudaFree(st->x);
    cudaFree(st->y);
    free(st);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    const int64_t rows = kf_param(p, "rows", 4096), cols = kf_param(p, "cols", 4096);
    *state = NULL;
    if (rows < 1 || rows > (1 << 20) || cols < 1 || cols > (1 << 20)) {
        snprintf(err, errlen, KF_NAME ": rows and cols must be in 1..%d", 1 << 20);
        return -1;
    }
    sm_state *st = (sm_state *)calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, KF_NAME ": out of host memory");
        return -1;
    }
    *state = st;
    st->rows = (int)rows;
    st->cols = (int)cols;
    const size_t n = (size_t)rows * (size_t)cols;
    KF_CU(cudaMalloc((void **)&st->x, n * sizeof(float)));
    KF_CU(cudaMalloc((void **)&st->y, n * sizeof(float)));
    sm_fill<<<1024, 256>>>(st->x, n, seed);
    KF_CU_LAUNCHED();
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    sm_state *st = (sm_state *)state;
    softmax_rows<<<st->rows, SOFTMAX_THREADS>>>(st->x, st->y, st->cols);
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *state, kf_view *out)
{
    sm_state *st = (sm_state *)state;
    out->data = st->y;
    out->count = (size_t)st->rows * st->cols;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

/* The inputs copied back, the softmax in double on the host. */
static int reference(void *state, double *ref, char *err, size_t errlen)
{
    sm_state *st = (sm_state *)state;
    const size_t n = (size_t)st->rows * st->cols;
    float *x = (float *)malloc(n * sizeof *x);
    if (!x) {
        snprintf(err, errlen, KF_NAME ": out of host memory for the reference");
        return -1;
    }
    if (cudaMemcpy(x, st->x, n * sizeof *x, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(x);
        snprintf(err, errlen, KF_NAME ": cannot copy the inputs back");
        return -1;
    }
    for (int r = 0; r < st->rows; r++) {
        const float *row = x + (size_t)r * st->cols;
        double m = -INFINITY, s = 0;
        for (int c = 0; c < st->cols; c++)
            m = row[c] > m ? row[c] : m;
        for (int c = 0; c < st->cols; c++)
            s += exp((double)row[c] - m);
        for (int c = 0; c < st->cols; c++)
            ref[(size_t)r * st->cols + c] = exp((double)row[c] - m) / s;
    }
    free(x);
    return 0;
}

static double bytes(const kf_params *p)
{
    return 8.0 * (double)kf_param(p, "rows", 4096) * (double)kf_param(p, "cols", 4096);
}

static double flops(const kf_params *p)
{
    return 5.0 * (double)kf_param(p, "rows", 4096) * (double)kf_param(p, "cols", 4096);
}

static const kf_kernel kernel_def = {
    KF_KERNEL_ABI_VERSION, KF_NAME,
    "row softmax, fp32, one 256-thread block per row (the device code softmax_cupy.py runs)",
    /* __expf is within 2 ulp; relative to the double reference the row sums make it ~1e-6. */
    1e-6, 1e-4, 1, setup, run, output, reference, bytes, flops, teardown};

extern "C" const kf_kernel *kf_kernel_get(void)
{
    return &kernel_def;
}
