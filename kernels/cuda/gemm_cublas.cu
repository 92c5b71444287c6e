/* gemm_cublas — the baseline for gemm_bf16: the same GEMM through cuBLAS.
 *
 * C[m][n] (fp32, row-major) = A[m][k] (bf16, row-major) x B, with B stored transposed as
 * [n][k] bf16 row-major, exactly as in gemm_bf16.cu (same params, same inputs from the seed,
 * same layouts, same output), so the two report comparable TFLOP/s. cuBLAS is column-major:
 * row-major C is C^T column-major (n x m, ld n), and C^T = B' * A where the [n][k] buffer read
 * column-major is k x n (ld k) and the [m][k] buffer is k x m (ld k); hence
 * cublasGemmEx(OP_T, OP_N, n, m, k, B, k, A, k, C, n): the "TN" case, cuBLAS's fastest.
 * CUDA_R_16BF inputs, CUDA_R_32F output, CUBLAS_COMPUTE_32F, default algorithm, default
 * workspace, on the legacy default stream. An H100 reaches about 700-800 TFLOP/s at 8192^3.
 *
 * Params: m, n, k (default 8192 each); any size in 1..65536 works here (cuBLAS handles edges).
 * Measured on an H100 SXM, two sessions: 751-771 TFLOP/s at 8192^3, 682-708 at 4096^3, 693 at
 * 8192x8192x16384. Its results were bitwise equal to gemm_bf16's on every size tried.
 * The handle is created in setup and one untimed call warms cuBLAS up (kernel loading, heuristic
 * cache), so run() times only the GEMM. Reference: the same double-precision CUDA-core kernel
 * as gemm_bf16.cu (copied: each kernel is one self-contained source plus kf_cuda.cuh). */
//@kfleet flags: -lcublas
#include "kf_gemm_ref.cuh" /* inputs and the reference, shared with gemm_bf16 */

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define KF_NAME "gemm_cublas"

