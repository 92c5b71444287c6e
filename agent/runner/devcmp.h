/* devcmp — the harness's comparison on the GPU (issue 32 item 4): a device
 * output against a device reference (kf_reference_device in kf_kernel.h),
 * reduced to what the host comparison reports (hctx_compare: non-finite
 * outputs, non-zero reference elements, max absolute error, the sums of
 * squares behind the relative error), and two device buffers compared
 * bitwise (determinism). The code that runs is OURS: PTX embedded here
 * (kf_devcmp_ptx), loaded through cudrv as the blocking kernel is, never
 * the kernel's. Not a header outside agent/runner/. */
#ifndef KF_DEVCMP_H
#define KF_DEVCMP_H

#include "kf_kernel.h"
#include "common/err.h"
#include "runner/cudrv.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_devcmp kf_devcmp;

/* One block's partial sums, as the device writes them (40 bytes), and the
 * combined answer: the same quantities as the host comparison's parts. */
typedef struct kf_devcmp_part {
    uint64_t nonfinite;   /* outputs that are NaN or infinite */
    uint64_t ref_nonzero; /* reference elements != 0 (NaN counts, as in C) */
    double max_abs;       /* over finite outputs */
    double diff2, ref2;   /* sums of (out-ref)^2 and ref^2 over finite outputs */
} kf_devcmp_part;

/* The PTX (.version 7.0, .target sm_50: any driver since CUDA 11.0). */
extern const char kf_devcmp_ptx[];
/* Its name among the node's compiled modules (cubins.h). */
#define KF_DEVCMP_MODULE "devcmp"

/* Loads the module into cu's context and allocates its small device
 * buffer. 0 with *out, or an error (no silent fallback: the caller fails
 * the task with it). */
int kf_devcmp_new(kf_cudrv *cu, kf_devcmp **out, kf_err *err);
void kf_devcmp_destroy(kf_devcmp **self);

/* Compares n output elements (device, dtype) with n device doubles and
 * waits: *sum as combined by kf_devcmp_combine over the blocks in order,
 * so a given n gives one answer. */
int kf_devcmp_compare(kf_devcmp *dc, const void *out, kf_dtype dtype, const double *ref, size_t n,
                      kf_devcmp_part *sum, kf_err *err);
/* The same over nat chunks of len elements each, chunk c starting at
 * element at[c] (host positions, at[c] + len <= n; nat <= 256): the
 * guard's spot check, one launch for all of them. */
int kf_devcmp_chunks(kf_devcmp *dc, const void *out, kf_dtype dtype, const double *ref, size_t n,
                     const uint64_t *at, size_t nat, size_t len, kf_devcmp_part *sum, kf_err *err);
/* *equal: whether `bytes` bytes (a multiple of 2: every kf_dtype) at
 * device a and b are the same bits. */
int kf_devcmp_equal(kf_devcmp *dc, const void *a, const void *b, size_t bytes, int *equal,
                    kf_err *err);

/* The host's half of the reduction: parts 0..n-1 added in that order
 * (counts and sums added, max kept), into *sum. */
void kf_devcmp_combine(const kf_devcmp_part *parts, size_t n, kf_devcmp_part *sum);
/* The blocks a full comparison of n elements launches (each writes one
 * part): at most KF_DEVCMP_MAX_BLOCKS. */
#define KF_DEVCMP_MAX_BLOCKS 2048
#define KF_DEVCMP_THREADS 256
unsigned kf_devcmp_blocks(size_t n);

#endif
