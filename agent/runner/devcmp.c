/* devcmp — the comparison on the GPU; see devcmp.h.
 *
 * How it works. kf_cmp: each thread walks a grid-stride range (or, for the
 * guard's spot check, block b walks chunk b) and keeps, in registers, the
 * non-finite count, the non-zero reference count, the max absolute error
 * and the two sums of squares, with exactly the host's double operations
 * (hctx_compare in validate.c): the output element converted exactly to
 * double (f32, f16, bf16 and i32 all are), d = |o - r| rounded to nearest,
 * d*d and r*r each rounded then added (.rn everywhere, so ptxas fuses
 * nothing into an FMA, as the host's x86-64 code has none). Each block's
 * threads then write their five values to shared memory and thread 0 adds
 * them in thread order into the block's part; the host adds the parts in
 * block order (kf_devcmp_combine). Counts and the maximum are therefore
 * exactly the host's; the two sums differ only by summation order: the
 * host adds up to 8 serial runs of n/8 terms, the device runs of about
 * n/(2048*256) terms, then 256, then up to 2048. With m the longest serial
 * run of either side and u = 2^-53, each sum is within m*u relative of the
 * exact one, so the relative error rel = sqrt(diff2/ref2) of the two paths
 * differs by at most about (m_host + m_dev)*u relative: 1.5e-8 for a copy
 * of 1G elements in the worst case; measured differences are the
 * random-walk size (~sqrt(m)*u, 1e-12 or below), and 0 where diff2 is 0
 * (an exact output). No thread touches another's element, the grid is a
 * fixed function of n, so one n gives one answer.
 *
 * kf_neq: grid-stride over 16-bit words of two buffers, setting a flag on
 * the first difference it sees (determinism: bitwise, as memcmp). */
#include "runner/devcmp.h"
#include "runner/cudrv_ptx.h"

#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Shared memory: KF_DEVCMP_THREADS parts of 40 bytes. Registers named per
 * use; labels prefixed per function. */
