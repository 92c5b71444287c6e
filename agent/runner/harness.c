/* harness — one task inside a runner process, from the task on stdin to
 * its result on the frame stream; see harness.h for the stream and the
 * cache layout.
 *
 * Build: the sources are written to a scratch dir and compiled by the node's
 * compiler (cc for .c, nvcc for .cu) into a shared object, cached under a
 * key that covers the sources, flags, compiler version and arch — so a
 * second sweep recompiles nothing and a changed header recompiles.
 * Validate and profile: validate.c and profile.c, on the kernel loaded and
 * driven by kernel_ops.c; ncu and compute-sanitizer runs: nested.c
 * (hctx.h). */
#include "runner/harness.h"
#include "runner/hostlock.h"
#include "runner/build.h"
#include "runner/channel.h"
#include "runner/cudrv.h"
#include "runner/nvml.h"
#include "common/stats.h"
#include "runner/toolhost.h"
#include "common/text.h"
#include "runner/tools.h"
#include "kf_kernel.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/wire.h"
#include "runner/hctx.h"
#include "runner/devcmp.h"
#include "runner/artifact.h"
#include "runner/confine.h"
#include "runner/proc.h"
#include "runner/pykernel.h"
#include "runner/sandbox.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- frames ---- */

/* ---- build ---- */

/* Fills the wire BuildInfo from build.c's record; strings point into `b`,
 * which outlives the Result frame. */
static void build_to_wire(const kf_build_info *b, Kfleet__BuildInfo *bi)
{
    bi->cached = b->cached;
    bi->compile_s = b->compile_s;
    bi->compiler = (char *)b->compiler;
    bi->artifact_hash = (char *)b->artifact_hash;
    bi->warnings = b->log.data ? b->log.data : "";
    bi->registers = b->registers;
    bi->shared_bytes = b->shared_bytes;
    bi->stack_bytes = b->stack_bytes;
    bi->spill_bytes = b->spill_bytes;
    bi->sass_archs = (char *)b->sass_archs;
    bi->has_ptx = b->has_ptx;
    bi->jit_fallback = b->jit_fallback;
    bi->nvcc_cuda = (char *)b->nvcc_cuda;
    bi->driver_cuda = (char *)b->driver_cuda;
    bi->forward_compat = (char *)b->forward_compat;
    bi->torch_extension = (char *)b->torch_ext;
    bi->built_by = (char *)b->built_by;
    bi->artifact.data = (uint8_t *)b->artifact.data;
    bi->artifact.len = b->artifact.len;
}

static int do_build(hctx *h, Kfleet__BuildInfo *bi, kf_build_info *b, const char *runner_scratch)
{
    char scratch[PATH_MAX + 16];
    snprintf(scratch, sizeof scratch, "%s/build-0x%llx-%u", h->tmpdir,
             (unsigned long long)h->ta->task_id, h->ta->attempt);
    kf_err err;
    /* The compilers run in the sandbox; this process writes the cache. */
    kf_sandbox *sb = kf_confine_build(h->spec, h->workdir, runner_scratch);
    kf_proc_sandbox(sb);
    int rc = kf_artifact_build(h->spec, h->workdir, scratch, b, &err);
    kf_proc_sandbox(NULL);
    kf_sandbox_destroy(&sb);
    build_to_wire(b, bi);
    if (rc == KF_OK)
        return 0;
    if (b->rejected && b->log.data) {
        char lines[3000];
        kf_text_first_lines(b->log.data, 20, lines, sizeof lines);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s:\n%s", err.msg, lines);
    }
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
}

/* What a serving runner (kf_runner_serve) keeps between the tasks of its
 * one kernel: the loaded kernel, its CUDA context (with the timing events,
 * the blocking kernel and the L2-flush buffer), and the device memory free
 * after its first task. */
