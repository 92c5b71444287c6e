/* gemm_bf16 — our own tensor-core GEMM, C = A * B with bf16 inputs and fp32 accumulation.
 *
 * Layouts: A is [m][k] bf16 row-major; B is stored transposed, [n][k] bf16 row-major ("column-
 * major B", k contiguous for both operands, cuBLAS's "TN" case); C is [m][n] fp32 row-major.
 * Both operands being k-major lets ldmatrix (impl 0) and wgmma (impl 1) read them without any
 * transpose. Inputs are kf_rand_pm1 rounded to bf16: A element i is stream index i, B element i
 * is stream index m*k + i (one stream, so A and B never repeat each other).
 *
 * impl=1 (default), Hopper wgmma: a 128x256x64 block tile, 3 warpgroups (384 threads). Warpgroup
 *   0 is the producer: one thread issues TMA loads (cp.async.bulk.tensor, 128-byte swizzle) of
 *   the A and B tiles into a 4-stage ring (48 KiB a stage), each stage guarded by a "full" and an
 *   "empty" mbarrier. Warpgroups 1 and 2 each own 64 rows x 256 columns and issue
 *   wgmma.mma_async m64n256k16 (4 per stage) straight from the swizzled shared memory through
 *   matrix descriptors, keeping one stage's wgmma group in flight while waiting for the next;
 *   setmaxnreg moves registers from the producer to the consumers (128 fp32 accumulators each).
 * impl=0, mma.sync fallback: a 128x256x64 block tile, 8 warps as 2 (m) x 4 (n), warp tile
 *   64x64 from mma.sync m16n8k16 with fragments loaded by ldmatrix.x4 and double-buffered in
 *   registers; a 4-stage cp.async ring with rows padded to 144 bytes so that every ldmatrix
 *   phase hits 8 distinct 16-byte bank groups; one barrier per k-tile.
 * Both rasterize blocks in groups of 16 m-tiles so that a wave of blocks shares A and B in L2,
 * and write C straight from the accumulator registers.
 * Measured on an H100 SXM, TFLOP/s, two sessions (cuBLAS, kernels/cuda/gemm_cublas.cu, in
 * brackets): 8192^3: impl 1 761-775 [751-771], impl 0 419-438; 4096^3: impl 1 683-691
 * [682-708], impl 0 394-397; 8192x8192x16384: impl 1 758, impl 0 429 [693].
 * Both impls gave results bitwise equal to cuBLAS's on every size tried (128x256x64 up to
 * 8192^3 and 2048x2048x32768): all three evidently feed the tensor cores' fp32 accumulators
 * in the same k order.
 *
 * Params: m, n, k (default 8192 each), impl (default 1). m must be a multiple of 128, n of 256
 * and k of 64: there are no edge tiles. Needs an sm_90 GPU (H100/H200): the build targets sm_90a
 * only, for wgmma and setmaxnreg.
 * Reference: a separate CUDA-core kernel in double (see ref_kernel), 0.15-0.2 s at 8192^3 on an
 * H100 where the CPU would take many minutes. */
#include "kf_gemm_ref.cuh" /* inputs and the reference, shared with gemm_cublas */

#include <cuda.h> /* CUtensorMap and its enums only: the encoder comes through the runtime */
#include <cuda_bf16.h>
#include <new>
#include <stdint.h>
#include <stdio.h>

#define KF_NAME "gemm_bf16"

/* wgmma and setmaxnreg exist only in the arch-specific sm_90a target; a plain sm_90 (or any
 * other) device pass would fail in ptxas with a far less helpful message. */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_bf16 needs -gencode=arch=compute_90a,code=sm_90a (Hopper wgmma, setmaxnreg)"
#endif

/* ---- shared by both impls ---- */

