/* kf_kernel.h — the kfleet kernel plugin ABI, version 1.
 *
 * A kernel is one source file (.c for a host kernel, .cu for a CUDA kernel)
 * that includes this header and defines
 *
 *     const kf_kernel *kf_kernel_get(void);
 *
 * with C linkage. The agent compiles it into a shared object, dlopens it in a
 * runner process, and drives it: setup → (poison output) → run → compare the
 * output with the kernel's own reference → teardown. The harness does the
 * timing, the statistics, the poisoning and the error metrics, so a kernel
 * only says how to prepare its data, what to run, and what the right answer is.
 *
 * This header is shipped with every kernel's sources to the agents; it must
 * stay self-contained (only the C standard library).
 *
 * Rules:
 *  - setup allocates everything run needs; run does only the timed work.
 *    Inputs are made from `seed` so validation trials differ. A profile sets
 *    up two or more states from secret seeds and runs them in turn (never
 *    one state twice in a row), and before every timed sample poisons the
 *    output and after it checks some of its elements against the reference:
 *    each state holds its own inputs and output, and every run does its
 *    work (work skipped because the inputs or the output look unchanged
 *    fails the profile).
 *  - output() names the buffer the harness checks and poisons. For a CUDA
 *    kernel it is device memory (location KF_LOC_DEVICE). It is asked before
 *    a run and again after it, and must name the same buffer both times.
 *  - A host kernel's work is done when run() returns. Work left on a thread
 *    of the kernel's (finished in output()) is found by the profile, timed
 *    anyway and flagged outside-stream, as work on a CUDA stream other than
 *    stream 0 is.
 *  - reference() writes the expected output as doubles (count elements),
 *    computed independently of run (in higher precision where it matters).
 *    A reference of all zeros fails validation as vacuous.
 *  - tol_abs and tol_rel must be able to fail: a non-finite or negative one,
 *    or tol_rel >= 1 (which an output of zeros meets), is refused before the
 *    kernel runs.
 *  - bytes/flops are the algorithmic traffic and work of one run, used for
 *    GB/s and GFLOP/s in reports; a row faster than the node can move those
 *    bytes or do those FLOPs is flagged impossible.
 *  - CUDA kernels launch on the legacy default stream (stream 0) and never
 *    synchronize in run(): the harness brackets run() with events on that
 *    stream behind a blocking kernel, so a synchronizing call in run() would
 *    wait for the host that waits for it (bounded at 1 s, and timed).
 *  - Every function returns 0 or a negative value, filling err (a short
 *    message) on failure.
 */
#ifndef KF_KERNEL_H
#define KF_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KF_KERNEL_ABI_VERSION 1
#define KF_KERNEL_MAX_PARAMS 16

typedef struct kf_params {
    int count;
    const char *names[KF_KERNEL_MAX_PARAMS];
    int64_t values[KF_KERNEL_MAX_PARAMS];
} kf_params;

/* The value of parameter `name`, or `fallback` when the sweep did not set it. */
static inline int64_t kf_param(const kf_params *p, const char *name, int64_t fallback)
{
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->names[i], name) == 0)
            return p->values[i];
    return fallback;
}

typedef enum { KF_DTYPE_F32 = 0, KF_DTYPE_F64, KF_DTYPE_F16, KF_DTYPE_BF16, KF_DTYPE_I32 } kf_dtype;
typedef enum { KF_LOC_HOST = 0, KF_LOC_DEVICE = 1 } kf_location;

typedef struct kf_view {
    void *data;
    size_t count; /* elements */
    kf_dtype dtype;
    kf_location location;
} kf_view;

typedef struct kf_kernel {
    uint32_t abi_version; /* KF_KERNEL_ABI_VERSION */
    const char *name;
    const char *description;
    /* Validation passes when every element is finite, the max absolute error
     * is <= tol_abs, and ||out - ref|| / ||ref|| <= tol_rel. */
    double tol_abs;
    double tol_rel;
    int deterministic; /* 1: two runs must agree bitwise */

    int (*setup)(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen);
    int (*run)(void *state, char *err, size_t errlen);
    int (*output)(void *state, kf_view *out);
    int (*reference)(void *state, double *ref, char *err, size_t errlen);
    double (*bytes)(const kf_params *p);
    double (*flops)(const kf_params *p);
    void (*teardown)(void *state);
} kf_kernel;

