/* compare — an output against its reference, element by element, on host
 * threads: the one comparison of the runner's validation (validate.c, for
 * a kernel's own reference in doubles) and of a candidate's checker
 * (checker.c, for a stored reference file in f64 or f32).
 *
 * Three bounds, each reported with the element that comes closest to
 * breaking it (its index, output and reference values):
 *  - every element finite (a NaN left by the poison is an unwritten one);
 *  - max |out - ref| <= tol_abs and ||out - ref|| / ||ref|| <= tol_rel, the
 *    kernel's or problem's own;
 *  - stated with atol and rtol (issue 41; KernelBench, GPU MODE and
 *    BackendBench judge so): |out - ref| <= atol + rtol * |ref| at every
 *    element, numpy.isclose's rule. The first two still hold, so an output of
 *    zeros fails where atol alone would let it pass (softmax at 16 x 16384:
 *    every value is below KernelBench's 1e-4, but zeros are 1 away in
 *    relative L2).
 * Outputs of a million elements or more are split over up to `threads`
 * threads (16 at most); the partial results are combined in a fixed order,
 * so a given thread count gives one answer. */
#ifndef KF_COMPARE_H
#define KF_COMPARE_H

#include "kf_kernel.h"

#include <stddef.h>
#include <stdint.h>

/* The bytes of one element of dtype t, and element i of data as a double
 * (f16 and bf16 exactly). */
size_t kf_cmp_dtype_size(kf_dtype t);
/* Its name as reports show it: "f32", "f64", "f16", "bf16", "i32"; "" for
 * a value outside the enum. */
const char *kf_cmp_dtype_name(kf_dtype t);
double kf_cmp_elem(const void *data, kf_dtype t, size_t i);

/* The bounds of a check. */
typedef struct kf_tols {
    double abs, rel;
    int close;         /* 1: atol and rtol are stated */
    double atol, rtol; /* with close */
} kf_tols;

/* What a comparison measured. */
typedef struct kf_cmp {
    uint64_t n, nonfinite, ref_nonzero;
    double max_abs, rel;
    uint64_t max_abs_at; /* the element of max_abs, and its values */
    double max_abs_out, max_abs_ref;
    /* With close: elements outside atol + rtol |ref|, and the worst one
     * (the largest |out - ref| / (atol + rtol |ref|): above 1 fails). */
    uint64_t not_close;
    double close_ratio;
    uint64_t close_at;
    double close_out, close_ref;
} kf_cmp;

/* Work split over up to 16 threads by index range: fn(ctx, part, lo, hi)
 * for each of kf_par_parts(n, threads) parts, part 0 on the calling
 * thread; a thread that cannot start runs its part here. */
typedef void (*kf_range_fn)(void *ctx, unsigned part, size_t lo, size_t hi);
#define KF_PAR_MAX 16
unsigned kf_par_parts(size_t n, unsigned threads);
void kf_par_ranges(size_t n, unsigned threads, kf_range_fn fn, void *ctx);
/* The same over n items each worth a thread of its own however few there
 * are (a reference file's hash chunks): min(n, threads, KF_PAR_MAX) parts. */
void kf_par_items(size_t n, unsigned threads, kf_range_fn fn, void *ctx);

/* The node's online CPUs. */
unsigned kf_cpus(void);

/* n elements of out (dtype odt) against ref (F64 or F32, rdt) under t. */
void kf_cmp_run(const void *out, kf_dtype odt, const void *ref, kf_dtype rdt, size_t n,
                const kf_tols *t, unsigned threads, kf_cmp *c);

/* A spot check's measures, element by element (the profile guard's and
 * the checker's): the same bounds as kf_cmp_run's, over a few elements
 * at positions the kernel cannot predict. Start from {0}. */
typedef struct kf_cmp_spot {
    uint64_t nonfinite, not_close;
    double max_abs, diff2, ref2;
} kf_cmp_spot;
void kf_cmp_spot_add(kf_cmp_spot *s, const kf_tols *t, double out, double ref);
/* The relative L2 error of what was added; 0 when the reference is 0. */
double kf_cmp_spot_rel(const kf_cmp_spot *s);

/* Whether c meets t: every element finite, the reference not all zeros
 * (a vacuous check), and each stated bound. */
int kf_cmp_passed(const kf_cmp *c, const kf_tols *t);

/* The first bound c breaks, as a sentence with the element that breaks it
 * ("" when it passes). */
void kf_cmp_why(const kf_cmp *c, const kf_tols *t, char *out, size_t len);

#endif