/* Block b of a 1-D grid -> (m tile, n tile), walking n inside groups of GROUP_M m-tiles: the
 * ~132 blocks resident at once (one per SM) then cover about a 16 x 8 patch of C, so each A
 * row-panel and B column-panel they stream is read from DRAM once and shared through L2 by
 * ~8-16 blocks, where row-major order would stream all of B per row of tiles. */
#define GROUP_M 16

__device__ static inline void tile_of_block(int mtiles, int ntiles, int *mt, int *nt)
{
    const int per_group = GROUP_M * ntiles;
    const int group = blockIdx.x / per_group;
    const int first = group * GROUP_M;
    const int rows = min(mtiles - first, GROUP_M);
    const int in_group = blockIdx.x % per_group;
    *mt = first + in_group % rows;
    *nt = in_group / rows;
}

__device__ static inline uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* ---- impl 0: mma.sync m16n8k16, ldmatrix, cp.async ring ---- */

namespace ms
{
/* Measured at 8192^3 on an H100: BK=64 with 4 stages 438 TFLOP/s, 3 stages 419, BK=32 with 4
 * stages 315 (fewer barriers per mma matter most: one block of 8 warps per SM). */
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr int KSTEPS = BK / 16;
static_assert(KSTEPS % 2 == 0, "fragment double buffering assumes an even number of k16 steps");
/* Rows of BK bf16 padded by 16 B: with a row pitch of an odd number of 16-byte units, 8
 * consecutive rows start in 8 distinct 16-byte bank groups, which is what each 8-row ldmatrix
 * phase reads (and what 8 threads copying one row's chunks write). */
constexpr int PITCH = BK + 8;
constexpr int A_ELEMS = BM * PITCH, B_ELEMS = BN * PITCH;
constexpr int STAGE_ELEMS = A_ELEMS + B_ELEMS;
constexpr int SMEM_BYTES = STAGES * STAGE_ELEMS * (int)sizeof(bf16); /* 221184 */
constexpr int CHUNKS = BK / 8;                                       /* 16-byte chunks a row */

__device__ static inline void cp_async16(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ static inline void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N> __device__ static inline void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ static inline void ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                          uint32_t &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

__device__ static inline void mma_bf16(float *c, const uint32_t *a, const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* One k-tile of A (128 rows) and B (256 rows) in 16-byte chunks; neighbouring threads take
 * neighbouring chunks of a row, so each row's BK*2 contiguous bytes come in whole sectors. */
__device__ static inline void load_stage(uint32_t st, const bf16 *a, const bf16 *b, int k, int k0)
{
#pragma unroll
    for (int i = 0; i < BM * CHUNKS / THREADS; i++) {
        const int idx = threadIdx.x + i * THREADS, row = idx / CHUNKS, ch = idx % CHUNKS;
        cp_async16(st + (uint32_t)(row * PITCH + ch * 8) * 2, a + (size_t)row * k + k0 + ch * 8);
    }
#pragma unroll
    for (int i = 0; i < BN * CHUNKS / THREADS; i++) {
        const int idx = threadIdx.x + i * THREADS, row = idx / CHUNKS, ch = idx % CHUNKS;
        cp_async16(st + (uint32_t)((A_ELEMS + row * PITCH + ch * 8) * 2),
                   b + (size_t)row * k + k0 + ch * 8);
    }
}

/* The warp's A (4 m16 tiles) and B (8 n8 tiles) fragments of k16 step ks of a stage. Lane
 * addresses (a_off, b_off) are set up in the kernel: A, x4 per 16x16 block: lanes 0-15 give
 * rows 0-15 at k 0, lanes 16-31 rows 0-15 at k 8, which lands as a0..a3 of the m16n8k16 A
 * fragment. B, x4 per 16(n)x16(k) block: lanes 0-7 rows n0-7 at k 0, 8-15 n0-7 at k 8, 16-23
 * n8-15 at k 0, 24-31 n8-15 at k 8, which lands as {b0, b1} of two adjacent n8 tiles. */
__device__ static inline void load_frags(uint32_t st, uint32_t a_off, uint32_t b_off, int ks,
                                         uint32_t (&af)[4][4], uint32_t (&bfr)[8][2])
{
#pragma unroll
    for (int i = 0; i < 4; i++)
        ldmatrix_x4(st + a_off + (uint32_t)((i * 16 * PITCH + ks * 16) * 2), af[i][0], af[i][1],
                    af[i][2], af[i][3]);
#pragma unroll
    for (int j = 0; j < 4; j++)
        ldmatrix_x4(st + b_off + (uint32_t)((j * 16 * PITCH + ks * 16) * 2), bfr[2 * j][0],
                    bfr[2 * j][1], bfr[2 * j + 1][0], bfr[2 * j + 1][1]);
}

__global__ static void __launch_bounds__(THREADS, 1)
    gemm_mma_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                    int m, int n, int k)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const uint32_t smem = smem_u32(smem_raw);
    int mt, nt;
    tile_of_block(m / BM, n / BN, &mt, &nt);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp % 2, wn = warp / 2; /* warp tile rows wm*64, columns wn*64 */
    const bf16 *ablk = a + (size_t)mt * BM * k;
    const bf16 *bblk = b + (size_t)nt * BN * k;
    const uint32_t a_off = (uint32_t)(((wm * 64 + lane % 16) * PITCH + (lane / 16) * 8) * 2);
    const int b_row = wn * 64 + (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;
    const uint32_t b_off = (uint32_t)((A_ELEMS + b_row * PITCH + b_col) * 2);

    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;

    /* Tile t is always cp.async group t: the prologue commits STAGES-1 groups and every k-tile
     * commits exactly one more (empty past the end), so "wait until at most STAGES-2 groups
     * are pending" always means "the next tile to read has landed". */
    const int ktiles = k / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            load_stage(smem + s * STAGE_ELEMS * 2, ablk, bblk, k, s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    /* Fragments are double-buffered: step ks+1's ldmatrix goes out before step ks's mma. The
     * barrier that hands the next stage over sits in the last step of a tile, before that
     * step's mma, so the tensor cores have a tile's last 32 mma to chew on while warps meet. */
    uint32_t af[2][4][4], bfr[2][8][2];
    int rs = 0, ws = STAGES - 1; /* stage being read, stage to refill next */
    load_frags(smem, a_off, b_off, 0, af[0], bfr[0]);
    for (int kt = 0; kt < ktiles; kt++) {
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ks++) {
            if (ks == KSTEPS - 1) {
                /* Tile kt+1 has landed, and every warp has issued all its reads of stage
                 * (kt-1) % STAGES, the one refilled next. */
                rs = rs + 1 == STAGES ? 0 : rs + 1;
                cp_async_wait<STAGES - 2>();
                __syncthreads();
            }
            /* At the last step this reads tile kt+1's first step (garbage after the last
             * tile: in bounds, never used). */
            load_frags(smem + rs * STAGE_ELEMS * 2, a_off, b_off, (ks + 1) % KSTEPS,
                       af[(ks + 1) % 2], bfr[(ks + 1) % 2]);
            if (ks == 0) {
                if (kt + STAGES - 1 < ktiles)
                    load_stage(smem + ws * STAGE_ELEMS * 2, ablk, bblk, k, (kt + STAGES - 1) * BK);
                cp_async_commit();
                ws = ws + 1 == STAGES ? 0 : ws + 1;
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    mma_bf16(acc[i][j], af[ks % 2][i], bfr[ks % 2][j]);
        }
    }
    cp_async_wait<0>();

    /* Accumulator fragment: c0,c1 at (row g, columns 2t, 2t+1), c2,c3 at row g+8 (g = lane/4,
     * t = lane%4): 4 lanes write 32 contiguous bytes of a row, whole sectors. */
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const size_t row = (size_t)mt * BM + wm * 64 + i * 16 + g;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const size_t col = (size_t)nt * BN + wn * 64 + j * 8 + 2 * t;
            *reinterpret_cast<float2 *>(c + row * n + col) =
                make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2 *>(c + (row + 8) * n + col) =
                make_float2(acc[i][j][2], acc[i][j][3]);
        }
    }
}
} /* namespace ms */

