/* hctx — one task inside a runner process, shared by the runner's files:
 * kernel_ops.c (the frame stream, failing a task, loading and driving a
 * kernel: setup, one run, the output view), validate.c, profile.c (with
 * guard.c, the checks around every timed sample), reference.c (a
 * problem's reference outputs for its secret seeds),
 * nested.c (a second run under ncu or compute-sanitizer) and harness.c (the
 * entry: build, or load and validate / profile). Every file depends on
 * kernel_ops.c; harness.c on the others; nothing calls back. Not a header
 * outside agent/runner/. */
#ifndef KF_HCTX_H
#define KF_HCTX_H

#include "kf_kernel.h"
#include "proto/kfleet.pb-c.h"
#include "runner/cudrv.h"
#include "runner/channel.h"
#include "runner/compare.h"
#include "runner/nvml.h"
#include "runner/thermal.h"

#include <stddef.h>
#include <stdint.h>

#define SAMPLE_BATCH 64
/* The most input sets a profile rotates among. */
#define HCTX_MAX_SETS 16
/* Room for a kernel's own error message: a Python kernel's carries its
 * traceback. */
#define HCTX_KERR_LEN 3072

/* Where a task's time goes in the runner (Result.phases). */
enum {
    HCTX_PH_LOAD,        /* the kernel's library, or the interpreter and module */
    HCTX_PH_CONTEXT,     /* libcuda and the CUDA context */
    HCTX_PH_SETUP,       /* the kernel's setup() calls; validation's teardown() ones */
    HCTX_PH_RUN,         /* validation's runs, waited for */
    HCTX_PH_REFERENCE,   /* the kernel's reference() */
    HCTX_PH_COMPARE,     /* the output fetched and compared */
    HCTX_PH_SAMPLING,    /* the rest of the profile's sampling loop: streaming the
                          * samples, noise checks, bookkeeping */
    HCTX_PH_TOOLS,       /* the run again under ncu or compute-sanitizer */
    HCTX_PH_BUILD,       /* the compiler */
    HCTX_PH_SAMPLES,     /* the samples themselves as timed, kept or discarded */
    HCTX_PH_THROTTLE,    /* waits for a throttled GPU to recover (measure: throttle) */
    HCTX_PH_LAUNCH,      /* enqueuing each sample: L2 flush, blocker, stamps, events,
                          * the kernel's launches (host time) */
    HCTX_PH_SYNC,        /* waiting for each sample beyond its timed interval: the
                          * flush's and stamps' device time, the host's wake-up */
    HCTX_PH_CLOCKS,      /* NVML clock and event reads judging each sample */
    HCTX_PH_WARMUP,      /* the profile's outside-stream probes and run to a steady clock */
    HCTX_PH_DETERMINISM, /* validation's second run of the first seed, fetched and
                          * compared bitwise */
    HCTX_PH_REST,        /* the burst protocol's rests before samples (thermal.h) */
    HCTX_PH_HOSTWAIT,    /* a host profile waiting for the machine (harness.h's lock) */
    HCTX_PH_FIRST,       /* the profile's warm-up runs: a process's first calls of the
                          * kernel (a JIT's load, lazy module loading) */
    HCTX_PH_START,       /* a runner's first task: from the agent starting it (its
                          * checker, the fork and exec or the warm runner's forks, the
                          * sandbox's group and mounts) to the task's first step;
                          * before, and not in, the task's elapsed_s */
    HCTX_NPHASES
};
extern const char *const hctx_phase_names[HCTX_NPHASES];

struct hctx_check; /* below: a check's measures */

/* Kernel names a profile's Result keeps, most time first. */
#define HCTX_MAX_LAUNCHES 16