typedef struct hkeep {
    char kernel_hash[128];
    /* A candidate's next task came with its checker's socket, placed at
     * KF_RUNNER_FD_CHECKER (candidate.c). */
    int checker_passed;
    int confined;                 /* the sandbox entered, for this kernel */
    struct kf_toolhost *toolhost; /* its tool host (toolhost.h), for its life */
    loaded L;
    kf_cudrv *cu;
    size_t free0;   /* device bytes free after the first task */
    uint32_t tasks; /* tasks run so far */
    /* The host buffers the checks fetch into and compare with (hctx):
     * first touching fresh memory cost more than the comparison, so the
     * next task of the kernel reuses them. */
    void *host_out, *host_ref;
    size_t host_out_cap, host_ref_cap;
    void *host_set[HCTX_MAX_SETS];
    size_t host_set_cap[HCTX_MAX_SETS];
} hkeep;

/* Hands the reused host buffers from *from to *to (either a task's hctx or
 * the runner's hkeep), leaving *from without them. */
#define MOVE_HOST_BUFFERS(to, from)                                                                \
    do {                                                                                           \
        (to)->host_out = (from)->host_out;                                                         \
        (to)->host_out_cap = (from)->host_out_cap;                                                 \
        (to)->host_ref = (from)->host_ref;                                                         \
        (to)->host_ref_cap = (from)->host_ref_cap;                                                 \
        (from)->host_out = (from)->host_ref = NULL;                                                \
        for (int i_ = 0; i_ < HCTX_MAX_SETS; i_++) {                                               \
            (to)->host_set[i_] = (from)->host_set[i_];                                             \
            (to)->host_set_cap[i_] = (from)->host_set_cap[i_];                                     \
            (from)->host_set[i_] = NULL;                                                           \
        }                                                                                          \
    } while (0)

/* Frees the reused host buffers of a task's hctx or the runner's hkeep. */
#define FREE_HOST_BUFFERS(x)                                                                       \
    do {                                                                                           \
        free((x)->host_out);                                                                       \
        free((x)->host_ref);                                                                       \
        for (int i_ = 0; i_ < HCTX_MAX_SETS; i_++)                                                 \
            free((x)->host_set[i_]);                                                               \
    } while (0)

/* Device memory a kept runner may lose between its first task and a later
 * one before it leaves: more is a kernel whose teardown leaks, and the next
 * configuration should not start short of it. */
#define KEEP_LEAK_MIN (1ull << 30)

/* Whether the runner can take the next task of its kernel: the task
 * succeeded, the context has no error, and the kernel gave back its device
 * memory. A sticky CUDA error or a fault ends the task (and so the
 * runner); a kernel that corrupts its context without one still only ever
 * runs in a runner of its own, so another kernel's numbers never come
 * from a context it touched. */
static int keep_after(hkeep *keep, hctx *h)
{
    if (h->res->state != KFLEET__TASK_STATE__SUCCEEDED)
        return 0;
    if (!h->cu)
        return 1;
    kf_err err;
    size_t free_b = 0, total_b = 0;
    if (kf_cudrv_sync(h->cu, &err) != KF_OK ||
        kf_cudrv_mem_info(h->cu, &free_b, &total_b, &err) != KF_OK) {
        kf_warn("runner.not_kept", "task=0x%llx error=\"%s\"", (unsigned long long)h->ta->task_id,
                err.msg);
        return 0;
    }
    if (keep->tasks == 0) {
        keep->free0 = free_b;
        return 1;
    }
    size_t slack = total_b / 8 > KEEP_LEAK_MIN ? total_b / 8 : KEEP_LEAK_MIN;
    if (free_b + slack < keep->free0) {
        kf_warn("runner.not_kept", "task=0x%llx device_free_mib=%zu first_task_free_mib=%zu",
                (unsigned long long)h->ta->task_id, free_b >> 20, keep->free0 >> 20);
        return 0;
    }
    return 1;
}

/* The artifact about to be loaded is what its build recorded (artifact.h);
 * one that is not is removed, and the attempt ends as the node's fault
 * (tried again) with artifact_stale, on which the coordinator has this
 * agent build the kernel again. */