/* ---- impl 1: wgmma + TMA + mbarrier, warp-specialized ---- */

namespace wg
{
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 384;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;           /* 16 KiB: 128 rows of 128 B */
constexpr int B_BYTES = BN * BK * 2;           /* 32 KiB: 256 rows of 128 B */
constexpr int STAGE_BYTES = A_BYTES + B_BYTES; /* 48 KiB, a multiple of 1024 */
/* + the mbarriers, + slack to round the dynamic base up to 1024 B, which the 128-byte swizzle
 * needs: TMA and wgmma both XOR address bits [4,7) with bits [7,10), so a tile must start on a
 * 1024-byte (8-row) boundary for the two to agree with a zero descriptor base offset. */
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024; /* 197696 */

__device__ static inline void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ static inline void mbar_arrive(uint32_t bar)
{
    asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
                 : "memory");
}

__device__ static inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("{\n\t.reg .b64 st;\n\t"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

__device__ static inline void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* 2-D TMA load of box {BK elements of the inner (k) dimension, rows} at (k0, row0). */
__device__ static inline void tma_load(uint32_t dst, const CUtensorMap *map, int k0, int row0,
                                       uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(k0), "r"(row0), "r"(bar)
                 : "memory");
}

/* wgmma shared-memory matrix descriptor for a k-major tile written by TMA with the 128-byte
 * swizzle: rows of 128 B (64 bf16), 8-row core groups 1024 B apart (stride byte offset); the
 * leading byte offset is unused for swizzled k-major operands (set to 1 as CUTLASS does); base
 * offset 0 because tiles start 1024-aligned; layout type 1 = 128B swizzle in bits 62-63. The
 * k16 slices inside a 128-byte row are addressed by adding 32 B per slice to the start address:
 * the hardware applies the XOR swizzle to the final address, as TMA did when writing. */