typedef struct hctx {
    const Kfleet__TaskAssign *ta;
    const Kfleet__TaskSpec *spec;
    const char *workdir;
    /* Where the task's own files go (task.pb of a nested run, ncu's CSV,
     * the sanitizer's logs): the runner's scratch dir, which its sandbox
     * lets it write, else WORKDIR/tmp. */
    char tmpdir[PATH_MAX];
    /* Starts ncu and compute-sanitizer for a sandboxed runner (toolhost.h);
     * NULL: they are started here. */
    struct kf_toolhost *toolhost;
    int out_fd;
    Kfleet__Result *res;
    Kfleet__Sample *pending; /* samples not yet flushed */
    size_t npending;
    uint32_t seq;
    uint64_t last_flush;
    char err[4096];
    kf_cudrv *cu;    /* NULL for host kernels */
    kf_nvml *nv;     /* NULL without NVML */
    int nv_tried;    /* hctx_telemetry_open ran */
    size_t tel_sent; /* readings streamed so far (= next seq) */
    uint32_t throttled_samples;
    char uuid[64];
    char sanitizer[4096]; /* the Result's sanitizer verdict */
    double phase_s[HCTX_NPHASES];
    /* Host memory the task's checks reuse: the device output fetched, the
     * reference. First touching fresh memory cost more than the comparison
     * on the GPU machine (docs/benchmarks.md), so it is paid once per task,
     * not per seed and re-check. Freed when the task ends. */
    void *host_out;
    size_t host_out_cap;
    void *host_ref;
    size_t host_ref_cap;
    /* The profile's input sets' whole references, kept by the guard for
     * the re-checks (guard.c), reused between tasks as host_ref is. */
    void *host_set[HCTX_MAX_SETS];
    size_t host_set_cap[HCTX_MAX_SETS];
    /* A candidate's task (candidate.c): hctx_load_kernel is loading the
     * problem; the checker every check's output goes to (NULL otherwise). */
    int loading_problem;
    struct kf_checker *checker;
    /* Sends an output of a candidate's state to the checker (candidate.c
     * sets it when it connects to one) and fills *c with its answer, which
     * is the check (PASS or FAIL: its measures NaN, they are the agent's):
     * 0, or -1 with the task failed. */
    int (*judge)(struct hctx *h, const void *state, const void *out, const kf_view *v,
                 struct hctx_check *c);
    /* The guard's spot check of a candidate's state by the checker
     * (kf_checker_spot): n values at positions `at`, *passed its answer;
     * 0, or -1 with the task failed. */
    int (*spot)(struct hctx *h, const void *state, const uint64_t *at, const double *values,
                size_t n, int *passed);
    /* Whether the state has nothing spot could judge it by (fresh inputs,
     * which have no reference): the guard then fetches nothing, and spot
     * is never asked. Set with spot. */
    int (*spot_blind)(const void *state);
    /* Where a device output of `bytes` is fetched to: the checker's shared
     * buffer (candidate.c), so that a gigabyte output is not copied a
     * second time to reach it; NULL (or its NULL): h->host_out. */
    void *(*out_buffer)(struct hctx *h, size_t bytes);
    /* A candidate's fresh inputs (issue 43 item 3, candidate.c): new
     * contents for a state's inputs from the problem's setup() alone, from
     * an unpredictable seed (pool < 0: no reference judges the state) or
     * from the pool's seed `pool` (an audit); NULL where the problem does
     * not allow it (a C problem, fresh_inputs = False). 0, or -1 with the
     * task failed. */
    int (*refresh)(struct hctx *h, void *state, int pool);
    /* The unpredictable seeds refresh drew, for the agent to scrub from the
     * task's text (Result.fresh_seeds); freed with the task. */
    uint64_t *fresh_seeds;
    size_t nfresh_seeds, capfresh_seeds;
    /* The comparison on the GPU (devcmp.h), loaded at the first device
     * check of the task; harness.c destroys it with the task. */
    struct kf_devcmp *devcmp;
    /* Where the task's checks run (Result.compare), set and logged
     * (runner.compare) at its first: "device", or "host: " and why. */
    char compare[96];
    /* The bounds of this task's checks (hctx_tolerances), for its
     * configuration and output dtype; tol_set once known. */
    kf_tols tol;
    int tol_set;
    int fit_checked; /* the configuration's size checked against the node (hctx_setup) */
    /* What the profile's samples launched (ProfileStats.launches): the
     * messages live here, with the task, until its Result is sent. */
    kf_cupti_launch launch[HCTX_MAX_LAUNCHES];
    Kfleet__Launch launch_msg[HCTX_MAX_LAUNCHES], *launch_ptr[HCTX_MAX_LAUNCHES];
} hctx;

