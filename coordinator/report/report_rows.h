/* report_rows — the rows a report is made of: a sweep's stored records
 * collected once (report_rows.c) and the small lookups over them; the
 * report's model (report_model.h) holds them. report_text.c (table,
 * Markdown) renders them and report_json.c builds the model's tree from
 * them (which the JSON, CSV and HTML render). Not an API outside
 * coordinator/report: report.h is. */
#ifndef KF_REPORT_ROWS_H
#define KF_REPORT_ROWS_H

#include "common/buf.h"
#include "common/err.h"
#include "common/stats.h"
#include "common/taskkind.h"
#include "core/store.h"
#include "report/report_opts.h"

#include <stddef.h>
#include <stdint.h>

/* One attempt of a task, kept when it tells something: the task took more
 * than one, or an attempt ended with a note (why it was taken away). */
typedef struct rattempt {
    uint32_t attempt;
    int state;
    char *agent, *note; /* owned */
} rattempt;

/* The spread above which a row is noisy when the sweep gives no max_noise
 * (the agent's KF_DEFAULT_MAX_NOISE_PCT). */
#define KF_REP_MAX_NOISE_PCT 0.5

typedef struct rtask {
    Kfleet__Task *task; /* owned copy */
    /* task's row of the task-kind table, resolved once when collected:
     * what every printer reads (its name, where the report puts it). */
    const kf_task_kind *kind;
    uint32_t nattempts; /* attempts made */
    rattempt *att;      /* NULL when the one attempt says nothing more than the result */
    size_t natt;
    Kfleet__Result *res; /* the terminal record; NULL while not ended */
    double *samples;     /* stored sample times of res->attempt, in seq order (kept ones) */
    uint32_t *clk, *pw;  /* per kept sample: SM clock MHz, power mW as it ended (0: none) */
    uint32_t *set;       /* per kept sample: the input set it ran on (stats by set) */
    size_t nsamples, cap;
    size_t nthrottled; /* kept samples NVML saw throttled */
    size_t ndiscarded; /* samples the throttle policy discarded */
    size_t naudit;     /* a candidate's audit samples (Sample.audit): checked, not timed */
} rtask;

/* A row's missing speedup (rrow.nobase): the baseline was not measured
 * on the row's node (MISSING), its row there did not pass (FAILED: v and
 * p its validate and profile, either NULL), or is impossible (IMPOSSIBLE:
 * by x times the node's `of`). */
enum { KF_REP_NOBASE_MISSING = 1, KF_REP_NOBASE_FAILED, KF_REP_NOBASE_IMPOSSIBLE };
typedef struct rnobase {
    int why;
    uint32_t kernel; /* the baseline kernel */
    const rtask *v, *p;
    double x;
    const char *of;
} rnobase;

typedef struct rrow {
    uint32_t kernel, config;
    const char *node; /* points into a task or result of the rep */
    /* Resolved once when collected, so no renderer looks them up again:
     * the kernel's KernelRef (NULL: none), the node's agent (NULL: never
     * registered), the kernel's name in the sweep, the name it declares
     * itself when another (kf_rep_declared_name, else NULL), its device
     * (kf_rep_device_of). */
    const Kfleet__KernelRef *kref;
    const Kfleet__AgentInfo *agent;
    const char *kernel_name, *declared, *device;
    rtask *validate, *profile;
    kf_stats st;                               /* st.n == 0: no successful profile */
    double gbps, gflops, speedup, base_median; /* NAN when not applicable */
    double speedup_err;                        /* one standard error of the speedup */
    /* What a caller pays per call (ProfileStats.host_call_s) and the
     * speedup by it against the same baseline row (issue 41 item 5); NAN
     * where either has none. */
    double host_call_s, speedup_host;
    /* Why a row with a timed, possible profile has no speedup although a
     * baseline runs its configuration (report_speedup.c); why 0: it has
     * one, or no baseline runs its configuration. */
    rnobase nobase;
    double outlier_pct; /* slower than the nodes' median by this much; NAN: not an outlier */
    /* % of the node's measured ceilings (doctor): copy bandwidth, bf16
     * matrix rate; NAN when the node has none or the row has no figure. */
    double pct_bw, pct_mma;
    /* Impossible (issue 29): the row claims more than the node can do, by
     * impossible_x times the ceiling named by impossible_of ("copy
     * bandwidth", the matrix rate of its output's dtype — "bf16 matrix
     * rate", "fp32 FMA rate", "TF32 matrix rate", "fp64 matrix rate" —,
     * "host copy bandwidth", "host FLOP rate"); its speedup is
     * not shown. impossible_x NAN, impossible_of NULL: not impossible (or no
     * ceiling to judge by). */
    double impossible_x;
    const char *impossible_of;
    int mismatch, noisy;
    /* The median did not reach the precision asked for by the timeout. */
    int imprecise;
    /* Throttle recovery waits skipped: the waits had reached the time the
     * samples measured (agent/runner/thermal.h). */
    uint32_t waits_capped;
    /* Medians over the kept samples as each ended (0: no NVML), and, under
     * `throttle: keep`, whether most of them ran throttled: the median is
     * then the kernel sustained at the power cap. */
    uint32_t sm_clock_mhz, power_mw;
    int at_power_cap;
    double outside_stream_s; /* > 0: timed until work off the timed call ended */
    uint64_t build_task;
    /* Its place among the rows of its configuration on its device, by
     * median (report_rank.h); 0: not ranked (failed, no samples,
     * impossible). */
    uint32_t rank;
    const Kfleet__BuildInfo *build; /* the build on this node, or NULL */
    Kfleet__Result *own_build;      /* a build result of another sweep */
} rrow;

