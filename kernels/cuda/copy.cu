/* copy — streaming device-to-device copy with 16-byte vectors: the memory ceiling.
 *
 * Measures the DRAM bandwidth a plain read+write stream reaches on this GPU, the ceiling the
 * other memory-bound kernels are judged against. One run reads `bytes` from a source buffer
 * and writes them to a destination buffer with int4 loads and stores; the grid fills every SM
 * to full occupancy and each thread keeps four independent 16-byte loads in flight, which is
 * what it takes to cover DRAM latency without relying on the cache.
 *
 * The source holds random 32-bit words from the seed, not zeros, so an unwritten or misplaced
 * destination word shows. The reference regenerates the same words from the same
 * counter-based hash, on the host (reference) or into the harness's device buffer
 * (kf_reference_device, compared on the GPU), and shares nothing with run().
 * Params: bytes (default 1 GiB; a multiple of 16). */
#include "kf_cuda.cuh"

#include <stdlib.h>

#define COPY_THREADS 256
#define COPY_UNROLL 4

typedef struct {
    size_t bytes;
    unsigned long long seed;
    int blocks;
    int4 *src, *dst;
} copy_state;

/* Word i of the source for `seed`: the device fill and the host reference both call this. */
__host__ __device__ static inline unsigned copy_word(unsigned long long seed, unsigned long long i)
{
    return (unsigned)(kf_mix64(seed * 0x632be59bd9b4e019ull + i) >> 32);
}

/* Each thread writes four consecutive words as one uint4, so the fill itself streams. */
__global__ static void __launch_bounds__(COPY_THREADS)
    copy_fill_kernel(uint4 *p, size_t n16, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
         i += (size_t)gridDim.x * blockDim.x) {
        const unsigned long long w = 4 * (unsigned long long)i;
        p[i] = make_uint4(copy_word(seed, w), copy_word(seed, w + 1), copy_word(seed, w + 2),
                          copy_word(seed, w + 3));
    }
}

/* The loads of one unrolled step are issued before any store so that four 16-byte requests
 * per thread are outstanding at once; consecutive lanes touch consecutive int4s, so every warp
 * instruction moves 512 contiguous bytes. The tail loop picks up the last < 4 strides. */
__global__ static void __launch_bounds__(COPY_THREADS)
    copy_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n)
{
    const size_t stride = (size_t)gridDim.x * COPY_THREADS;
    size_t i = (size_t)blockIdx.x * COPY_THREADS + threadIdx.x;
    for (; i + (COPY_UNROLL - 1) * stride < n; i += COPY_UNROLL * stride) {
        int4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; u++)
            v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; u++)
            dst[i + u * stride] = v[u];
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

static void teardown(void *state)
{
    copy_state *st = (copy_state *)state;
    if (!st)
        return;
    /* Errors are ignored: after a device fault every call fails, and there is nothing left to
     * do but release what can be released. */
    if (st->src)
        cudaFree(st->src);
    if (st->dst)
        cudaFree(st->dst);
    free(st);
}

static int setup_device(copy_state *st, char *err, size_t errlen)
{
    size_t free_b = 0, total_b = 0;
    KF_CU(cudaMemGetInfo(&free_b, &total_b));
    const double need = 2.0 * (double)st->bytes, spare = 64.0 * 1024 * 1024;
    if (need + spare > (double)free_b) {
        snprintf(err, errlen,
                 "copy: bytes=%zu needs %.3f GiB of device memory (source + destination) but "
                 "only %.3f GiB of %.3f GiB is free and 64 MiB is kept spare; use a smaller bytes",
                 st->bytes, need / 1073741824.0, (double)free_b / 1073741824.0,
                 (double)total_b / 1073741824.0);
        return -1;
    }

    int dev = 0, sms = 0, threads_per_sm = 0;
    KF_CU(cudaGetDevice(&dev));
    KF_CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    KF_CU(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    /* One resident wave: more blocks than fit only adds scheduling tails, fewer leaves
     * bandwidth unused. Small copies get no more blocks than they have work for. */
    const size_t n16 = st->bytes / 16;
    size_t blocks = (size_t)sms * (size_t)(threads_per_sm / COPY_THREADS);
    const size_t needed = (n16 + COPY_THREADS - 1) / COPY_THREADS;
    if (blocks > needed)
        blocks = needed;
    if (blocks < 1)
        blocks = 1;
    st->blocks = (int)blocks;

    KF_CU(cudaMalloc((void **)&st->src, st->bytes));
    KF_CU(cudaMalloc((void **)&st->dst, st->bytes));
    copy_fill_kernel<<<1024, COPY_THREADS>>>((uint4 *)st->src, n16, st->seed);
    KF_CU_LAUNCHED();
    return 0;
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    *state = NULL;
    const int64_t bytes = kf_param(p, "bytes", 1073741824);
    if (bytes <= 0) {
        snprintf(err, errlen, "copy: bytes=%lld must be positive; use a multiple of 16",
                 (long long)bytes);
        return -1;
    }
    if (bytes % 16 != 0) {
        snprintf(err, errlen,
                 "copy: bytes=%lld is not a multiple of 16 (the copy moves int4 vectors); "
                 "use a multiple of 16",
                 (long long)bytes);
        return -1;
    }
    /* Beyond any GPU's memory; refusing here keeps 2*bytes far from overflow. */
    if (bytes > ((int64_t)1 << 44)) {
        snprintf(err, errlen, "copy: bytes=%lld is larger than 16 TiB; use a smaller bytes",
                 (long long)bytes);
        return -1;
    }
    copy_state *st = (copy_state *)calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "copy: out of host memory for the state");
        return -1;
    }
    st->bytes = (size_t)bytes;
    st->seed = seed;
    if (setup_device(st, err, errlen) != 0) {
        teardown(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    copy_state *st = (copy_state *)state;
    copy_kernel<<<st->blocks, COPY_THREADS>>>(st->src, st->dst, st->bytes / 16);
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *state, kf_view *out)
{
    copy_state *st = (copy_state *)state;
    out->data = st->dst;
    out->count = st->bytes / 4;
    out->dtype = KF_DTYPE_I32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    copy_state *st = (copy_state *)state;
    const size_t n = st->bytes / 4;
    const unsigned long long seed = st->seed;
    /* The harness reads the destination as int32, so the words are compared signed. */
    kf_host_parallel(n, 1, [=](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++)
            ref[i] = (double)(int32_t)copy_word(seed, i);
    });
    return 0;
}

/* The reference on the device: the same words from the same hash, written as the doubles the
 * host reference writes, by threads of its own (no code shared with run()). */
__global__ static void copy_ref_kernel(double *r, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        r[i] = (double)(int32_t)copy_word(seed, i);
}

extern "C" int kf_reference_device(void *state, double *dref, char *err, size_t errlen)
{
    copy_state *st = (copy_state *)state;
    copy_ref_kernel<<<1024, COPY_THREADS>>>(dref, st->bytes / 4, st->seed);
    KF_CU_LAUNCHED();
    return 0;
}

static double bytes(const kf_params *p)
{
    /* Every byte is read once from the source and written once to the destination. */
    return 2.0 * (double)kf_param(p, "bytes", 1073741824);
}

static double flops(const kf_params *p)
{
    (void)p;
    return 0.0;
}

static const kf_kernel k = {
    KF_KERNEL_ABI_VERSION,
    "copy",
    "device-to-device copy with int4 loads/stores (DRAM bandwidth ceiling), CUDA",
    0.0, /* tol_abs: a copy is exact */
    0.0, /* tol_rel */
    1,   /* deterministic */
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
    return &k;
}
