/* hostpeak — the host's FLOP ceiling; see hostpeak.h. Built at -O2 in
 * every build (CMakeLists.txt): at -O0 the vector chains go through memory
 * and a debug agent would call honest kernels impossible. */
#include "runner/hostpeak.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

#define HOST_CHAINS 12

#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f"), no_sanitize("address", "undefined"))) static double
fma_avx512(uint64_t iters)
{
    __m512 acc[HOST_CHAINS], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < HOST_CHAINS; i++)
        acc[i] = _mm512_set1_ps((float)i);
    for (uint64_t k = 0; k < iters; k++)
        for (int i = 0; i < HOST_CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    float sink[16];
    for (int i = 1; i < HOST_CHAINS; i++)
        acc[0] = _mm512_add_ps(acc[0], acc[i]);
    _mm512_storeu_ps(sink, acc[0]);
    __asm__ volatile("" : : "r"(sink) : "memory");
    return 2.0 * 16 * HOST_CHAINS * (double)iters;
}

__attribute__((target("avx2,fma"), no_sanitize("address", "undefined"))) static double
fma_avx2(uint64_t iters)
{
    __m256 acc[HOST_CHAINS], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < HOST_CHAINS; i++)
        acc[i] = _mm256_set1_ps((float)i);
    for (uint64_t k = 0; k < iters; k++)
        for (int i = 0; i < HOST_CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    float sink[8];
    for (int i = 1; i < HOST_CHAINS; i++)
        acc[0] = _mm256_add_ps(acc[0], acc[i]);
    _mm256_storeu_ps(sink, acc[0]);
    __asm__ volatile("" : : "r"(sink) : "memory");
    return 2.0 * 8 * HOST_CHAINS * (double)iters;
}
#endif

/* Any CPU: 16-byte vectors, a multiply and an add per lane. */
__attribute__((no_sanitize("address", "undefined"))) static double fma_generic(uint64_t iters)
{
    typedef float v4 __attribute__((vector_size(16)));
    v4 acc[HOST_CHAINS], m = {0.999999f, 0.999999f, 0.999999f, 0.999999f},
                         a = {1e-7f, 1e-7f, 1e-7f, 1e-7f};
    for (int i = 0; i < HOST_CHAINS; i++)
        acc[i] = (v4){(float)i, (float)i, (float)i, (float)i};
    for (uint64_t k = 0; k < iters; k++)
        for (int i = 0; i < HOST_CHAINS; i++)
            acc[i] = acc[i] * m + a;
    for (int i = 1; i < HOST_CHAINS; i++)
        acc[0] += acc[i];
    __asm__ volatile("" : : "r"(&acc[0]) : "memory");
    return 2.0 * 4 * HOST_CHAINS * (double)iters;
}

double kf_host_peak_gflops(void)
{
    double (*fn)(uint64_t) = fma_generic;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        fn = fma_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        fn = fma_avx2;
#endif
    fn(1000); /* the vector units' warm-up (AVX-512 licences) */
    /* The thread's CPU time, not the wall's: on a busy node (a test suite,
     * other runners) the thread is preempted, and wall time would make the
     * ceiling the load's. */
    double best = 0;
    for (int r = 0; r < 5; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        double flops = fn(2000000);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        if (s > 0 && flops / s > best)
            best = flops / s;
    }
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return best * (cores > 0 ? cores : 1) / 1e9;
}