/* Flags w impossible (impossible_x, impossible_of) when its rate passes a
 * ceiling of its node a by the report's factor: a GPU row (cuda) by the
 * copy bandwidth or its output dtype's matrix rate (its profile's
 * output_dtype, its validation's rtol for TF32), a host row by the host
 * copy bandwidth or FLOP rate. w's gbps, gflops, validate and profile are
 * read; a NULL agent flags nothing. */
void kf_rep_judge_possible(rrow *w, int cuda, const Kfleet__AgentInfo *a);

/* How the sweep used its slots, from the stored attempts: what the
 * coordinator's scheduling cost against an ideal packing. */
/* One attempt's hold of a slot, as the coordinator stored it. */
typedef struct rspan {
    char *agent; /* owned */
    uint64_t start_ns, end_ns;
    int gpu; /* a GPU slot's (else a CPU slot's) */
} rspan;

typedef struct rschedule {
    uint64_t first_assign_ns, last_end_ns; /* over all attempts; 0: none */
    rspan *spans;                          /* every attempt with both times, for kf_rep_slot_idle */
    size_t nspans, capspans;
    uint64_t first_gpu_assign_ns;  /* 0: no GPU task */
    double gpu_busy_s, cpu_busy_s; /* summed attempt times (assigned → ended) */
    uint32_t gpu_attempts, cpu_attempts;
    uint32_t gpu_slots; /* GPUs of the agents that ran GPU attempts */
} rschedule;

/* The problem of a problem sweep (docs/problems.md): what the reference
 * every candidate was judged against is and where its seeds come from.
 * Only the policy and the pool's generation are copied here, never a seed:
 * seeds are secret, and a report is read by the candidates' authors. */
typedef struct rproblem {
    const Kfleet__KernelRef *k;      /* the problem's KernelRef (in sw); NULL: no problem */
    uint32_t kernel;                 /* its index in sw->kernels */
    uint32_t seed_pool;              /* the sweep's policy: seeds kept in the pool */
    double seed_renew_s;             /* and the pool's life; 0: never renewed */
    uint32_t generation;             /* the pool in the store now; 0: none stored */
    uint64_t drawn_ns;               /* when that pool was drawn */
    size_t nrefs, nconfigs;          /* stored references, and their configurations */
    uint32_t ref_gen_lo, ref_gen_hi; /* the pool generations they belong to */
} rproblem;

typedef struct rep {
    kf_txn *t;
    Kfleet__Sweep *sw;
    rtask *tasks;
    size_t ntasks, cap;
    rrow *rows;
    size_t nrows;
    Kfleet__AgentInfo **agents;
    size_t nagents, capagents;
    uint32_t counts[KFLEET__TASK_STATE__SKIPPED + 1];
    kf_report_group group_by;
    int provenance;
    rschedule sched;
    rproblem problem; /* report_problem.h; problem.k NULL for a sweep of plain kernels */
} rep;

