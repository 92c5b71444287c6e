/* kf_cuda.cuh — helpers shared by kfleet's CUDA reference kernels.
 *
 * Shipped to the agents with every kernel that includes it (the client sends
 * a kernel's quoted includes from its own directory), so a change here
 * changes the kernels' content hash and rebuilds them.
 *
 * Conventions of the CUDA kernels:
 *  - every launch goes on the legacy default stream (stream 0): the harness
 *    times with events on that stream and flushes L2 on it;
 *  - run() launches and checks cudaGetLastError(), never synchronizes (the
 *    harness does, and a fault surfaces there with its CUDA error name);
 *  - inputs are generated on the device from the seed (kf_rand_*), so setup
 *    stays fast at GiB sizes, and never all zeros;
 *  - reference() is independent of run(): a CPU loop in double, or a naive
 *    device kernel accumulating in double where the CPU would take minutes.
 */
#ifndef KF_CUDA_CUH
#define KF_CUDA_CUH

#include "kf_kernel.h"

#include <cuda_runtime.h>
#include <stdio.h>

#include <system_error>
#include <thread>

/* Returns -1 from the enclosing function with err filled when a CUDA call
 * fails. Needs `err` and `errlen` in scope. */
#define KF_CU(call)                                                                                \
    do {                                                                                           \
        cudaError_t kf_cu_rc_ = (call);                                                            \
        if (kf_cu_rc_ != cudaSuccess) {                                                            \
            snprintf(err, errlen, "%s: %s (%s)", #call, cudaGetErrorString(kf_cu_rc_),             \
                     cudaGetErrorName(kf_cu_rc_));                                                 \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* After a launch: a bad configuration shows here, a fault at the next sync. */
#define KF_CU_LAUNCHED() KF_CU(cudaGetLastError())

/* A counter-based hash (splitmix64 finalizer): element i of stream `seed`
 * is the same on the host and the device, so references can regenerate
 * inputs instead of copying them back. */
__host__ __device__ static inline unsigned long long kf_mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1), 24 bits of precision: exactly representable in fp32. */
__host__ __device__ static inline float kf_rand_pm1(unsigned long long seed, unsigned long long i)
{
    unsigned long long h = kf_mix64(seed * 0x632be59bd9b4e019ull + i);
    return (float)(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform in [0, 1). */
__host__ __device__ static inline float kf_rand_01(unsigned long long seed, unsigned long long i)
{
    unsigned long long h = kf_mix64(seed * 0x632be59bd9b4e019ull + i);
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* Fills n floats with kf_rand_pm1(seed, i) * scale on the device (stream 0). */
__global__ static void kf_fill_f32_kernel(float *p, size_t n, unsigned long long seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = kf_rand_pm1(seed, i) * scale;
}

static inline int kf_fill_f32(float *p, size_t n, unsigned long long seed, float scale, char *err,
                              size_t errlen)
{
    kf_fill_f32_kernel<<<1024, 256>>>(p, n, seed, scale);
    KF_CU_LAUNCHED();
    return 0;
}

/* fn(lo, hi) over items [0, n) of `per_item` elements' work each, split
 * over up to KF_HOST_THREADS host threads when the work is large enough:
 * a host reference is a loop over every output element, once per check
 * (copy bytes=4G: 1G elements; docs/benchmarks.md, "Cheap checks"). Each part is a
 * fixed index range, so the result does not depend on the thread count. A
 * thread that cannot start runs its part on the calling thread. */
#define KF_HOST_THREADS 8
#define KF_HOST_SPLIT_MIN (1u << 18)
template <typename F> static inline void kf_host_parallel(size_t n, size_t per_item, F fn)
{
    unsigned nt = std::thread::hardware_concurrency();
    nt = nt > KF_HOST_THREADS ? KF_HOST_THREADS : nt < 1 ? 1 : nt;
    if (n * per_item < KF_HOST_SPLIT_MIN || n < nt)
        nt = 1;
    std::thread th[KF_HOST_THREADS];
    for (unsigned t = 1; t < nt; t++) {
        try {
            th[t] = std::thread(fn, n * t / nt, n * (t + 1) / nt);
        } catch (const std::system_error &) {
            fn(n * t / nt, n * (t + 1) / nt);
        }
    }
    fn((size_t)0, n / nt);
    for (unsigned t = 1; t < nt; t++)
        if (th[t].joinable())
            th[t].join();
}

#endif