static int verify_artifact(hctx *h)
{
    kf_err err;
    int rc = kf_artifact_check(h->workdir, h->spec, h->spec->artifact_hash, &err);
    if (rc == KF_OK || rc == KF_ENOTFOUND) /* the load says "not in cache" */
        return 0;
    if (rc == KF_EINVAL) {
        h->res->artifact_stale = 1;
        h->res->infra = 1;
    }
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
}

/* Enters the runner's sandbox before its kernel is loaded (confine.h). */
static int confine(hctx *h, const char *scratch)
{
    kf_err err;
    unsigned missing = 0;
    int cuda_here = h->spec->device_cuda && scratch && kf_sandbox_enabled();
    /* The node's compiled modules, read while the work dir is (cubins.h). */
    kf_cubins *cubins = cuda_here ? hctx_cubins_read(h) : NULL;
    if (kf_confine_runner(h->spec, h->workdir, scratch, &missing, &h->toolhost, &err) != KF_OK) {
        kf_cubins_free(&cubins);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s; the kernel was not run (KF_SANDBOX=0 on the agent runs kernels "
                         "unconfined)",
                         err.msg);
    }
    /* The driver before the kernel: cuInit needs the Unix socket the
     * kernel is refused (kf_confine_runner_finish). */
    if (cuda_here) {
        uint64_t t0 = kf_mono_ns();
        int rc = kf_cudrv_open(&h->cu, cubins, &err);
        cubins = NULL; /* the driver's */
        hctx_phase_add(h, HCTX_PH_CONTEXT, t0);
        if (rc != KF_OK)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    }
    if (kf_confine_runner_finish(h->spec, scratch, &missing, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s; the kernel was not run", err.msg);
    if (scratch && kf_sandbox_enabled())
        kf_debug("runner.sandbox", "task=0x%llx missing=0x%x", (unsigned long long)h->ta->task_id,
                 missing);
    return 0;
}

/* The runner's half of the task-kind table (common/taskkind.h): what a
 * kind does in the runner. For a kind whose row says it runs its kernel,
 * the handler gets the loaded kernel (and ncu_runs is how many runs it
 * makes under an ncu pass); any other gets L NULL. A build is the runner's
 * own (do_build). A new kind is a row here. */
typedef struct {
    Kfleet__TaskKind kind;
    void (*run)(hctx *h, const loaded *L, Kfleet__ProfileStats *ps, Kfleet__TelemetrySummary *tsum);
    unsigned ncu_runs;
} kind_handler;

static void run_validate(hctx *h, const loaded *L, Kfleet__ProfileStats *ps,
                         Kfleet__TelemetrySummary *tsum)
{
    (void)ps;
    (void)tsum;
    const Kfleet__MeasureSettings *ms = h->spec->measure;
    if (hctx_validate(h, L) == 0 && ms && ms->sanitize) {
        uint64_t tt = kf_mono_ns();
        hctx_sanitize(h);
        hctx_phase_add(h, HCTX_PH_TOOLS, tt);
    }
}

static void run_profile(hctx *h, const loaded *L, Kfleet__ProfileStats *ps,
                        Kfleet__TelemetrySummary *tsum)
{
    const Kfleet__MeasureSettings *ms = h->spec->measure;
    h->res->profile = ps;
    if (hctx_profile(h, L, ps) == 0 && ms && ms->n_ncu_metrics > 0) {
        uint64_t tt = kf_mono_ns();
        hctx_ncu(h);
        hctx_phase_add(h, HCTX_PH_TOOLS, tt);
    }
    if (h->cu) {
        hctx_summarize_telemetry(h, tsum);
        h->res->telemetry = tsum;
        h->res->throttled_samples = h->throttled_samples;
        h->res->gpu_uuid = h->uuid;
    }
}

static void run_reference(hctx *h, const loaded *L, Kfleet__ProfileStats *ps,
                          Kfleet__TelemetrySummary *tsum)
{
    (void)ps;
    (void)tsum;
    hctx_reference(h, L);
}

/* The test tree's kind (tests/kinds/) and its handler, in the tests' own
 * kfleet-agent only. */
#ifdef KF_TASK_HANDLERS_EXTRA
#include KF_TASK_HANDLERS_EXTRA
#else
#define KF_TASK_HANDLER_EXTRA_ROWS
#endif

static const kind_handler kind_handlers[] = {
    {KFLEET__TASK_KIND__VALIDATE, run_validate, 1},
    {KFLEET__TASK_KIND__PROFILE, run_profile, KF_TOOLS_NCU_RUNS},
    {KFLEET__TASK_KIND__REFERENCE, run_reference, 1},
    /* clang-format off */
    KF_TASK_HANDLER_EXTRA_ROWS
    /* clang-format on */
};

/* Kind's handler, or NULL for a kind the runner has none for. */
static const kind_handler *handler_of(int kind)
{
    for (size_t i = 0; i < sizeof kind_handlers / sizeof *kind_handlers; i++)
        if ((int)kind_handlers[i].kind == kind)
            return &kind_handlers[i];
    return NULL;
}

/* Runs one task; with `keep` (a serving runner), a validate or profile of
 * the kernel it already holds skips the load and the context, and *stays
 * says whether the runner takes another task. spawn_ns: when the agent
 * started this runner (CLOCK_MONOTONIC, the node's), for its first task;
 * 0 for none. */
static int run_task(const Kfleet__TaskAssign *ta, const char *workdir, const char *scratch,
                    int out_fd, hkeep *keep, int *stays, uint64_t spawn_ns)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    kf_build_info binfo = {0};
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    Kfleet__TelemetrySummary tsum = KFLEET__TELEMETRY_SUMMARY__INIT;
    Kfleet__Sample pending[SAMPLE_BATCH];
    hctx h = {0};
    h.ta = ta;
    h.spec = ta->spec;
    h.workdir = workdir;
    if (scratch)
        snprintf(h.tmpdir, sizeof h.tmpdir, "%s", scratch);
    else
        snprintf(h.tmpdir, sizeof h.tmpdir, "%s/tmp", workdir);
    h.out_fd = out_fd;
    h.res = &res;
    h.pending = pending;
    h.last_flush = kf_mono_ns();
    res.task_id = ta->task_id;
    res.attempt = ta->attempt;
    res.state = KFLEET__TASK_STATE__SUCCEEDED;
    uint64_t t0 = kf_mono_ns();
    /* The runner's start is its first task's phase (HCTX_PH_START), kept
     * out of elapsed_s, the task's own time, which the coordinator's
     * schedule predicts from (a serving runner's next task pays no
     * start); the report counts it as the runner's. A stamp from the
     * future or from over a minute ago is not this runner's start. */
    if (spawn_ns && spawn_ns <= t0 && t0 - spawn_ns < 60000000000ull)
        h.phase_s[HCTX_PH_START] = (double)(t0 - spawn_ns) / 1e9;
    loaded L = {0};
    const kind_handler *kh = h.spec ? handler_of(h.spec->kind) : NULL;
    int kernel_task = kh && kf_task_kind_at(h.spec->kind)->runs_kernel;
    int reused = keep && kernel_task && keep->tasks > 0 && keep->L.k && h.spec->kernel_hash &&
                 strcmp(keep->kernel_hash, h.spec->kernel_hash) == 0;
    res.runner_task = keep ? keep->tasks + 1 : 1;
    if (!h.spec) {
        hctx_fail(&h, KFLEET__TASK_STATE__FAILED, "task without a spec");
    } else if (keep && keep->tasks > 0 && !reused) {
        /* The agent hands a serving runner only its own kernel's tasks. */
        hctx_fail(&h, KFLEET__TASK_STATE__FAILED,
                  "internal: a runner serving kernel %s was handed a task of %s", keep->kernel_hash,
                  h.spec->kernel_hash ? h.spec->kernel_hash : "?");
    } else if (kf_task_kind_at(h.spec->kind)->builds) {
        res.build = &bi;
        do_build(&h, &bi, &binfo, scratch);
        h.phase_s[HCTX_PH_BUILD] = binfo.compile_s;
    } else if (kernel_task) {
        int loaded_rc = 0;
        if (reused) {
            L = keep->L;
            h.cu = keep->cu;
            h.toolhost = keep->toolhost;
            MOVE_HOST_BUFFERS(&h, keep); /* the task's until it ends */
            hctx_set_params(&h, &L);
            if (h.cu)
                kf_cudrv_until_idle(h.cu, 0);
            if (hctx_is_candidate(h.spec) && hctx_candidate_resume(&h, keep->checker_passed) != 0)
                loaded_rc = -1; /* the Result says why */
            keep->checker_passed = 0;
        } else if (!(keep && keep->confined) &&
                   (verify_artifact(&h) != 0 || confine(&h, scratch) != 0)) {
            loaded_rc = -1; /* the Result says why; nothing of the kernel ran */
        } else {
            if (keep) {
                keep->confined = 1;
                if (h.toolhost)
                    keep->toolhost = h.toolhost;
                h.toolhost = keep->toolhost; /* confined by an earlier task */
            }
            uint64_t tl = kf_mono_ns();
            double ctx0 = h.phase_s[HCTX_PH_CONTEXT]; /* confine may have opened it */
            loaded_rc =
                hctx_is_candidate(h.spec) ? hctx_candidate_load(&h, &L) : hctx_load_kernel(&h, &L);
            hctx_phase_add(&h, HCTX_PH_LOAD, tl);
            h.phase_s[HCTX_PH_LOAD] -= h.phase_s[HCTX_PH_CONTEXT] - ctx0; /* counted on its own */
        }
        if (loaded_rc != 0) {
            /* the Result says why */
        } else if ((res.kernel_name = (char *)(L.k->name ? L.k->name : "")), h.spec->ncu_pass) {
            hctx_nested(&h, &L, kh->ncu_runs);
        } else {
            kh->run(&h, &L, &ps, &tsum);
        }
        /* Every verdict is written before the Result that the agent
         * matches them with. */
        hctx_candidate_finish(&h);
        kf_devcmp_destroy(&h.devcmp); /* our module and buffer: not the next task's */
        if (keep && loaded_rc == 0 && !h.spec->ncu_pass && keep_after(keep, &h)) {
            if (!reused)
                snprintf(keep->kernel_hash, sizeof keep->kernel_hash, "%s", h.spec->kernel_hash);
            keep->L = L;
            keep->cu = h.cu;
            h.cu = NULL; /* the runner's now, not the task's */
            MOVE_HOST_BUFFERS(keep, &h);
            keep->tasks++;
            res.runner_stays = 1;
        } else if (reused) {
            keep->L.k = NULL; /* its context goes with this task (h.cu, below) */
            keep->cu = NULL;
        }
    } else if (kh) {
        kh->run(&h, NULL, &ps, &tsum);
    } else {
        hctx_fail(&h, KFLEET__TASK_STATE__FAILED, "unsupported task kind %d", h.spec->kind);
    }
    if (stays)
        *stays = res.runner_stays;
    res.elapsed_s = (double)(kf_mono_ns() - t0) / 1e9;
    Kfleet__Phase phases[HCTX_NPHASES], *pp[HCTX_NPHASES];
    for (int i = 0; i < HCTX_NPHASES; i++) {
        if (h.phase_s[i] <= 0)
            continue;
        kfleet__phase__init(&phases[res.n_phases]);
        phases[res.n_phases].name = (char *)hctx_phase_names[i];
        phases[res.n_phases].seconds = h.phase_s[i];
        pp[res.n_phases] = &phases[res.n_phases];
        res.n_phases++;
    }
    res.phases = pp;
    res.sample_count = h.seq;
    res.finished_ns = kf_now_ns();
    res.n_fresh_seeds = h.nfresh_seeds; /* for the agent's scrub only */
    res.fresh_seeds = h.fresh_seeds;
    /* What the kernel printed, out of its buffers before its Result: the
     * agent attaches the output written up to the Result (agent/kout.h). */
    kf_pyk_flush();
    fflush(stdout);
    fflush(stderr);
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    int rc = kf_harness_write_frame(out_fd, &env);
    for (size_t i = 0; i < res.n_trials; i++)
        free(res.trials[i]);
    free(res.trials);
    hctx_reference_free(&res);
    kf_tools_free_metrics(res.ncu, res.n_ncu);
    kf_build_info_release(&binfo);
    FREE_HOST_BUFFERS(&h);
    free(h.fresh_seeds);
    kf_nvml_close(&h.nv);
    kf_cudrv_close(&h.cu);
    if (!keep)
        kf_toolhost_destroy(&h.toolhost);
    /* The kernel's library stays loaded: the runner exits right after, and
     * unloading a CUDA library with live runtime state can crash at exit. */
    return rc;
}

int kf_harness_run(const Kfleet__TaskAssign *ta, const char *workdir, int out_fd)
{
    return run_task(ta, workdir, NULL, out_fd, NULL, NULL, 0);
}

/* All of fd into *out (len bytes; the caller wipes and frees it). A
 * candidate's task carries its problem's stored references, which its
 * process must not keep (candidate.c): every copy this read leaves behind
 * as it grows is wiped before it is freed, which a kf_buf's realloc does
 * not do. */
static uint8_t *read_all_wiped(int fd, size_t *len)
{
    size_t cap = 65536;
    uint8_t *p = malloc(cap);
    *len = 0;
    while (p) {
        if (*len == cap) {
            uint8_t *q = cap <= SIZE_MAX / 2 ? malloc(cap * 2) : NULL;
            if (q)
                memcpy(q, p, *len);
            explicit_bzero(p, *len);
            free(p);
            p = q;
            cap *= 2;
            continue;
        }
        ssize_t n = read(fd, p + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        *len += (size_t)n;
    }
    return p;
}

/* The runner's descriptors (harness.h): with the channel, its own, marked
 * close-on-exec so that no compiler, tool or process of the kernel's
 * inherits them, and the log there; else stdin, stdout and stderr. */
static void take_channel(int channel, int *task_fd, int *frames_fd)
{
    *task_fd = 0;
    *frames_fd = 1;
    if (!channel)
        return;
    *task_fd = KF_RUNNER_FD_TASK;
    *frames_fd = KF_RUNNER_FD_FRAMES;
    fcntl(KF_RUNNER_FD_TASK, F_SETFD, FD_CLOEXEC);
    fcntl(KF_RUNNER_FD_FRAMES, F_SETFD, FD_CLOEXEC);
    fcntl(KF_RUNNER_FD_LOG, F_SETFD, FD_CLOEXEC);
    kf_log_set_fd(KF_RUNNER_FD_LOG);
}

int kf_runner_main(const char *workdir, const char *scratch, int channel, uint64_t spawn_ns)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    int task_fd, frames_fd;
    take_channel(channel, &task_fd, &frames_fd);
    kf_hostlock_fd(); /* before the sandbox, which may not reach it */
    size_t len = 0;
    uint8_t *in = read_all_wiped(task_fd, &len);
    Kfleet__TaskAssign *ta = in ? kfleet__task_assign__unpack(NULL, len, in) : NULL;
    if (in)
        explicit_bzero(in, len);
    free(in);
    if (!ta) {
        kf_error("runner.bad_task", "error=\"the task does not decode\"");
        return 1;
    }
    int python = ta->spec && ta->spec->python && !kf_task_kind_at(ta->spec->kind)->builds;
    int rc = run_task(ta, workdir, scratch, frames_fd, NULL, NULL, spawn_ns);
    kfleet__task_assign__free_unpacked(ta, NULL);
    /* A runner that hosted Python leaves without finalizing it: its
     * frames are written, and finalizing an interpreter with torch or CUDA
     * state is where such processes crash (pykernel.h). */
    if (python)
        _exit(rc == KF_OK ? 0 : 1);
    return rc == KF_OK ? 0 : 1;
}

/* A task frame's length header from the serving runner's task socket, with
 * the descriptor the agent may pass beside it (a candidate's new checker
 * socket, placed at KF_RUNNER_FD_CHECKER; *passed set). On a pipe (a runner
 * started by hand) a plain read. 1, 0 at EOF before any byte, -1 on an
 * error, a cut header or a descriptor that cannot be placed. */
static int read_header(int fd, uint8_t hdr[4], int *passed)
{
    size_t got = 0;
    while (got < 4) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(int))];
        } cb;
        struct iovec iov = {hdr + got, 4 - got};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        m.msg_control = cb.b;
        m.msg_controllen = sizeof cb.b;
        ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == ENOTSOCK) {
            r = read(fd, hdr + got, 4 - got);
            m.msg_controllen = 0;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
        for (struct cmsghdr *c = m.msg_controllen ? CMSG_FIRSTHDR(&m) : NULL; c;
             c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; i++) {
                int pfd;
                memcpy(&pfd, CMSG_DATA(c) + i * sizeof(int), sizeof pfd);
                /* One descriptor is the protocol; a second is not placed. */
                if (i == 0 && !*passed &&
                    (pfd == KF_RUNNER_FD_CHECKER ||
                     dup3(pfd, KF_RUNNER_FD_CHECKER, O_CLOEXEC) >= 0)) {
                    *passed = 1;
                    if (pfd == KF_RUNNER_FD_CHECKER)
                        continue; /* it came where it goes */
                }
                close(pfd);
            }
        }
        if (m.msg_flags & MSG_CTRUNC)
            return -1;
    }
    return 1;
}

