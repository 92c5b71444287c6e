/* cudrv_ptx — the runner's own kernels in PTX: the blocking kernel, the L2
 * flush and the clock stamp (cudrv.c says what each is for). */
#ifndef KF_CUDRV_PTX_H
#define KF_CUDRV_PTX_H

/* The module's text with each entry kf_NAME renamed kf_NAME<suffix>: the
 * CUPTI timer tells the runner's kernels from a kernel's by that suffix,
 * drawn at random per runner (cupti.h). Freed by the caller. */
char *kf_cudrv_ptx_named(const char *suffix);

#endif