typedef const kf_kernel *(*kf_kernel_get_fn)(void);
#define KF_KERNEL_SYMBOL "kf_kernel_get"

/* The reference on the device (optional, CUDA kernels; ABI version 1 as
 * is). A kernel whose output is device memory may also define, with C
 * linkage,
 *
 *     int kf_reference_device(void *state, double *dref, char *err, size_t errlen);
 *
 * which writes the same expected output as reference() (count doubles, the
 * same rules: independent of run, higher precision where it matters) into
 * DEVICE memory dref that the harness allocated and filled with NaN, its
 * work enqueued on stream 0 (the harness waits for the whole context
 * before reading it, and calls it before the run it checks, so it never
 * sees that run's output). The harness then compares on the GPU with its
 * own kernel, so the output and the reference never cross to the host. A
 * kernel without it is checked on the host through reference(), which it
 * must still define; KF_COMPARE=host in the agent's environment makes the
 * runner use reference() even where this exists. */
typedef int (*kf_reference_device_fn)(void *state, double *dref, char *err, size_t errlen);
#define KF_REFERENCE_DEVICE_SYMBOL "kf_reference_device"

/* Tolerances as people state them (optional; ABI version 1 as is). A kernel
 * or a problem may also define, with C linkage,
 *
 *     int kf_tolerances(const kf_params *p, kf_dtype out, kf_tol *t,
 *                       char *err, size_t errlen);
 *
 * which the harness calls once per configuration with t filled with the
 * kernel's tol_abs and tol_rel and close = 0, and the dtype of its output:
 * it may change any of them for that configuration and dtype. With close =
 * 1, atol and rtol add numpy.isclose's element-wise bound, |out - ref| <=
 * atol + rtol |ref| at every element (KernelBench, GPU MODE and
 * BackendBench judge so); the max-abs and relative-L2 bounds still hold
 * (tol_abs may then be INFINITY; tol_rel must stay below 1, so an output
 * of zeros fails where atol alone would let it pass). A Python kernel
 * states the same with `atol`, `rtol` and `tolerances(params, dtype)`
 * returning a dict of any of tol_abs, tol_rel, atol, rtol
 * (docs/python-kernels.md). Returns 0, or -1 with err. */
typedef struct kf_tol {
    double tol_abs, tol_rel;
    int close;
    double atol, rtol;
} kf_tol;
typedef int (*kf_tolerances_fn)(const kf_params *p, kf_dtype out, kf_tol *t, char *err,
                                size_t errlen);
#define KF_TOLERANCES_SYMBOL "kf_tolerances"

/* Problems and candidates (docs/problems.md).
 *
 * A problem is a kf_kernel whose setup makes the inputs from the secret
 * seed, whose reference and tolerances judge, and whose run (optional for a
 * problem) may be the plain implementation. It also defines
 *
 *     int kf_problem_inputs(void *state, kf_view *in, size_t max, size_t *n);
 *
 * naming the input buffers (at most `max`, *n of them) that a candidate
 * reads. A candidate defines only the computation:
 *
 *     const kf_candidate *kf_candidate_get(void);
 *
 * prepare() gets the problem's inputs and output views (never the seed, the
 * reference or the tolerances) and may allocate scratch; run() does the
 * timed work into out; release() frees the scratch. A candidate that names
 * kf_kernel_get, tol_abs, tol_rel or a .reference member is refused at
 * submit. */
typedef struct kf_candidate {
    uint32_t abi_version; /* KF_KERNEL_ABI_VERSION */
    const char *name;
    const char *description;
    int (*prepare)(void **scratch, const kf_params *p, const kf_view *in, size_t nin,
                   const kf_view *out, char *err, size_t errlen);
    int (*run)(void *scratch, const kf_view *in, size_t nin, const kf_view *out, char *err,
               size_t errlen);
    void (*release)(void *scratch);
} kf_candidate;

typedef const kf_candidate *(*kf_candidate_get_fn)(void);
typedef int (*kf_problem_inputs_fn)(void *state, kf_view *in, size_t max, size_t *n);
#define KF_CANDIDATE_SYMBOL "kf_candidate_get"
#define KF_PROBLEM_INPUTS_SYMBOL "kf_problem_inputs"
#define KF_PROBLEM_MAX_INPUTS 16

#ifdef __cplusplus
}
#endif
#endif
