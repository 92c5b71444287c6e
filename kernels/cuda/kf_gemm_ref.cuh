/* kf_gemm_ref.cuh — the inputs and the reference shared by kfleet's GEMM
 * kernels (gemm_bf16.cu, gemm_cublas.cu), so both compute the same function
 * of the same data and are checked against the same independent result.
 *
 * Problem: C[m][n] (fp32) = A[m][k] (bf16, row-major) x B, where B is stored
 * as [n][k] bf16 row-major (k contiguous in both operands). A element i is
 * stream index i of kf_rand_pm1(seed, .), B element i is index m*k + i,
 * rounded to bf16. Shipped with the kernels that include it (its content
 * enters their hash). */
#ifndef KF_GEMM_REF_CUH
#define KF_GEMM_REF_CUH

#include "kf_cuda.cuh"

#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

/* A element i is stream index i, B element i is stream index m*k + i. */
__global__ static void fill_bf16_kernel(bf16 *p, size_t count, unsigned long long seed,
                                        unsigned long long first)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16_rn(kf_rand_pm1(seed, first + i));
}

/* The reference: plain FMAs on the CUDA cores in double, over the same bf16 values converted
 * to double, so products are exact and each sum carries ~1e-16 relative error; it shares no
 * code with the tensor-core paths. Each thread owns an 8x8 set of outputs (rows ty + 16i,
 * columns tx + 16j) and accumulates each in k order. This departs from one thread per output:
 * that form spends a shared-memory (or cache) load and a float->double conversion per FMA,
 * while the 8x8 register tile reuses each staged, already converted operand 8 times; it runs
 * 8192^3 in 0.15-0.2 s on an H100, and validation does it once per seed. Bounds are checked, so any
 * m, n, k works. */
#define REF_TILE 128
#define REF_KT 16

__global__ static void __launch_bounds__(256)
    ref_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, double *__restrict__ r,
               int m, int n, int k)
{
    __shared__ double as[REF_KT][REF_TILE];
    __shared__ double bs[REF_KT][REF_TILE];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const size_t row0 = (size_t)blockIdx.y * REF_TILE, col0 = (size_t)blockIdx.x * REF_TILE;
    double acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.0;

    for (int k0 = 0; k0 < k; k0 += REF_KT) {
        for (int e = threadIdx.x; e < REF_TILE * REF_KT; e += blockDim.x) {
            const int t = e / REF_KT, kk = e % REF_KT;
            const size_t gr = row0 + t, gc = col0 + t;
            const int gk = k0 + kk;
            as[kk][t] = gr < (size_t)m && gk < k ? (double)__bfloat162float(a[gr * k + gk]) : 0.0;
            bs[kk][t] = gc < (size_t)n && gk < k ? (double)__bfloat162float(b[gc * k + gk]) : 0.0;
        }
        __syncthreads();
#pragma unroll 4
        for (int kk = 0; kk < REF_KT; kk++) {
            double av[8], bv[8];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                av[i] = as[kk][ty + 16 * i];
                bv[i] = bs[kk][tx + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const size_t gr = row0 + ty + 16 * i, gc = col0 + tx + 16 * j;
            if (gr < (size_t)m && gc < (size_t)n)
                r[gr * n + gc] = acc[i][j];
        }
}

/* Enqueues ref_kernel on stream 0 into dref, m*n doubles of device memory
 * the caller owns: kf_reference_device (kf_kernel.h), where the harness
 * compares on the GPU and nothing is copied. */
static inline int kf_gemm_reference_device(const char *name, const bf16 *a, const bf16 *b, int m,
                                           int n, int k, double *dref, char *err, size_t errlen)
{
    const dim3 grid((unsigned)((n + REF_TILE - 1) / REF_TILE),
                    (unsigned)((m + REF_TILE - 1) / REF_TILE));
    ref_kernel<<<grid, 256>>>(a, b, dref, m, n, k);
    const cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "%s device reference: %s (%s)", name, cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
        return -1;
    }
    return 0;
}

/* reference() on the host's side: ref_kernel into a device buffer of m*n
 * doubles (allocated here and freed before returning, so profiled runs
 * never carry it), copied to ref. Refuses with the sizes when the GPU
 * lacks the room. */
static inline int kf_gemm_reference(const char *name, const bf16 *a, const bf16 *b, int m, int n,
                                    int k, double *ref, char *err, size_t errlen)
{
    const size_t bytes = (size_t)m * n * sizeof(double);
    size_t free_b = 0, total_b = 0;
    KF_CU(cudaMemGetInfo(&free_b, &total_b));
    if (bytes + (256u << 20) > free_b) {
        snprintf(err, errlen,
                 "%s: reference needs %.2f GiB of device memory (+256 MiB), %.2f GiB free", name,
                 bytes / 1073741824.0, free_b / 1073741824.0);
        return -1;
    }
    double *dev = NULL;
    KF_CU(cudaMalloc((void **)&dev, bytes));
    if (kf_gemm_reference_device(name, a, b, m, n, k, dev, err, errlen) != 0) {
        cudaFree(dev);
        return -1;
    }
    const cudaError_t rc = cudaMemcpy(ref, dev, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dev);
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "%s reference: %s (%s)", name, cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
        return -1;
    }
    return 0;
}

/* Algorithmic traffic and work of one GEMM: A and B read once, C written. */
static inline double kf_gemm_bytes(const kf_params *p)
{
    const double m = (double)kf_param(p, "m", 8192), n = (double)kf_param(p, "n", 8192),
                 k = (double)kf_param(p, "k", 8192);
    return 2.0 * (m * k + k * n) + 4.0 * m * n;
}

static inline double kf_gemm_flops(const kf_params *p)
{
    const double m = (double)kf_param(p, "m", 8192), n = (double)kf_param(p, "n", 8192),
                 k = (double)kf_param(p, "k", 8192);
    return 2.0 * m * n * k;
}

#endif