__device__ static inline uint64_t make_desc(uint32_t saddr)
{
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) |
           ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__device__ static inline void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ static inline void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N> __device__ static inline void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#define KF_ACC8(i)                                                                                 \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])

/* D[64x256] += A[64x16] * B[16x256], both from shared memory, both k-major (no transpose). */
__device__ static inline void wgmma_m64n256k16(float *d, uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, "
                 "%72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, "
                 "%88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, "
                 "%104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, "
                 "%120, %121, %122, %123, %124, %125, %126, %127}, "
                 "%128, %129, p, 1, 1, 0, 0;\n}\n"
                 : KF_ACC8(0), KF_ACC8(8), KF_ACC8(16), KF_ACC8(24), KF_ACC8(32), KF_ACC8(40),
                   KF_ACC8(48), KF_ACC8(56), KF_ACC8(64), KF_ACC8(72), KF_ACC8(80), KF_ACC8(88),
                   KF_ACC8(96), KF_ACC8(104), KF_ACC8(112), KF_ACC8(120)
                 : "l"(da), "l"(db), "r"(accumulate));
}

/* Pins the accumulators at this point of the program: the compiler must not read them before
 * the preceding wgmma.wait_group (it does not know wgmma writes them asynchronously). */
__device__ static inline void fence_acc(float *d)
{
#pragma unroll
    for (int i = 0; i < 128; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

__global__ static void __launch_bounds__(THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tma_a,
                      const __grid_constant__ CUtensorMap tma_b, float *__restrict__ c, int m,
                      int n, int k)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full0 = base + STAGES * STAGE_BYTES; /* full[s] = full0 + 8s */
    const uint32_t empty0 = full0 + STAGES * 8;         /* empty[s] = empty0 + 8s */
    int mt, nt;
    tile_of_block(m / BM, n / BN, &mt, &nt);
    const int ktiles = k / BK;
    const int wgi = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full0 + 8 * s, 1);               /* the producer's arrive + tx bytes */
            mbar_init(empty0 + 8 * s, CONSUMER_WARPS); /* one arrive per consumer warp */
        }
        /* Make the initialized barriers visible to the async proxy (TMA's complete_tx). */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    if (wgi == 0) {
        /* Producer: needs almost no registers; give them to the consumers. */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < ktiles; kt++) {
                const int s = kt % STAGES;
                /* Round r = kt/STAGES refills slot s after the consumers released round r-1. */
                if (kt >= STAGES)
                    mbar_wait(empty0 + 8 * s, ((kt / STAGES) - 1) & 1);
                const uint32_t full = full0 + 8 * s;
                mbar_arrive_expect_tx(full, STAGE_BYTES);
                tma_load(base + s * STAGE_BYTES, &tma_a, kt * BK, mt * BM, full);
                tma_load(base + s * STAGE_BYTES + A_BYTES, &tma_b, kt * BK, nt * BN, full);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        const int cw = wgi - 1; /* rows cw*64 .. cw*64+63 of the block tile */
        /* Not zeroed: the first wgmma runs with scale-d = 0 and ignores D. Zeroing with plain
         * moves made ptxas serialize every wgmma (warning C7515). */
        float d[128];
        for (int kt = 0; kt < ktiles; kt++) {
            const int s = kt % STAGES;
            /* The tile was written by TMA (the async proxy, as wgmma reads it) and completed on
             * this barrier, so no fence.proxy.async is needed: no generic-proxy stores ever
             * touch the operand tiles. */
            mbar_wait(full0 + 8 * s, (kt / STAGES) & 1);
            const uint32_t sa = base + s * STAGE_BYTES + cw * 64 * 128;
            const uint32_t sb = base + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < BK / 16; ks++)
                wgmma_m64n256k16(d, make_desc(sa + ks * 32), make_desc(sb + ks * 32),
                                 kt > 0 || ks > 0);
            wgmma_commit();
            /* Keep this stage's group in flight; once the previous one has completed (in this
             * warp: wait_group is warp-synchronous), its slot can be refilled. */
            wgmma_wait<1>();
            if (kt > 0 && threadIdx.x % 32 == 0)
                mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));
        }
        wgmma_wait<0>();
        fence_acc(d);

        /* wgmma accumulator layout (m64nN, fp32): warp w of the warpgroup holds rows 16w..16w+15;
         * register 4i+e of lane l sits at row 16w + l/4 + 8*(e/2), column 8i + 2*(l%4) + e%2. */
        const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        const size_t row = (size_t)mt * BM + cw * 64 + w * 16 + lane / 4;
        const size_t col0 = (size_t)nt * BN + 2 * (lane % 4);
        float *c0 = c + row * n + col0, *c8 = c + (row + 8) * n + col0;
