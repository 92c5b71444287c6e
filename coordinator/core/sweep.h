/* sweep — the sweep file (YAML): what to run, on which nodes, how to measure.
 *
 *   name: quickstart
 *   kernels:
 *     - triad                       # by name: KERNELS_DIR/host/triad.c or cuda/triad.cu
 *     - name: matmul
 *       params: {n: [128, 256], block: [16, 32]}
 *     - path: ./my_kernel.c         # by path, relative to the sweep file
 *       flags: [-O3]
 *   params: {n: [1M, 4M]}           # axes for every kernel that has none of its own
 *   tasks: [build, validate, profile]
 *   nodes: any                      # or all (each configuration on every agent)
 *   baseline: matmul
 *   attempts: 3
 *   time_limit: 120s
 *   memory_limit: 16G               # each runner's memory (default: the agent's)
 *   measure: {min_samples: 10, min_time: 0.5s, max_noise: 0.5, timeout: 15s,
 *             warmup: 1, hot: false, seeds: 3, batch: 1,
 *             sanitize: false, ncu: [gpu__time_duration.sum]}
 *
 * Or a problem and its candidates (docs/problems.md): the problem owns the
 * inputs, the reference, the tolerances and the secret seeds; a candidate
 * brings only the computation, and one that declares any of those is
 * refused here, with its file, line and reason:
 *
 *   problem: {path: problem.py, params: {rows: [64], cols: [256]},
 *             seeds: 3, renew: 24h}
 *   candidates: [numpy_naive.py, {path: numpy_fast.py}]
 *   baseline: numpy_naive
 *   refused: fail           # refused candidates as failed rows; stop (default): none run
 *
 * Or a whole level (sweep_level.c): problems: a directory or glob of
 * problems, each candidate entry a path pattern with {name} (and {dir}) put
 * in per problem; a problem sweep per problem in spec->parts:
 *
 *   problems: level1/
 *   candidates: [{name: torch, path: "level1/{name}.py"}, "gen/{name}_v*.py"]
 *
 * Parameter values are integers, optionally with a K/M/G suffix (powers of
 * 1024), or a range map {from: A, to: B, mul: M} / {from: A, to: B, step: S}.
 * The configurations of a kernel are the cartesian product of its axes.
 * Every error names file:line:column and nothing is submitted. */
#ifndef KF_SWEEP_H
#define KF_SWEEP_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

#define KF_SWEEP_MAX_AXES 16
#define KF_SWEEP_MAX_CONFIGS 1000000

typedef struct kf_sweep_axis {
    char *name;
    int64_t *values;
    size_t nvalues;
} kf_sweep_axis;

/* The Python packages the scheduler matches kernels and nodes on. */
#define KF_SWEEP_PY_PACKAGES 4
extern const char *const kf_sweep_py_packages[KF_SWEEP_PY_PACKAGES];

/* The most files one torch extension may name. */
#define KF_SWEEP_MAX_EXT 32

typedef struct kf_sweep_kernel {
    char *name; /* kernel name (file stem for a path) */
    char *path; /* absolute path of the source file */
    int cuda;   /* 1 for a .cu source, or a Python one that says device = "cuda" */
    int python; /* 1 for a .py source (docs/python-kernels.md) */
    /* A Python source says its device (a device = line): a candidate that
     * does not runs where its problem does (sweep_problem.c). */
    int device_said;
    /* The kf_sweep_py_packages a Python kernel imports, bit i for entry i:
     * its tasks go only to agents whose Python has them. */
    unsigned py_needs;
    /* A Python kernel's torch extension: the source files its
     * `extension = [...]` line names, beside the kernel (plain names). */
    char **ext;
    size_t next;
    /* A Python kernel's own files (modules it imports, data it reads): the
     * plain names its `files = [...]` line lists, beside the kernel. They
     * travel with it, enter its hash, and sit beside it on the node. */
    char **files;
    size_t nfiles;
    /* Where each of files is read from, relative to the kernel's
     * directory, when that is not its name (NULL entries, or NULL): GPU
     * MODE's task.yml names ../utils.py as utils.py. */
    char **file_src;
    kf_sweep_axis *axes;
    size_t naxes;
    char **flags;
    size_t nflags;
    int line, col; /* where the kernel was named */
    /* A candidate of the sweep's problem: it runs the problem's
     * configurations and is judged by the problem's reference. */
    int candidate;
    /* A problem's format (KF_FORMAT_*): kfleet's own, or a KernelBench or
     * GPU MODE file as it is (docs/problems.md); a candidate has its
     * problem's. */
    int format;
    /* A candidate refused at submit (the candidate contract) and kept
     * because the sweep says `refused: fail` (or --keep-going): why, as
     * "FILE:LINE:COL: ...". Its tasks are failed rows with this error, and
     * nothing of it runs. NULL for every other kernel. */
    char *refused;
} kf_sweep_kernel;

enum { KF_FORMAT_KFLEET = 0, KF_FORMAT_KERNELBENCH = 1, KF_FORMAT_GPUMODE = 2 };

/* The seed policy of a problem: how many secret seeds the coordinator keeps
 * in its pool, and after how long it draws new ones (the references of the
 * retired seeds are then no longer used). */
#define KF_SWEEP_DEFAULT_SEED_POOL 3
#define KF_SWEEP_MAX_SEED_POOL 64
#define KF_SWEEP_DEFAULT_SEED_RENEW_S (24.0 * 3600.0)

