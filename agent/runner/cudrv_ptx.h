/* cudrv_ptx — the runner's own kernels in PTX: the blocking kernel, the L2
 * flush and the clock stamp (cudrv.c says what each is for). */
#ifndef KF_CUDRV_PTX_H
#define KF_CUDRV_PTX_H

/* The module's text with each entry kf_NAME renamed kf_NAME<suffix>: the
 * CUPTI timer tells the runner's kernels from a kernel's by that suffix,
 * drawn at random per runner (cupti.h). Freed by the caller. */
char *kf_cudrv_ptx_named(const char *suffix);
/* Its name among the node's compiled modules (cubins.h), compiled from
 * kf_cudrv_ptx_named(KF_CUBINS_PLACEHOLDER). */
#define KF_CUDRV_PTX_MODULE "block"

/* PTX for a grid-stride loop's start, shared by the runner's kernels:
 * i = this thread's first index, st = the grid's stride, in the kernel's
 * registers tid ntid cta ncta (.u32) and t i st (.u64). */
#define KF_PTX_GRID_STRIDE_START                                                                   \
    "  mov.u32 tid, %tid.x;\n"                                                                     \
    "  mov.u32 ntid, %ntid.x;\n"                                                                   \
    "  mov.u32 cta, %ctaid.x;\n"                                                                   \
    "  mov.u32 ncta, %nctaid.x;\n"                                                                 \
    "  cvt.u64.u32 t, tid;\n"                                                                      \
    "  mad.wide.u32 i, cta, ntid, t;\n"                                                            \
    "  mul.wide.u32 st, ntid, ncta;\n"

#endif