/* *buf with room for n bytes (content not kept when it grows), or NULL out
 * of memory: the task's reused host buffers. */
void *hctx_host_buffer(void **buf, size_t *cap, size_t n);
/* Loads the CUPTI timer (cudrv.h) at a runner's first profile (16 ms on an
 * H200; never for validation), the sandbox already closed; once per
 * runner. Without it samples keep their events' time and the log says
 * why. 0, or -1 with the task failed (KF_TIMER neither cupti nor events). */
int hctx_timer_open(hctx *h);
/* The node's compiled harness modules (cubins.h) from the work dir, for
 * kf_cudrv_open; NULL (said at debug) when there are none to use. Read it
 * before the sandbox closes the work dir. */
kf_cubins *hctx_cubins_read(const hctx *h);
/* Adds the time since t0 (kf_mono_ns) to phase `ph`. */
void hctx_phase_add(hctx *h, int ph, uint64_t t0);
/* Adds seconds to phase `ph`. */
void hctx_phase_add_s(hctx *h, int ph, double seconds);

typedef struct loaded {
    void *dl;
    const kf_kernel *k;
    kf_params params;
    /* The kernel's kf_reference_device (kf_kernel.h), NULL when it has
     * none (and for every Python kernel and candidate). */
    kf_reference_device_fn refdev;
    /* Its tolerances for a configuration and dtype (kf_kernel.h's
     * kf_tolerances; a Python kernel's atol, rtol and tolerances()), NULL
     * when its tol_abs and tol_rel are all. */
    kf_tolerances_fn tolfn;
    /* A Python kernel's reference written straight in f32 (kf_pyk_reference_f32)
     * for a reference the file keeps in f32 (reffile.h): half the memory of
     * doubles, no widening and narrowing back; NULL for a C kernel. */
    int (*reference_f32)(void *state, float *ref, char *err, size_t errlen);
} loaded;

/* kernel_ops.c */
/* hctx_add_sample's `discarded`: why a sample is stored but not in the
 * statistics (Sample.discarded, Sample.audit). */
enum { HCTX_SAMPLE_KEPT = 0, HCTX_SAMPLE_THROTTLED = 1, HCTX_SAMPLE_AUDIT = 2 };
/* Queues one sample for the frame stream (flushed in batches): its time,
 * the input set its (first) run used, whether NVML saw a throttling
 * reason, whether it is out of the statistics and why (HCTX_SAMPLE_), and
 * the SM clock and power as it ended (0: no NVML). */
int hctx_add_sample(hctx *h, double seconds, uint32_t input_set, int throttled, int discarded,
                    uint32_t sm_mhz, uint32_t power_mw);
/* Sends the queued samples and the NVML readings taken meanwhile. */
int hctx_flush_samples(hctx *h);
/* Ends the task in `state` with the message; returns -1 for the caller to
 * return. */