typedef struct kf_sweep_measure {
    uint32_t min_samples;
    double min_time_s;
    double max_noise_pct; /* the noisy flag's spread limit (no longer a stop) */
    double precision_pct; /* the stopping rule's: the median to +-this % at 95 % */
    double min_span_s;    /* the samples' least wall time; 0: the agent's; < 0: none */
    double timeout_s;
    uint32_t warmup;
    int hot;
    uint32_t seeds;
    uint32_t batch;
    int sanitize;                  /* validate under compute-sanitizer (memcheck, racecheck) */
    char **ncu;                    /* Nsight Compute metrics collected with each profile */
    int throttle_keep;             /* keep samples taken while throttled */
    double throttle_threshold_pct; /* 0: the agent's 75 % */
    double throttle_recovery_s;    /* 0: the agent's 50 ms */
    int thermal_sustained;         /* thermal: sustained (no rests; burst by default) */
    size_t nncu;
} kf_sweep_measure;

typedef struct kf_sweep_spec {
    char *name;
    char *file; /* path as given */
    char *text; /* the YAML text, stored with the sweep */
    kf_sweep_kernel *kernels;
    size_t nkernels;
    int tasks; /* the sweep_bit of each task kind it asks for (common/taskkind.h) */
    int nodes_all;
    char *baseline; /* NULL when none */
    uint32_t max_attempts;
    double time_limit_s;
    uint64_t memory_limit; /* each runner's memory limit, bytes; 0: the agent's default */
    kf_sweep_measure measure;
    /* The problem the kernels are candidates of (docs/problems.md), or NULL:
     * each kernel is its own problem. */
    kf_sweep_kernel *problem;
    uint32_t seed_pool;  /* secret seeds kept per problem */
    double seed_renew_s; /* the pool's renewal period */
    /* problem:'s atol: and rtol: (KernelBench and GPU MODE problems only):
     * the check every task of the sweep is judged by, for the file's. */
    int tol_override;
    double tol_atol, tol_rtol;
    /* kfleet run --price: per GPU-hour of nodes that give none; 0: none. */
    double price_per_gpu_hour;
    /* `refused: fail` (or --keep-going): refused candidates are kept, as
     * failed rows, while the others run; else one refusal stops the parse. */
    int refused_fail;
    /* A sweep of many problems (`problems:`, docs/sweep-format.md): one
     * problem sweep per problem that has candidates, in the order the
     * problems were found, each whole (its own name "NAME.PROBLEM", the
     * sweep's settings); this spec then has no kernels and no problem of
     * its own. Each is submitted as a sweep of its own. */
    struct kf_sweep_spec **parts;
    size_t nparts;
    /* The level's problems left without a candidate, or a candidate pattern
     * that matched nothing for a problem: one line each, "FILE:LINE:COL:
     * problem P: ..." (the pattern's place in the sweep). Not an error. */
    char **missing;
    size_t nmissing;
} kf_sweep_spec;

/* How a parse treats what it refuses without stopping: each refused
 * candidate's message goes to on_refused as it is found (all of them, not
 * only the first), and keep_going keeps them as failed rows, as the
 * sweep's own `refused: fail` does. A NULL opts is {0}. */
typedef struct kf_sweep_parse_opts {
    int keep_going;
    void (*on_refused)(void *ctx, const char *msg);
    void *ctx;
} kf_sweep_parse_opts;

/* Parses a sweep file. kernels_dir is where kernels named without a path are
 * looked up (host/NAME.c, then cuda/NAME.cu). On error returns KF_EINVAL
 * with "FILE:LINE:COL: what; what to do" in err and *out untouched. */
int kf_sweep_parse_file(const char *path, const char *kernels_dir, kf_sweep_spec **out,
                        kf_err *err);
/* Same, from memory; `filename` is used in messages, base_dir resolves paths. */
int kf_sweep_parse_string(const char *text, size_t len, const char *filename, const char *base_dir,
                          const char *kernels_dir, kf_sweep_spec **out, kf_err *err);
/* The two above with opts. Refused candidates that are not kept make the
 * parse fail with KF_EINVAL once every candidate has been read: err is the
 * refusal when there was one, else the count ("3 candidates refused"),
 * with each message given to opts->on_refused (without one: the first
 * message and how many more). */
int kf_sweep_parse_file_opts(const char *path, const char *kernels_dir,
                             const kf_sweep_parse_opts *opts, kf_sweep_spec **out, kf_err *err);
int kf_sweep_parse_string_opts(const char *text, size_t len, const char *filename,
                               const char *base_dir, const char *kernels_dir,
                               const kf_sweep_parse_opts *opts, kf_sweep_spec **out, kf_err *err);
void kf_sweep_destroy(kf_sweep_spec **self);

/* Whether kernel `name` is one of the baselines of `list` (kf_sweep_spec's
 * baseline, the wire's Sweep.baseline: one name, or several separated by
 * commas); 0 for a NULL list. */
int kf_sweep_is_baseline(const char *list, const char *name);

/* Number of configurations of a kernel (product of its axis sizes; 1 with none). */
size_t kf_sweep_kernel_configs(const kf_sweep_kernel *k);
/* The idx-th configuration: names point into k, values written to values[].
 * Returns the number of parameters (k->naxes). Last axis varies fastest. */
int kf_sweep_kernel_config(const kf_sweep_kernel *k, size_t idx, const char **names,
                           int64_t *values);

#endif