/* Returns -1 from the enclosing function with err filled when a cuBLAS call fails. */
#define KF_CUBLAS(call)                                                                            \
    do {                                                                                           \
        cublasStatus_t kf_cb_rc_ = (call);                                                         \
        if (kf_cb_rc_ != CUBLAS_STATUS_SUCCESS) {                                                  \
            snprintf(err, errlen, "%s: %s (%d)", #call, cublasGetStatusString(kf_cb_rc_),          \
                     (int)kf_cb_rc_);                                                              \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* ---- the plugin ---- */

typedef struct cublas_state {
    int m, n, k;
    cublasHandle_t handle;
    bf16 *a, *b;
    float *c;
} cublas_state;

static void teardown(void *state);

static int gemm(cublas_state *st, char *err, size_t errlen)
{
    const float alpha = 1.0f, beta = 0.0f;
    KF_CUBLAS(cublasGemmEx(st->handle, CUBLAS_OP_T, CUBLAS_OP_N, st->n, st->m, st->k, &alpha, st->b,
                           CUDA_R_16BF, st->k, st->a, CUDA_R_16BF, st->k, &beta, st->c, CUDA_R_32F,
                           st->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

static int setup_inner(cublas_state *st, uint64_t seed, char *err, size_t errlen)
{
    const size_t m = (size_t)st->m, n = (size_t)st->n, k = (size_t)st->k;
    /* cuBLAS's own workspace and kernels come on top; 512 MiB covers them. */
    const size_t need = (m * k + n * k) * sizeof(bf16) + m * n * sizeof(float);
    size_t free_b = 0, total_b = 0;
    KF_CU(cudaMemGetInfo(&free_b, &total_b));
    if (need + (512u << 20) > free_b) {
        snprintf(err, errlen,
                 KF_NAME ": needs %.2f GiB of device memory (+512 MiB for cuBLAS), %.2f GiB of "
                         "%.2f GiB free",
                 need / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0);
        return -1;
    }
    KF_CUBLAS(cublasCreate(&st->handle));
    KF_CUBLAS(cublasSetStream(st->handle, 0));
    KF_CU(cudaMalloc((void **)&st->a, m * k * sizeof(bf16)));
    KF_CU(cudaMalloc((void **)&st->b, n * k * sizeof(bf16)));
    KF_CU(cudaMalloc((void **)&st->c, m * n * sizeof(float)));
    fill_bf16_kernel<<<1024, 256>>>(st->a, m * k, seed, 0);
    KF_CU_LAUNCHED();
    fill_bf16_kernel<<<1024, 256>>>(st->b, n * k, seed, m * k);
    KF_CU_LAUNCHED();
    /* Warm-up: the first call loads cuBLAS's kernels and picks the algorithm. */
    if (gemm(st, err, errlen) != 0)
        return -1;
    return 0;
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    *state = NULL;
    const int64_t m = kf_param(p, "m", 8192), n = kf_param(p, "n", 8192),
                  k = kf_param(p, "k", 8192);
    const int64_t lim = 65536;
    if (m < 1 || m > lim || n < 1 || n > lim || k < 1 || k > lim) {
        snprintf(err, errlen, KF_NAME ": m, n, k must be in 1..%lld, got %lld, %lld, %lld",
                 (long long)lim, (long long)m, (long long)n, (long long)k);
        return -1;
    }
    cublas_state *st = (cublas_state *)calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, KF_NAME ": out of host memory");
        return -1;
    }
    st->m = (int)m;
    st->n = (int)n;
    st->k = (int)k;
    if (setup_inner(st, seed, err, errlen) != 0) {
        teardown(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    if (gemm((cublas_state *)state, err, errlen) != 0)
        return -1;
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *state, kf_view *out)
{
    cublas_state *st = (cublas_state *)state;
    out->data = st->c;
    out->count = (size_t)st->m * st->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    cublas_state *st = (cublas_state *)state;
    return kf_gemm_reference(KF_NAME, st->a, st->b, st->m, st->n, st->k, ref, err, errlen);
}

static double bytes(const kf_params *p)
{
    return kf_gemm_bytes(p);
}

/* The same reference kernel into the harness's device buffer: checked on the GPU, no 8192^2
 * doubles copied to the host and compared there (kf_kernel.h). */
extern "C" int kf_reference_device(void *state, double *dref, char *err, size_t errlen)
{
    cublas_state *st = (cublas_state *)state;
    return kf_gemm_reference_device(KF_NAME, st->a, st->b, st->m, st->n, st->k, dref, err, errlen);
}

static double flops(const kf_params *p)
{
    return kf_gemm_flops(p);
}

/* Tolerates a partial setup: pointers start NULL (cudaFree(NULL) is a no-op) and the handle is
 * destroyed only if it was created. Errors are ignored: there is nobody to report them to. */
static void teardown(void *state)
{
    cublas_state *st = (cublas_state *)state;
    if (!st)
        return;
    if (st->handle)
        cublasDestroy(st->handle);
    cudaFree(st->a);
    cudaFree(st->b);
    cudaFree(st->c);
    free(st);
}

static const kf_kernel kernel_def = {
    KF_KERNEL_ABI_VERSION,
    KF_NAME,
    "cuBLAS GEMM baseline C = A*B, bf16 in, fp32 out (cublasGemmEx, CUBLAS_COMPUTE_32F)",
    /* As gemm_bf16: bf16 inputs and their products are exact, so only the fp32 accumulation
     * differs from the double reference. Measured max abs / relative L2 error on an H100:
     * k = 8192: 1.9e-3 / 8.6e-6; k = 16384: 4.5e-3 / 1.8e-5; k = 32768: 1.2e-2 / 3.7e-5, so
     * 1e-2 / 1e-4 leave a 5x margin at the default size, and from k = 32768 up the absolute
     * bound fails even here: validate at k <= 16384. */
    1e-2,
    1e-4,
    /* cuBLAS gives bitwise-identical results run to run on one GPU and stream without atomics
     * mode, which is the default. */
    1,
    setup,
    run,
    output,
    reference,
    bytes,
    flops,
    teardown,
};

extern "C" const kf_kernel *kf_kernel_get(void)
{
    return &kernel_def;
}