/* Reads exactly n bytes from fd: 1, 0 at EOF before any byte, -1 on an
 * error or EOF inside. */
static int read_full(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

int kf_runner_serve(const char *workdir, const char *scratch, int channel, uint64_t spawn_ns)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    int task_fd, frames_fd;
    take_channel(channel, &task_fd, &frames_fd);
    kf_hostlock_fd();
    hkeep keep = {0};
    int rc = 0, python = 0;
    for (;;) {
        uint8_t hdr[4];
        keep.checker_passed = 0;
        int got = read_header(task_fd, hdr, &keep.checker_passed);
        if (got == 0)
            break; /* the agent closed our stdin: no more tasks */
        uint32_t len = kf_frame_len_get(hdr);
        uint8_t *body = got > 0 && len <= KF_MAX_FRAME ? malloc(len ? len : 1) : NULL;
        Kfleet__TaskAssign *ta = body && read_full(task_fd, body, len) > 0
                                     ? kfleet__task_assign__unpack(NULL, len, body)
                                     : NULL;
        if (body) /* a candidate's references: see read_all_wiped */
            explicit_bzero(body, len);
        free(body);
        if (!ta) {
            kf_error("runner.bad_task", "error=\"a task is cut short or does not decode\"");
            rc = 1;
            break;
        }
        python |= ta->spec && ta->spec->python && !kf_task_kind_at(ta->spec->kind)->builds;
        int stays = 0;
        int wrc = run_task(ta, workdir, scratch, frames_fd, &keep, &stays, spawn_ns);
        spawn_ns = 0; /* the next tasks' runner was already running */
        kfleet__task_assign__free_unpacked(ta, NULL);
        if (wrc != KF_OK) {
            rc = 1;
            break;
        }
        if (!stays)
            break;
    }
    if (python) /* as kf_runner_main */
        _exit(rc);
    FREE_HOST_BUFFERS(&keep);
    kf_cudrv_close(&keep.cu);
    return rc;
}