#pragma unroll
        for (int i = 0; i < 32; i++) {
            *reinterpret_cast<float2 *>(c0 + 8 * i) = make_float2(d[4 * i], d[4 * i + 1]);
            *reinterpret_cast<float2 *>(c8 + 8 * i) = make_float2(d[4 * i + 2], d[4 * i + 3]);
        }
    }
}
} /* namespace wg */

/* ---- the plugin ---- */

typedef struct gemm_state {
    CUtensorMap tma_a, tma_b; /* first: 64-byte aligned, as the encoder requires */
    int m, n, k, impl;
    bf16 *a, *b;
    float *c;
} gemm_state;

static void teardown(void *state);

static int check_multiple(const char *name, int64_t v, int tile, int impl, char *err, size_t errlen)
{
    if (v % tile != 0) {
        snprintf(err, errlen,
                 KF_NAME ": %s=%lld must be a multiple of %d (impl=%d tiles); pick another size",
                 name, (long long)v, tile, impl);
        return -1;
    }
    return 0;
}

static int make_tma(CUtensorMap *map, const bf16 *p, int rows, int k, int box_rows, char *err,
                    size_t errlen)
{
    typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                  const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                  const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    /* Through the runtime, so the plugin needs no -lcuda; 12000 is the ABI of the
     * cuTensorMapEncodeTiled prototype above. */
    KF_CU(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                           &q));
    if (q != cudaDriverEntryPointSuccess || !fn) {
        snprintf(err, errlen, KF_NAME ": the driver has no cuTensorMapEncodeTiled (query %d)",
                 (int)q);
        return -1;
    }
    const encode_fn encode = (encode_fn)fn;
    const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)k * sizeof(bf16)};
    const cuuint32_t box[2] = {(cuuint32_t)wg::BK, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dims, strides, box,
                        estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, KF_NAME ": cuTensorMapEncodeTiled failed with CUresult %d", (int)r);
        return -1;
    }
    return 0;
}