/* The schedule's derived figures; NAN where they do not apply (no GPU
 * task, sweep not finished). makespan: created → finished. startup:
 * created → the first GPU assignment (registration, builds). ideal: startup
 * + GPU busy time / GPU slots. over_pct: makespan over ideal, in %. */
void kf_rep_schedule_figures(const rep *r, double *makespan_s, double *startup_s, double *ideal_s,
                             double *over_pct);

/* What the slots spent measuring: the kept samples' time of the rows' profiles
 * (of agent a, or all when NULL) and its share of makespan × a's slots (all
 * slots when NULL), in %; NAN while the sweep runs. The rest of the slots'
 * time went to builds, runner starts, setup, references, checks and idling. */
void kf_rep_measured(const rep *r, const Kfleet__AgentInfo *a, double *timed_s, double *pct);

/* A task's runner time: its elapsed_s and, for a runner's first task,
 * the runner's start before it (its "start" phase, which elapsed_s does
 * not hold). */
double kf_rep_runner_s(const Kfleet__Result *res);

/* Where the slot time of a finished sweep went (the slots kf_rep_measured
 * counts): the runners' phases (Result.phases) summed over the tasks that
 * held those slots, by name in first-seen order, then "other in runners"
 * (a runner's time in no phase: frames, exit); the time attempts held a
 * slot outside their runner's own clock and start (dispatch, runner exit,
 * attempts tried again); and the slots' idle time. Returns the number of
 * phases, or 0 while the sweep runs (*total_s = makespan x slots). */
#define KF_REP_MAX_PHASES 24
typedef struct kf_rep_phase {
    const char *name; /* points into a Result */
    double s;
} kf_rep_phase;
size_t kf_rep_slot_time(const rep *r, kf_rep_phase *out, double *total_s, double *outside_s,
                        double *idle_s);

/* A finished sweep's runner time row by row (report_rowtime.c, issue 45):
 * what one candidate-configuration costs, so that the next lever is the
 * rows' own and not hidden in the sweep's sum. Each row that ran a validate
 * or a profile: the two tasks' runner time (kf_rep_runner_s), by phase
 * (the task's kind beside the phase's name; "other": its time in no
 * phase); over those rows the median and mean, the mean by phase and the
 * costliest row's phases, each list largest first. Returns the rows
 * counted: 0 while the sweep runs or when none ran. */
typedef struct kf_rep_rphase {
    const char *task; /* "validate" or "profile" */
    const char *name; /* points into a Result, or "other" */
    double s;
} kf_rep_rphase;
#define KF_REP_MAX_RPHASES (2 * KF_REP_MAX_PHASES + 2)
typedef struct kf_rep_rowtime {
    double median_s, mean_s, costliest_s;
    const rrow *costliest;
    kf_rep_rphase mean[KF_REP_MAX_RPHASES], worst[KF_REP_MAX_RPHASES];
    size_t nmean, nworst;
} kf_rep_rowtime;
size_t kf_rep_row_time(const rep *r, kf_rep_rowtime *out);

/* Where a finished sweep's idle slot time went, slot by slot: each
 * agent's attempts of the slot kind kf_rep_measured counts are laid on its
 * slots (by start; each onto the slot freed last before it), and each slot's idle time is split
 * into start-up (sweep created -> its first attempt), gaps (between its attempts) and tail (its
 * last attempt's end -> sweep finished; a slot that ran nothing is all tail). Fills up to max slots
 * in agent order and *sum with the totals over every slot (agent NULL); returns the number of slots
 * (may exceed max), 0 while the sweep runs (report_schedule.c). */
typedef struct kf_rep_slot {
    const char *agent; /* points into an AgentInfo */
    uint32_t slot, tasks;
    double busy_s, startup_s, gaps_s, tail_s;
} kf_rep_slot;
size_t kf_rep_slot_idle(const rep *r, kf_rep_slot *out, size_t max, kf_rep_slot *sum);

/* The slots agent a gave the sweep: GPU slots in a sweep with GPU tasks
 * (gpu), else CPU slots. */
uint32_t kf_rep_agent_slots(const Kfleet__AgentInfo *a, int gpu);

