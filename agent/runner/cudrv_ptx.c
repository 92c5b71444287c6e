/* cudrv_ptx — the runner's own kernels (cudrv.c), in PTX the driver
 * compiles for any GPU, named per runner. */
#include "runner/cudrv_ptx.h"

#include "common/xalloc.h"

#include <stdio.h>
#include <string.h>

/* nvbench's blocking kernel, in PTX the driver compiles for any GPU: one
 * thread spins on a host-mapped flag (or 1 s of %globaltimer, so a host
 * that never releases it cannot hang the GPU). Launched before the start
 * event, it holds the stream while the host enqueues the event and the
 * kernel's launches; released, they run back to back, so the measured
 * interval holds the kernel and not the host's launch latency. */
static const char block_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry kf_block(.param .u64 flag)\n"
    "{\n"
    "  .reg .pred p, q;\n"
    "  .reg .u32 v;\n"
    "  .reg .u64 a, t0, t1, d;\n"
    "  ld.param.u64 a, [flag];\n"
    "  mov.u64 t0, %globaltimer;\n"
    /* "Running", 8 bytes on: a sample timed
     * until idle enqueues its launches only
     * once the blocker spins (kf_cudrv_time). */
    "  mov.u32 v, 1;\n"
    "  st.volatile.global.u32 [a+8], v;\n"
    "SPIN:\n"
    "  ld.volatile.global.u32 v, [a];\n"
    "  setp.ne.u32 p, v, 0;\n"
    "  @p bra DONE;\n"
    "  mov.u64 t1, %globaltimer;\n"
    "  sub.u64 d, t1, t0;\n"
    "  setp.lt.u64 q, d, 1000000000;\n"
    "  @q bra SPIN;\n"
    /* When released: the device time, 112
     * bytes on (stamps()[6]), the start of a
     * sample timed until idle. The blocker is
     * already resident, so work another stream
     * filled the SMs with cannot delay it as it
     * delays a stamp kernel's block. */
    "DONE:\n"
    "  mov.u64 t1, %globaltimer;\n"
    "  st.volatile.global.u64 [a+112], t1;\n"
    "  ret;\n"
    "}\n"
    /* The L2 flush: every block strides over
     * the buffer with 16-byte loads cached in L2
     * only, so what the last sample left in L2
     * (dirty output lines too) is written back
     * and evicted here, outside the timing, and
     * L2 holds clean lines of this buffer. A
     * store that never happens keeps the loads. */
    ".visible .entry kf_flush(.param .u64 buf, .param .u64 n16,\n"
    "                         .param .u64 sink)\n"
    "{\n"
    "  .reg .pred p;\n"
    "  .reg .u32 a0, a1, a2, a3, acc, tid, ntid, cta, ncta;\n"
    "  .reg .u64 b, n, s, i, st, off, t;\n"
    "  ld.param.u64 b, [buf];\n"
    "  ld.param.u64 n, [n16];\n"
    "  ld.param.u64 s, [sink];\n" KF_PTX_GRID_STRIDE_START "  mov.u32 acc, 0;\n"
    "LOOP:\n"
    "  setp.ge.u64 p, i, n;\n"
    "  @p bra END;\n"
    "  shl.b64 off, i, 4;\n"
    "  add.u64 t, b, off;\n"
    "  ld.global.cg.v4.u32 {a0, a1, a2, a3}, [t];\n"
    "  xor.b32 acc, acc, a0;\n"
    "  xor.b32 acc, acc, a3;\n"
    "  add.u64 i, i, st;\n"
    "  bra LOOP;\n"
    "END:\n"
    "  setp.eq.u32 p, acc, 0x7fc0ffee;\n"
    "  @p st.global.u32 [s], acc;\n"
    "  ret;\n"
    "}\n"
    /* The clock stamp: launched with a block per
     * SM and then some, so that SM 0 runs one;
     * that block writes %globaltimer and SM 0's
     * clock64. Two stamps around a sample give
     * its mean SM clock, as nvbench's
     * gpu_frequency does. */
    ".visible .entry kf_stamp(.param .u64 out)\n"
    "{\n"
    "  .reg .pred p;\n"
    "  .reg .u32 sm;\n"
    "  .reg .u64 a, g, c;\n"
    "  ld.param.u64 a, [out];\n"
    "  mov.u32 sm, %smid;\n"
    "  setp.ne.u32 p, sm, 0;\n"
    "  @p bra OUT;\n"
    "  mov.u64 g, %globaltimer;\n"
    "  mov.u64 c, %clock64;\n"
    "  st.volatile.global.u64 [a], g;\n"
    "  st.volatile.global.u64 [a+8], c;\n"
    "OUT:\n"
    "  ret;\n"
    "}\n";

char *kf_cudrv_ptx_named(const char *suffix)
{
    size_t extra = 3 * strlen(suffix);
    char *out = kf_xmalloc(sizeof block_ptx + extra), *o = out;
    const char *p = block_ptx;
    for (;;) {
        const char *e = strstr(p, ".entry kf_");
        const char *paren = e ? strchr(e, '(') : NULL;
        if (!paren) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(paren - p));
        o += paren - p;
        o += sprintf(o, "%s", suffix);
        p = paren;
    }
}