int hctx_fail(hctx *h, int state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* What a message calls h->spec->kernel: "candidate" in a candidate's task
 * (its spec names a problem, docs/problems.md), "problem" in a reference
 * task (which loads only the problem), else "kernel". */
const char *hctx_who(const hctx *h);
/* In a candidate's task the problem (spec->problem_kernel) owns setup()
 * and output(): " of problem P", in buf, for a message about them ("output()
 * of problem P after run() ..."); else "". */
const char *hctx_problem_of(const hctx *h, char *buf, size_t len);
void hctx_tail_lines(const char *path, int lines, char *out, size_t len);
/* Loads the built kernel of the task's spec, and libcuda for a CUDA one. */
int hctx_load_kernel(hctx *h, loaded *L);
/* The task's parameters into L (they point into h->spec). */
void hctx_set_params(const hctx *h, loaded *L);
size_t hctx_dtype_size(kf_dtype t);
/* Element i of a host buffer of dtype t, as a double. */
double hctx_elem(const void *data, kf_dtype t, size_t i);
/* The output on the host (a device view copied; *owned: the caller frees). */
int hctx_fetch_output(hctx *h, const loaded *L, void *state, const kf_view *v, void **host,
                      int *owned);
/* 0 when output() still names v after a run (the view poisoned before
 * it), else -1 with the task failed: hctx_fetch_output's first step, and
 * the device checks' (which fetch nothing). */
int hctx_output_same(hctx *h, const loaded *L, void *state, const kf_view *v);
/* Fills the output with 0xFF bytes (NaN for floats) before a run. */
int hctx_poison(hctx *h, const kf_view *v);
/* One run, waited for: device faults surface here with the driver's name. */
int hctx_run_once(hctx *h, const loaded *L, void *state);
int hctx_setup(hctx *h, const loaded *L, uint64_t seed, void **state);

/* validate.c, profile.c, nested.c */
/* One run checked against the kernel's reference on the same inputs: the
 * output poisoned first (unwritten elements read as NaN), every element
 * finite, max-abs and relative-L2 error within the kernel's tolerances. */
typedef struct hctx_check {
    uint64_t nonfinite;
    uint64_t ref_nonzero; /* reference elements != 0: none makes the check vacuous */
    double max_abs, rel;
    int passed;
    /* A host comparison's whole measure (compare.h): the element of each
     * bound, the elements outside atol + rtol |ref|; located = 1 then. */
    kf_cmp m;
    int located;
} hctx_check;
/* The comparison of n output elements with the reference under t (NULL:
 * no close bound): c->nonfinite, max_abs, rel and the located measure m
 * (not `passed`). Outputs of a million elements or more are split over up
 * to `threads` threads, 8 at most (the CPU work a validation holds its GPU
 * slot for); the partial sums are added in a fixed order, so a given
 * thread count gives one answer. */
void hctx_compare(const void *out, kf_dtype dtype, const double *ref, size_t n, unsigned threads,
                  const kf_tols *t, hctx_check *c);
/* The task's tolerances for output dtype `out` into h->tol (once): the
 * kernel's tol_abs and tol_rel, changed for this configuration and dtype
 * by its L->tolfn; refused when they cannot fail (common/tolerance.h).
 * Result.tol_abs, tol_rel, close, atol, rtol set. 0, or -1 with the task
 * failed. */
int hctx_tolerances(hctx *h, const loaded *L, kf_dtype out);
/* Sets `bytes` of ref to all bits one (a NaN in every f64 or f32 element),
 * split over threads as the comparison is: a reference is NaN wherever
 * reference() writes nothing. */
void hctx_nan_fill(void *ref, size_t bytes);
/* Where a check of output v runs: 1 on the GPU (a device output, the
 * kernel defines kf_reference_device, not a candidate's task, and
 * KF_COMPARE is not "host"), 0 on the host, -1 with the task failed
 * (KF_COMPARE is neither "host" nor "device"). The first answer of a task
 * is logged (runner.compare), so an A/B run says which way it went. */
int hctx_compare_on_device(hctx *h, const loaded *L, const kf_view *v);
/* The device reference of state's current inputs: *dref (n doubles of
 * device memory, freed with kf_cudrv_free by the caller) filled with NaN,
 * then kf_reference_device, then the whole context waited for. 0, or -1
 * with the task failed. */
int hctx_device_reference(hctx *h, const loaded *L, void *state, size_t n, double **dref);
/* The task's device comparison (h->devcmp, loaded once); NULL with the
 * task failed. */
struct kf_devcmp *hctx_devcmp(hctx *h);
/* 0 with *c filled and the output in *out (*owned: the caller frees it; a
 * device output is in h->host_out, valid until the next fetch; NULL when
 * the check ran on the GPU, hctx_compare_on_device);
 * -1 when the run or the reference failed (the task failed, h says why).
 * `known`: the reference of these same inputs computed before (the
 * profile's guard keeps its sets'), else NULL to compute it (after the
 * run on the host; before it on the GPU, waited for, so the kernel's
 * reference code cannot touch the output the check reads). For a check on
 * the GPU, `known` is device memory (hctx_guard_reference says which). */
int hctx_run_and_check(hctx *h, const loaded *L, void *state, const kf_view *v, const double *known,
                       hctx_check *c, void **out, int *owned);
int hctx_validate(hctx *h, const loaded *L);
/* 0 when the kernel's tolerances can fail a validation (kf_tol_vacuous);
 * else -1 with the task failed and why, before the kernel runs. */
int hctx_refuse_vacuous(hctx *h, const loaded *L);
int hctx_profile(hctx *h, const loaded *L, Kfleet__ProfileStats *ps);
/* reference.c: a reference task, the problem's reference for each of
 * h->spec->seeds into h->res->references (docs/problems.md); 0, or -1 with
 * the task failed. hctx_reference_free frees what it put in the Result. */
int hctx_reference(hctx *h, const loaded *L);
void hctx_reference_free(Kfleet__Result *res);
/* candidate.c: a candidate's validate or profile (docs/problems.md). Loads
 * the problem (its setup, output, inputs), connects to the checker the
 * agent started (KF_RUNNER_FD_CHECKER), then loads the candidate; L then
 * drives problem and candidate as one kernel whose outputs the checker
 * judges. 0, or -1 with the task failed. */
int hctx_candidate_load(hctx *h, loaded *L);
/* The next task of the candidate a serving runner loaded (the same kernel
 * and problem hashes, else the task fails): the checker reconnected on
 * the socket the agent passed with it (have_checker: it did; placed at
 * KF_RUNNER_FD_CHECKER), the task's seeds in use. 0, or -1 with the task
 * failed. */
int hctx_candidate_resume(hctx *h, int have_checker);
/* Whether the task is a candidate's (its spec names a problem). */
int hctx_is_candidate(const Kfleet__TaskSpec *spec);
/* Ends the checker's checks: every verdict written before the Result. */
void hctx_candidate_finish(hctx *h);
/* telemetry.c: NVML at 20 Hz beside a GPU profile (without NVML the
 * profile still runs, with no telemetry and nothing flagged); its readings
 * streamed after each sample batch, and their summary. NVML is opened
 * first (open, before the warm-up, which reads the clock), once a task. */
void hctx_telemetry_open(hctx *h);
/* The thermal protocol's clocks from NVML, opened: the default SM clock,
 * the throttle threshold (thr_pct % of it) and the clock now, which the
 * warm-up may end at (thermal.h); nothing without NVML. */
void hctx_telemetry_clocks(hctx *h, kf_thermal *tp, double thr_pct);
void hctx_telemetry_start(hctx *h);
int hctx_telemetry_drain(hctx *h);
/* The profile's launches by kernel name (kf_cudrv_launches) into ps, kept
 * in h (ProfileStats.launches). */
void hctx_launches(hctx *h, Kfleet__ProfileStats *ps);
void hctx_summarize_telemetry(hctx *h, Kfleet__TelemetrySummary *ts);
/* The run a tool watches: setup, a warm-up, then `runs` launches inside the
 * profiler range. */
int hctx_nested(hctx *h, const loaded *L, unsigned runs);
int hctx_ncu(hctx *h);
int hctx_sanitize(hctx *h);

#endif