/* What the sweep cost (issue 32, report_cost.c): evaluations (rows whose
 * validation or profile ended) per slot-hour (makespan x slots; GPU slots
 * in a GPU sweep), and, with a price per slot-hour (the agent's, from the
 * inventory or its --price, else the sweep's `kfleet run --price`), the
 * cost and the cost per evaluation. A renter pays for a node's GPUs for
 * the whole makespan, idle or not, so that is what is counted. */
typedef struct kf_rep_cost {
    const char *node; /* an agent id; NULL: the whole sweep */
    uint32_t evaluations;
    double slot_hours;    /* NAN while the sweep runs */
    double per_slot_hour; /* evaluations per slot-hour; NAN: no slot time */
    double price;         /* per slot-hour; NAN: not given (for the total: not for every node) */
    double cost, per_evaluation; /* NAN without a price */
} kf_rep_cost;

/* out[0] the whole sweep, out[1..] each agent in r->agents order; returns
 * how many were filled (at most cap; 0 when cap is 0). */
size_t kf_rep_costs(const rep *r, kf_rep_cost *out, size_t cap);

/* The thermal protocols the rows' profiles ran under ("burst",
 * "sustained", "host", or several: "burst, host"), or "" when no profile
 * says. */
void kf_rep_thermal(const rep *r, char *out, size_t len);
/* What each protocol named in `protocols` (kf_rep_thermal's) means, once
 * each, for the text report's line. */
void kf_rep_thermal_why(const char *protocols, char *out, size_t len);

/* The standard error of a median relative to it, from the robust noise:
 * 1.2533 sigma / sqrt(n), sigma = noise * median; NAN under 2 samples. */
double kf_rep_median_rel_se(const kf_stats *st);

/* report_speedup.c: each row's speedup against the baseline on its own
 * node, or why it has none (rrow.nobase); after kf_rep_collect, before
 * the ranks. */
void kf_rep_speedups(rep *r);
/* Why row w has no speedup, for every format ("baseline triad not measured
 * on local-1", "baseline triad on local-1: validate failed: ..."), or ""
 * when w->nobase says nothing. */
void kf_rep_no_speedup(const rep *r, const rrow *w, char *out, size_t len);

/* "" for NULL. */
const char *kf_rep_nz(const char *s);
const Kfleet__KernelRef *kf_rep_kref(const rep *r, uint32_t ki);
const char *kf_rep_kernel_name(const rep *r, uint32_t ki);
/* A task's state: its terminal record's when it has one. */
int kf_rep_state_of(const rtask *rt);
/* The error of a task: its record's, else the task's own note, else "". */
const char *kf_rep_err_of(const rtask *rt);
int kf_rep_is_failure(int state);
/* "succeeded", "timed_out", ... as in the JSON. */
const char *kf_rep_state_name(int st);
/* The node a task belongs to: its pin (nodes: all), else the agent of its
 * record, else the agent it was assigned to. */
const char *kf_rep_node_of(const rtask *rt);
/* UTC ISO 8601 of a wall-clock time in ns. */
void kf_rep_fmt_iso(uint64_t ns, char *out, size_t len);
/* The name the row's kernel declares itself (kf_kernel.name) when it is
 * not the sweep's name for it (a file stem), else NULL. */
const char *kf_rep_declared_name(const rep *r, const rrow *w);
/* The registered agent of that id, or NULL. */
const Kfleet__AgentInfo *kf_rep_agent(const rep *r, const char *id);
/* A node's GPU name, "cpu" for a node without one, "?" for an agent that
 * never registered. */
const char *kf_rep_device_of(const rep *r, const char *node);

/* Collects the report of sweep_id into *r (which the caller releases with
 * kf_rep_release once rendered), as opts asks: its baseline (a kernel of
 * the sweep to compare against instead of the sweep's own; NULL: the
 * sweep's), group_by and provenance. On failure *r holds nothing and err
 * says what: KF_ENOTFOUND for no such sweep, KF_EINVAL when the baseline is
 * not one of its kernels, else the store's error. */
int kf_rep_collect(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts, rep *r, kf_err *err);

/* Frees what kf_rep_collect collected and zeroes *r. */
void kf_rep_release(rep *r);

#endif