static int setup_inner(gemm_state *st, uint64_t seed, char *err, size_t errlen)
{
    int dev = 0, major = 0, minor = 0;
    KF_CU(cudaGetDevice(&dev));
    KF_CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    KF_CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) {
        snprintf(err, errlen, KF_NAME ": built for sm_90a (H100/H200) only, this GPU is sm_%d%d",
                 major, minor);
        return -1;
    }

    const size_t m = (size_t)st->m, n = (size_t)st->n, k = (size_t)st->k;
    const size_t need = (m * k + n * k) * sizeof(bf16) + m * n * sizeof(float);
    size_t free_b = 0, total_b = 0;
    KF_CU(cudaMemGetInfo(&free_b, &total_b));
    if (need + (256u << 20) > free_b) {
        snprintf(err, errlen,
                 KF_NAME ": needs %.2f GiB of device memory (+256 MiB headroom), %.2f GiB of "
                         "%.2f GiB free",
                 need / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0);
        return -1;
    }
    KF_CU(cudaMalloc((void **)&st->a, m * k * sizeof(bf16)));
    KF_CU(cudaMalloc((void **)&st->b, n * k * sizeof(bf16)));
    KF_CU(cudaMalloc((void **)&st->c, m * n * sizeof(float)));
    fill_bf16_kernel<<<1024, 256>>>(st->a, m * k, seed, 0);
    KF_CU_LAUNCHED();
    fill_bf16_kernel<<<1024, 256>>>(st->b, n * k, seed, m * k);
    KF_CU_LAUNCHED();

    if (st->impl == 0) {
        KF_CU(cudaFuncSetAttribute(ms::gemm_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   ms::SMEM_BYTES));
    } else {
        KF_CU(cudaFuncSetAttribute(wg::gemm_wgmma_kernel,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, wg::SMEM_BYTES));
        if (make_tma(&st->tma_a, st->a, st->m, st->k, wg::BM, err, errlen) != 0 ||
            make_tma(&st->tma_b, st->b, st->n, st->k, wg::BN, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    *state = NULL;
    const int64_t m = kf_param(p, "m", 8192), n = kf_param(p, "n", 8192),
                  k = kf_param(p, "k", 8192), impl = kf_param(p, "impl", 1);
    if (impl != 0 && impl != 1) {
        snprintf(err, errlen, KF_NAME ": impl must be 0 (mma.sync) or 1 (wgmma), got %lld",
                 (long long)impl);
        return -1;
    }
    const int64_t lim = 65536;
    if (m < 1 || m > lim || n < 1 || n > lim || k < 1 || k > lim) {
        snprintf(err, errlen, KF_NAME ": m, n, k must be in 1..%lld, got %lld, %lld, %lld",
                 (long long)lim, (long long)m, (long long)n, (long long)k);
        return -1;
    }
    const int bm = impl ? wg::BM : ms::BM, bn = impl ? wg::BN : ms::BN;
    const int bk = impl ? wg::BK : ms::BK;
    if (check_multiple("m", m, bm, (int)impl, err, errlen) != 0 ||
        check_multiple("n", n, bn, (int)impl, err, errlen) != 0 ||
        check_multiple("k", k, bk, (int)impl, err, errlen) != 0)
        return -1;

    gemm_state *st = new (std::nothrow) gemm_state();
    if (!st) {
        snprintf(err, errlen, KF_NAME ": out of host memory");
        return -1;
    }
    st->m = (int)m;
    st->n = (int)n;
    st->k = (int)k;
    st->impl = (int)impl;
    if (setup_inner(st, seed, err, errlen) != 0) {
        teardown(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    gemm_state *st = (gemm_state *)state;
    if (st->impl == 0) {
        const unsigned blocks = (unsigned)((st->m / ms::BM) * (st->n / ms::BN));
        ms::gemm_mma_kernel<<<blocks, ms::THREADS, ms::SMEM_BYTES>>>(st->a, st->b, st->c, st->m,
                                                                     st->n, st->k);
    } else {
        const unsigned blocks = (unsigned)((st->m / wg::BM) * (st->n / wg::BN));
        wg::gemm_wgmma_kernel<<<blocks, wg::THREADS, wg::SMEM_BYTES>>>(st->tma_a, st->tma_b, st->c,
                                                                       st->m, st->n, st->k);
    }
    KF_CU_LAUNCHED();
    return 0;
}

static int output(void *state, kf_view *out)
{
    gemm_state *st = (gemm_state *)state;
    out->data = st->c;
    out->count = (size_t)st->m * st->n;
    out->dtype = KF_DTYPE_F32;
    out->location = KF_LOC_DEVICE;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    gemm_state *st = (gemm_state *)state;
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
    gemm_state *st = (gemm_state *)state;
    return kf_gemm_reference_device(KF_NAME, st->a, st->b, st->m, st->n, st->k, dref, err, errlen);
}

static double flops(const kf_params *p)
{
    return kf_gemm_flops(p);
}

/* Tolerates a partial setup: every pointer starts NULL and cudaFree(NULL) is a no-op. Errors
 * are ignored: there is nobody to report them to, and a sticky fault already failed the run. */
static void teardown(void *state)
{
    gemm_state *st = (gemm_state *)state;
    if (!st)
        return;
    cudaFree(st->a);
    cudaFree(st->b);
    cudaFree(st->c);
    delete st;
}

static const kf_kernel kernel_def = {
    KF_KERNEL_ABI_VERSION,
    KF_NAME,
    "tensor-core GEMM C = A*B, bf16 in, fp32 out; impl 0 mma.sync, impl 1 wgmma+TMA (sm_90a)",
    /* bf16 inputs are exact in both the kernel and the double reference, and every bf16 x bf16
     * product is exact in fp32, so only the fp32 accumulation differs, and the tensor cores'
     * accumulation is biased toward zero (outputs sit consistently a little closer to zero
     * than the reference). Entries are in [-1, 1), so at k = 8192 the sums are ~N(0, 30^2)
     * and reach ~150. Measured max abs / relative L2 error on an H100, identical for both impls
     * and cuBLAS: k = 8192: 1.9e-3 / 8.6e-6; k = 16384: 4.5e-3 / 1.8e-5; k = 32768: 1.2e-2 /
     * 3.7e-5. So 1e-2 absolute and 1e-4 relative leave a 5x margin at the default size while
     * any wrong tile, fragment or swizzle gives O(1) errors; but from k = 32768 up the absolute
     * bound fails on a correct kernel (cuBLAS included): validate at k <= 16384. */
    1e-2,
    1e-4,
    1, /* deterministic: fixed reduction order, no split-k atomics */
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