const char kf_devcmp_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry kf_cmp(.param .u64 p_out, .param .u64 p_ref, .param .u64 p_n,\n"
    "                       .param .u32 p_dtype, .param .u64 p_parts, .param .u64 p_at,\n"
    "                       .param .u64 p_len)\n"
    "{\n"
    "  .reg .pred p, q;\n"
    "  .reg .b16 hb;\n"
    "  .reg .u16 hs;\n"
    "  .reg .s32 ws;\n"
    "  .reg .u32 tid, ntid, cta, ncta, dt, w, k;\n"
    "  .reg .u64 out, ref, n, parts, at, len, i, end, st, es, addr, off, nf, nz, t64, sa, sh;\n"
    "  .reg .f32 f;\n"
    "  .reg .f64 o, r, d, mx, d2, r2, x;\n"
    "  .shared .align 8 .b8 red[10240];\n"
    "  ld.param.u64 out, [p_out];\n"
    "  ld.param.u64 ref, [p_ref];\n"
    "  ld.param.u64 n, [p_n];\n"
    "  ld.param.u32 dt, [p_dtype];\n"
    "  ld.param.u64 parts, [p_parts];\n"
    "  ld.param.u64 at, [p_at];\n"
    "  ld.param.u64 len, [p_len];\n"
    "  mov.u32 tid, %tid.x;\n"
    "  mov.u32 ntid, %ntid.x;\n"
    "  mov.u32 cta, %ctaid.x;\n"
    "  mov.u32 ncta, %nctaid.x;\n"
    "  cvt.u64.u32 t64, tid;\n"
    "  setp.eq.u64 p, at, 0;\n"
    "  @p bra C_FULL;\n"
    /* A chunk per block: [at[cta], at[cta] + len), never past n. */
    "  mul.wide.u32 off, cta, 8;\n"
    "  add.u64 addr, at, off;\n"
    "  ld.global.u64 i, [addr];\n"
    "  add.u64 end, i, len;\n"
    "  min.u64 end, end, n;\n"
    "  add.u64 i, i, t64;\n"
    "  cvt.u64.u32 st, ntid;\n"
    "  bra C_START;\n"
    "C_FULL:\n"
    "  mad.wide.u32 i, cta, ntid, t64;\n"
    "  mov.u64 end, n;\n"
    "  mul.wide.u32 st, ntid, ncta;\n"
    "C_START:\n"
    "  mov.u64 nf, 0;\n"
    "  mov.u64 nz, 0;\n"
    "  mov.f64 mx, 0d0000000000000000;\n"
    "  mov.f64 d2, 0d0000000000000000;\n"
    "  mov.f64 r2, 0d0000000000000000;\n"
    /* Element size: f64 8, f16 and bf16 2, else 4 (hctx_dtype_size). */
    "  mov.u64 es, 4;\n"
    "  setp.eq.u32 p, dt, 1;\n"
    "  @p mov.u64 es, 8;\n"
    "  setp.eq.u32 p, dt, 2;\n"
    "  @p mov.u64 es, 2;\n"
    "  setp.eq.u32 p, dt, 3;\n"
    "  @p mov.u64 es, 2;\n"
    "C_LOOP:\n"
    "  setp.ge.u64 p, i, end;\n"
    "  @p bra C_REDUCE;\n"
    "  shl.b64 off, i, 3;\n"
    "  add.u64 addr, ref, off;\n"
    "  ld.global.f64 r, [addr];\n"
    "  mul.lo.u64 off, i, es;\n"
    "  add.u64 addr, out, off;\n"
    /* Any other value reads as f32, as hctx_elem reads it. */
    "  setp.eq.u32 p, dt, 1;\n"
    "  @p bra C_F64;\n"
    "  setp.eq.u32 p, dt, 2;\n"
    "  @p bra C_F16;\n"
    "  setp.eq.u32 p, dt, 3;\n"
    "  @p bra C_BF16;\n"
    "  setp.eq.u32 p, dt, 4;\n"
    "  @p bra C_I32;\n"
    "  ld.global.f32 f, [addr];\n"
    "  cvt.f64.f32 o, f;\n"
    "  bra C_HAVE;\n"
    "C_I32:\n"
    "  ld.global.s32 ws, [addr];\n"
    "  cvt.rn.f64.s32 o, ws;\n"
    "  bra C_HAVE;\n"
    "C_F64:\n"
    "  ld.global.f64 o, [addr];\n"
    "  bra C_HAVE;\n"
    "C_F16:\n"
    "  ld.global.b16 hb, [addr];\n"
    "  cvt.f32.f16 f, hb;\n"
    "  cvt.f64.f32 o, f;\n"
    "  bra C_HAVE;\n"
    "C_BF16:\n"
    "  ld.global.u16 hs, [addr];\n"
    "  cvt.u32.u16 w, hs;\n"
    "  shl.b32 w, w, 16;\n"
    "  mov.b32 f, w;\n"
    "  cvt.f64.f32 o, f;\n"
    "C_HAVE:\n"
    /* ref != 0 as C says it: true for NaN (unordered). */
    "  setp.neu.f64 p, r, 0d0000000000000000;\n"
    "  @p add.u64 nz, nz, 1;\n"
    "  testp.finite.f64 p, o;\n"
    "  @!p add.u64 nf, nf, 1;\n"
    "  @!p bra C_NEXT;\n"
    "  sub.rn.f64 d, o, r;\n"
    "  abs.f64 d, d;\n"
    /* d > max is false for a NaN d (a NaN reference), as on the host. */
    "  setp.gt.f64 q, d, mx;\n"
    "  @q mov.f64 mx, d;\n"
    "  mul.rn.f64 x, d, d;\n"
    "  add.rn.f64 d2, d2, x;\n"
    "  mul.rn.f64 x, r, r;\n"
    "  add.rn.f64 r2, r2, x;\n"
    "C_NEXT:\n"
    "  add.u64 i, i, st;\n"
    "  bra C_LOOP;\n"
    "C_REDUCE:\n"
    "  mov.u64 sa, red;\n"
    "  mul.wide.u32 off, tid, 40;\n"
    "  add.u64 sh, sa, off;\n"
    "  st.shared.u64 [sh], nf;\n"
    "  st.shared.u64 [sh+8], nz;\n"
    "  st.shared.f64 [sh+16], mx;\n"
    "  st.shared.f64 [sh+24], d2;\n"
    "  st.shared.f64 [sh+32], r2;\n"
    "  bar.sync 0;\n"
    "  setp.ne.u32 p, tid, 0;\n"
    "  @p bra C_DONE;\n"
    "  mov.u32 k, 1;\n"
    "C_SUM:\n"
    "  setp.ge.u32 p, k, ntid;\n"
    "  @p bra C_WRITE;\n"
    "  mul.wide.u32 off, k, 40;\n"
    "  add.u64 sh, sa, off;\n"
    "  ld.shared.u64 t64, [sh];\n"
    "  add.u64 nf, nf, t64;\n"
    "  ld.shared.u64 t64, [sh+8];\n"
    "  add.u64 nz, nz, t64;\n"
    "  ld.shared.f64 x, [sh+16];\n"
    "  setp.gt.f64 q, x, mx;\n"
    "  @q mov.f64 mx, x;\n"
    "  ld.shared.f64 x, [sh+24];\n"
    "  add.rn.f64 d2, d2, x;\n"
    "  ld.shared.f64 x, [sh+32];\n"
    "  add.rn.f64 r2, r2, x;\n"
    "  add.u32 k, k, 1;\n"
    "  bra C_SUM;\n"
    "C_WRITE:\n"
    "  mul.wide.u32 off, cta, 40;\n"
    "  add.u64 addr, parts, off;\n"
    "  st.global.u64 [addr], nf;\n"
    "  st.global.u64 [addr+8], nz;\n"
    "  st.global.f64 [addr+16], mx;\n"
    "  st.global.f64 [addr+24], d2;\n"
    "  st.global.f64 [addr+32], r2;\n"
    "C_DONE:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry kf_neq(.param .u64 p_a, .param .u64 p_b, .param .u64 p_n16,\n"
    "                       .param .u64 p_flag)\n"
    "{\n"
    "  .reg .pred p;\n"
    "  .reg .u16 x, y;\n"
    "  .reg .u32 tid, ntid, cta, ncta, one;\n"
    "  .reg .u64 a, b, n, fl, i, st, t, off, pa, pb;\n"
    "  ld.param.u64 a, [p_a];\n"
    "  ld.param.u64 b, [p_b];\n"
    "  ld.param.u64 n, [p_n16];\n"
    "  ld.param.u64 fl, [p_flag];\n" KF_PTX_GRID_STRIDE_START "  mov.u32 one, 1;\n"
    "N_LOOP:\n"
    "  setp.ge.u64 p, i, n;\n"
    "  @p bra N_END;\n"
    "  shl.b64 off, i, 1;\n"
    "  add.u64 pa, a, off;\n"
    "  add.u64 pb, b, off;\n"
    "  ld.global.u16 x, [pa];\n"
    "  ld.global.u16 y, [pb];\n"
    "  setp.ne.u16 p, x, y;\n"
    "  @p st.global.u32 [fl], one;\n"
    "  @p bra N_END;\n"
    "  add.u64 i, i, st;\n"
    "  bra N_LOOP;\n"
    "N_END:\n"
    "  ret;\n"
    "}\n";

/* Most chunks one spot check launches (a block each). */
#define MAX_CHUNKS 256

struct kf_devcmp {
    kf_cudrv *cu;
    void *mod, *cmp_fn, *neq_fn;
    /* One device buffer: the blocks' parts, then the chunk positions, then
     * the inequality flag. */
    char *dev;
    kf_devcmp_part *host_parts;
};

#define PARTS_BYTES ((size_t)KF_DEVCMP_MAX_BLOCKS * sizeof(kf_devcmp_part))
#define AT_BYTES ((size_t)MAX_CHUNKS * sizeof(uint64_t))
#define DEV_BYTES (PARTS_BYTES + AT_BYTES + 16)

_Static_assert(sizeof(kf_devcmp_part) == 40, "the device writes 40-byte parts");

int kf_devcmp_new(kf_cudrv *cu, kf_devcmp **out, kf_err *err)
{
    *out = NULL;
    kf_devcmp *dc = kf_xcalloc(1, sizeof *dc);
    dc->cu = cu;
    dc->host_parts = kf_xcalloc(KF_DEVCMP_MAX_BLOCKS, sizeof *dc->host_parts);
    void *dev = NULL;
    int rc = kf_cudrv_module_load(cu, KF_DEVCMP_MODULE, kf_devcmp_ptx, &dc->mod, err);
    if (rc == KF_OK)
        rc = kf_cudrv_module_function(cu, dc->mod, "kf_cmp", &dc->cmp_fn, err);
    if (rc == KF_OK)
        rc = kf_cudrv_module_function(cu, dc->mod, "kf_neq", &dc->neq_fn, err);
    if (rc == KF_OK)
        rc = kf_cudrv_alloc(cu, &dev, DEV_BYTES, err);
    dc->dev = dev;
    if (rc != KF_OK) {
        kf_devcmp_destroy(&dc);
        return rc;
    }
    *out = dc;
    return KF_OK;
}

void kf_devcmp_destroy(kf_devcmp **self)
{
    kf_devcmp *dc = self ? *self : NULL;
    if (!dc)
        return;
    kf_cudrv_free(dc->cu, dc->dev);
    kf_cudrv_module_unload(dc->cu, dc->mod);
    free(dc->host_parts);
    free(dc);
    *self = NULL;
}

unsigned kf_devcmp_blocks(size_t n)
{
    size_t b = (n + KF_DEVCMP_THREADS - 1) / KF_DEVCMP_THREADS;
    return (unsigned)(b > KF_DEVCMP_MAX_BLOCKS ? KF_DEVCMP_MAX_BLOCKS : b);
}

void kf_devcmp_combine(const kf_devcmp_part *parts, size_t n, kf_devcmp_part *sum)
{
    memset(sum, 0, sizeof *sum);
    for (size_t b = 0; b < n; b++) {
        sum->nonfinite += parts[b].nonfinite;
        sum->ref_nonzero += parts[b].ref_nonzero;
        if (parts[b].max_abs > sum->max_abs)
            sum->max_abs = parts[b].max_abs;
        sum->diff2 += parts[b].diff2;
        sum->ref2 += parts[b].ref2;
    }
}

/* Launches kf_cmp on `blocks` blocks and reads their parts back (the copy
 * waits for the launch, and surfaces its fault). */
static int cmp_launch(kf_devcmp *dc, const void *out, kf_dtype dtype, const double *ref, size_t n,
                      unsigned blocks, unsigned threads, const void *at_dev, size_t len,
                      kf_devcmp_part *sum, kf_err *err)
{
    memset(sum, 0, sizeof *sum);
    if (blocks == 0)
        return KF_OK;
    unsigned long long p_out = (uintptr_t)out, p_ref = (uintptr_t)ref, p_n = n,
                       p_parts = (uintptr_t)dc->dev, p_at = (uintptr_t)at_dev, p_len = len;
    unsigned p_dtype = (unsigned)dtype;
    void *args[] = {&p_out, &p_ref, &p_n, &p_dtype, &p_parts, &p_at, &p_len};
    int rc = kf_cudrv_launch(dc->cu, dc->cmp_fn, blocks, threads, args, err);
    if (rc == KF_OK)
        rc = kf_cudrv_copy_to_host(dc->cu, dc->host_parts, dc->dev, blocks * sizeof(kf_devcmp_part),
                                   err);
    if (rc != KF_OK)
        return rc;
    kf_devcmp_combine(dc->host_parts, blocks, sum);
    return KF_OK;
}

int kf_devcmp_compare(kf_devcmp *dc, const void *out, kf_dtype dtype, const double *ref, size_t n,
                      kf_devcmp_part *sum, kf_err *err)
{
    return cmp_launch(dc, out, dtype, ref, n, kf_devcmp_blocks(n), KF_DEVCMP_THREADS, NULL, 0, sum,
                      err);
}

int kf_devcmp_chunks(kf_devcmp *dc, const void *out, kf_dtype dtype, const double *ref, size_t n,
                     const uint64_t *at, size_t nat, size_t len, kf_devcmp_part *sum, kf_err *err)
{
    if (nat > MAX_CHUNKS || len == 0 || len > KF_DEVCMP_THREADS)
        return kf_err_set(err, KF_EINVAL, "devcmp: %zu chunks of %zu elements (at most %d of %d)",
                          nat, len, MAX_CHUNKS, KF_DEVCMP_THREADS);
    for (size_t c = 0; c < nat; c++)
        if (at[c] + len > n)
            return kf_err_set(err, KF_EINVAL, "devcmp: chunk %zu at %llu runs past %zu elements", c,
                              (unsigned long long)at[c], n);
    char *at_dev = dc->dev + PARTS_BYTES;
    int rc = kf_cudrv_copy_to_device(dc->cu, at_dev, at, nat * sizeof *at, err);
    if (rc != KF_OK)
        return rc;
    /* A warp per chunk: len is a few elements. */
    return cmp_launch(dc, out, dtype, ref, n, (unsigned)nat, 32, at_dev, len, sum, err);
}

int kf_devcmp_equal(kf_devcmp *dc, const void *a, const void *b, size_t bytes, int *equal,
                    kf_err *err)
{
    *equal = 0;
    if (bytes % 2)
        return kf_err_set(err, KF_EINVAL, "devcmp: %zu bytes is not a whole number of 16-bit words",
                          bytes);
    char *flag = dc->dev + PARTS_BYTES + AT_BYTES;
    int rc = kf_cudrv_memset(dc->cu, flag, 0, 4, err);
    unsigned long long p_a = (uintptr_t)a, p_b = (uintptr_t)b, p_n = bytes / 2,
                       p_flag = (uintptr_t)flag;
    void *args[] = {&p_a, &p_b, &p_n, &p_flag};
    unsigned blocks = kf_devcmp_blocks(bytes / 2);
    if (rc == KF_OK && blocks)
        rc = kf_cudrv_launch(dc->cu, dc->neq_fn, blocks, KF_DEVCMP_THREADS, args, err);
    uint32_t differ = 1;
    if (rc == KF_OK)
        rc = kf_cudrv_copy_to_host(dc->cu, &differ, flag, sizeof differ, err);
    if (rc != KF_OK)
        return rc;
    *equal = differ == 0;
    return KF_OK;
}
