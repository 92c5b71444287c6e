/* runners — runner processes: fork + exec of this binary with --runner,
 * in its own process group (so a kill takes the compiler or the
 * kernel's children too), stdout a pipe of frames (harness.h), stderr a
 * log whose tail explains a runner that died without a result. A build
 * gets a runner of its own, its task on stdin from a file. A validate or
 * profile gets a serving runner (--serve), its tasks on a stdin pipe: it
 * stays, with the kernel and its CUDA context loaded, for that kernel's
 * next task on the same GPU, and leaves after a failure, after
 * RUNNERS_IDLE_S idle, or when another kernel needs its GPU.
 * A runner past its time limit is killed; one killed by a signal kfleet
 * did not send ends its attempt as an infrastructure failure
 * (Result.infra: tried again), a crash as the kernel's own. */
#include "agent/agent_int.h"
#include "agent/ending.h"
#include "agent/kout.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/build.h"
#include "runner/channel.h"
#include "runner/sandbox.h"
#include "runner/toolhost.h"
#include "agent/verdict.h"
#include "agent/warms.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0) {
            close(p[i]);
            p[i] = -1;
        }
}

krunner *runners_find(kf_agent *a, uint64_t task, uint32_t attempt)
{
    for (size_t i = 0; i < a->nrunners; i++)
        if (a->runners[i]->task_id == task && a->runners[i]->attempt == attempt)
            return a->runners[i];
    return NULL;
}

static void attach_output(krunner *r, Kfleet__Result *res, kf_buf *keep);

static void send_result(kf_agent *a, krunner *r, int state, int infra, const char *error)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    res.infra = infra;
    res.task_id = r->task_id;
    res.attempt = r->attempt;
    res.state = (Kfleet__TaskState)state;
    res.error = (char *)error;
    res.agent_id = a->info->agent_id;
    res.elapsed_s = (double)(kf_mono_ns() - r->started_mono) / 1e9;
    res.sample_count = r->nsamples;
    res.finished_ns = kf_now_ns();
    kf_buf output = KF_BUF_INIT;
    if (r->kout) /* what it wrote says why, as often as not */
        attach_output(r, &res, &output);
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    link_emit(a, &env, r->task_id, r->attempt, 1);
    kf_buf_release(&output);
    r->got_result = 1;
}

void runners_fail_assignment(kf_agent *a, const Kfleet__TaskAssign *ta, const char *why)
{
    krunner tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.task_id = ta->task_id;
    tmp.attempt = ta->attempt;
    tmp.started_mono = kf_mono_ns();
    /* The runner never ran: nothing the kernel did. */
    send_result(a, &tmp, KFLEET__TASK_STATE__FAILED, 1, why);
}

/* The CUDA_VISIBLE_DEVICES entry for the agent's GPU `index`: the agent
 * numbers the GPUs it sees, so when it was itself started with a subset
 * ("2,3"), its GPU 1 is the node's "3", not "1". */
void runners_visible_device(uint32_t index, char *out, size_t len)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(out, len, "%u", index);
    if (!vis || !*vis)
        return;
    const char *p = vis;
    for (uint32_t i = 0; i < index && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (p && *p)
        snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
}

/* How long a serving runner waits idle for its kernel's next task. The
 * coordinator hands a GPU its next task as soon as the result is in, and a
 * sweep runs kernel by kernel, so the next task of the kernel comes within
 * milliseconds when it comes at all. */
#define RUNNERS_IDLE_S 5.0

/* The tasks a serving runner takes: those that run a built kernel. */
static int serves(const Kfleet__TaskAssign *ta)
{
    const Kfleet__TaskSpec *s = ta->spec;
    /* A candidate's runner has its checker for one task: it never serves. */
    return s && kf_task_kind_at(s->kind)->served && !kf_verdict_wanted(s) && !s->ncu_pass &&
           s->kernel_hash && *s->kernel_hash &&
           strlen(s->kernel_hash) < sizeof((krunner *)0)->kernel_hash;
}

static int on_gpu(const Kfleet__TaskAssign *ta)
{
    return ta->spec && ta->spec->device_cuda && !kf_task_kind_at(ta->spec->kind)->builds;
}

static void take_slot(kf_agent *a, const krunner *r)
{
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 1;
    else
        a->cpu_used++;
}

static void free_slot(kf_agent *a, const krunner *r)
{
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 0;
    else if (a->cpu_used > 0)
        a->cpu_used--;
}

/* r's fields for task ta: its clock and time limit started, its slot taken. */
static void begin_task(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta)
{
    r->task_id = ta->task_id;
    r->attempt = ta->attempt;
    r->kind = ta->spec ? ta->spec->kind : 0;
    r->got_result = r->timed_out = r->cancelled = r->idle = 0;
    r->nsamples = 0;
    r->tasks++;
    r->started_mono = kf_mono_ns();
    r->oom_kills0 = ending_oom_kills();
    r->limit_s =
        ta->spec && ta->spec->time_limit_s > 0 ? ta->spec->time_limit_s : a->cfg.default_limit_s;
    r->deadline_mono = r->started_mono + (uint64_t)(r->limit_s * 1e9);
    take_slot(a, r);
}

/* ta as one frame on a serving runner's stdin. */
static int hand_task(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, kf_err *err)
{
    size_t n = kfleet__task_assign__get_packed_size(ta);
    kf_buf_reset(&a->scratch);
    kf_buf_grow(&a->scratch, n + 4);
    uint8_t *p = (uint8_t *)a->scratch.data;
    kf_frame_len_put(p, (uint32_t)n);
    kfleet__task_assign__pack(ta, p + 4);
    if (kf_write_all(r->in_fd, p, n + 4) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot hand the task to runner %d: %s", (int)r->pid,
                          strerror(errno));
    return KF_OK;
}

static void finish_runner(kf_agent *a, size_t idx);

/* The runner's scratch dir and its tool host's beside it (toolhost.h). */
static void remove_dirs(const krunner *r)
{
    char tools[sizeof r->dir + sizeof KF_TOOLHOST_DIR_SUFFIX];
    kf_remove_tree(r->dir);
    snprintf(tools, sizeof tools, "%s" KF_TOOLHOST_DIR_SUFFIX, r->dir);
    kf_remove_tree(tools);
}

/* Ends idle runner idx now, so that its CUDA context is gone before
 * another runner starts on its GPU, and frees its entry. */
static void retire(kf_agent *a, size_t idx, const char *why)
{
    krunner *r = a->runners[idx];
    if (strcmp(why, "idle") == 0)
        kf_debug("runner.retire", "pid=%d tasks=%u why=\"%s\"", (int)r->pid, r->tasks, why);
    else
        kf_info("runner.retire", "pid=%d tasks=%u why=\"%s\"", (int)r->pid, r->tasks, why);
    kill(-r->pid, SIGKILL);
    int st;
    if (!r->exited && waitpid(r->pid, &st, 0) == r->pid) {
        r->exited = 1;
        r->status = st;
    }
    if (r->out_fd >= 0) {
        close(r->out_fd);
        r->out_fd = -1;
    }
    finish_runner(a, idx);
}

int runners_room(kf_agent *a)
{
    for (size_t i = 0; a->nrunners >= MAX_RUNNERS && i < a->nrunners; i++)
        if (a->runners[i]->idle && !a->runners[i]->exited)
            retire(a, i, "the agent needs its entry");
    return a->nrunners < MAX_RUNNERS;
}

size_t runners_busy(const kf_agent *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->nrunners; i++)
        n += !a->runners[i]->idle;
    return n;
}

/* Every task's start, in a fresh runner (runner_task=1) or a serving one
 * (its count of tasks so far). */
static void log_start(const krunner *r, const Kfleet__TaskAssign *ta)
{
    static const char *kinds[] = {"?", "build", "validate", "profile", "doctor"};
    kf_debug("runner.start",
             "task=0x%llx attempt=%u kind=%s kernel=%s pid=%d serve=%d runner_task=%u limit_s=%.0f "
             "warm=%d",
             (unsigned long long)r->task_id, r->attempt, kinds[r->kind <= 4 ? r->kind : 0],
             ta->spec && ta->spec->kernel ? ta->spec->kernel : "", (int)r->pid, r->in_fd >= 0,
             r->tasks, r->limit_s, (int)r->warm_pid);
}

/* An idle serving runner of ta's kernel on ta's GPU takes ta (1), or
 * none does (0). Idle runners on that GPU of another kernel leave first:
 * only one kernel's context at a time on a GPU. */
static int reuse(kf_agent *a, const Kfleet__TaskAssign *ta)
{
    int serve = serves(ta), gpu = on_gpu(ta);
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        int same_gpu = gpu && r->gpu && r->gpu_index == ta->gpu_index;
        if (!r->idle || r->exited || (!same_gpu && (gpu || r->gpu))) {
            i++;
            continue;
        }
        if (serve && strcmp(r->kernel_hash, ta->spec->kernel_hash) == 0) {
            kf_err err;
            if (hand_task(a, r, ta, &err) == KF_OK) {
                begin_task(a, r, ta);
                log_start(r, ta);
                return 1;
            }
            kf_warn("runner.reuse", "pid=%d error=\"%s\"", (int)r->pid, err.msg);
            retire(a, i, "its stdin failed");
            continue;
        }
        if (same_gpu) {
            retire(a, i, "its GPU is wanted for another kernel");
            continue;
        }
        i++;
    }
    return 0;
}

/* The environment of a process about to exec a runner (or a warm runner,
 * warms.h) of GPU slot gpu_index (gpu 0: the CPU), in the forked child. */
static void child_env(kf_agent *a, int gpu, uint32_t gpu_index)
{
    if (kf_sandbox_enabled())
        kf_sandbox_scrub_env();
    /* In a sanitizer build, let a kernel's fault kill the runner by its
     * signal (what the task reports) instead of ASan's own exit. */
    const char *asan = getenv("ASAN_OPTIONS");
    if (asan) {
        char opts[1024];
        snprintf(opts, sizeof opts, "%s:handle_segv=0:handle_sigbus=0:handle_sigfpe=0", asan);
        setenv("ASAN_OPTIONS", opts, 1);
    }
    if (a->compat_dir[0]) {
        /* The toolkit's libcuda before the system's (runner/compat.h). */
        const char *old = getenv("LD_LIBRARY_PATH");
        char libpath[8192];
        snprintf(libpath, sizeof libpath, "%s%s%s", a->compat_dir, old && *old ? ":" : "",
                 old ? old : "");
        setenv("LD_LIBRARY_PATH", libpath, 1);
        setenv("KF_CUDA_COMPAT_DIR", a->compat_dir, 1);
    }
    if (gpu) {
        char dev[128];
        runners_visible_device(gpu_index, dev, sizeof dev);
        setenv("CUDA_VISIBLE_DEVICES", dev, 1);
    }
    /* The arch its cache key needs, from the agent's inventory: the
     * runner then starts no CUDA driver (threads the sandbox, entered
     * by one thread, would not hold) before its sandbox. A build takes
     * GPU 0's, as the runner's own device 0 would be. */
    const char *arch_env = getenv("KF_CUDA_ARCH");
    uint32_t want = gpu ? gpu_index : 0;
    for (size_t g = 0; (!arch_env || !*arch_env) && g < a->info->n_gpus; g++) {
        const Kfleet__GpuInfo *gi = a->info->gpus[g];
        if (gi->index == want && gi->cc_major > 0) {
            char arch[32];
            kf_build_arch_name((int)gi->cc_major, (int)gi->cc_minor, arch, sizeof arch);
            setenv("KF_CUDA_ARCH", arch, 1);
            break;
        }
    }
}

/* warms.h's warms_env_fn. */
static void warm_env(void *ctx, int gpu, uint32_t gpu_index)
{
    child_env(ctx, gpu, gpu_index);
}

/* Whether ta's runner comes from a warm runner (warms.h): a candidate's
 * validate or profile of a Python problem, on a node that can have them. */
static int wants_warm(kf_agent *a, const Kfleet__TaskAssign *ta)
{
    const Kfleet__TaskSpec *s = ta->spec;
    if (a->warms_off || !kf_verdict_wanted(s) || !s->problem_python)
        return 0;
    if (!a->warms) {
        kf_err err;
        a->warms = warms_new(a->runner_exe, a->workdir, a->cfg.keep_tmp, warm_env, a, &err);
        if (!a->warms) {
            a->warms_off = 1;
            kf_warn("warm.off", "error=\"%s\" candidates get a fresh runner each", err.msg);
            return 0;
        }
    }
    return warms_ready(a->warms, on_gpu(ta), ta->gpu_index, s->problem_hash);
}

int runners_start(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err)
{
    if (reuse(a, ta))
        return KF_OK;
    int serve = serves(ta);
    krunner *r = kf_xcalloc(1, sizeof *r);
    kf_buf_init(&r->in);
    r->out_fd = -1;
    r->in_fd = -1;
    r->verdict_fd = -1;
    r->kout_fd = -1;
    r->kout = kf_kout_new();
    r->gpu = on_gpu(ta);
    r->gpu_index = ta->gpu_index;
    if (serve)
        snprintf(r->kernel_hash, sizeof r->kernel_hash, "%s", ta->spec->kernel_hash);
    snprintf(r->dir, sizeof r->dir, "%s/tmp/0x%llx-%u", a->workdir, (unsigned long long)ta->task_id,
             ta->attempt);
    int rc = kf_mkdirs(r->dir, 0700, err);
    if (rc)
        goto fail;
    char path[PATH_MAX + 32];
    int in_fd = -1, task_fd[2] = {-1, -1};
    if (serve) {
        /* Its tasks come down a pipe, this one first. */
        if (pipe2(task_fd, O_CLOEXEC) == 0)
            in_fd = task_fd[0];
    } else {
        size_t n = kfleet__task_assign__get_packed_size(ta);
        kf_buf_reset(&a->scratch);
        kf_buf_grow(&a->scratch, n);
        kfleet__task_assign__pack(ta, (uint8_t *)a->scratch.data);
        snprintf(path, sizeof path, "%s/task.pb", r->dir);
        if ((rc = kf_write_file(path, a->scratch.data, n, 0600, err)))
            goto fail;
        in_fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    snprintf(path, sizeof path, "%s/runner.log", r->dir);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int pfd[2] = {-1, -1}, vfd[2] = {-1, -1}, ofd[2] = {-1, -1};
    /* A candidate's checker writes its verdicts where only it and this
     * agent reach (runner/candidate.c). */
    int cand = kf_verdict_wanted(ta->spec);
    if (in_fd < 0 || log_fd < 0 || (cand && pipe2(vfd, O_CLOEXEC) != 0) ||
        pipe2(pfd, O_CLOEXEC) != 0 || pipe2(ofd, O_CLOEXEC) != 0) {
        rc =
            kf_err_set(err, KF_EIO, "cannot prepare the runner in %s: %s", r->dir, strerror(errno));
        close_pair(vfd);
        close_pair(pfd);
        if (in_fd >= 0)
            close(in_fd);
        if (task_fd[1] >= 0)
            close(task_fd[1]);
        if (log_fd >= 0)
            close(log_fd);
        goto fail;
    }
    /* A Python problem's candidate: forked by its warm runner. */
    pid_t warm_pid = 0, pid;
    if (wants_warm(a, ta)) {
        kf_warm_req req;
        memset(&req, 0, sizeof req);
        req.task_id = ta->task_id;
        req.attempt = ta->attempt;
        req.nfds = vfd[1] >= 0 ? KF_WARM_FD_VERDICT + 1 : KF_WARM_FD_VERDICT;
        if (kf_sandbox_enabled())
            snprintf(req.scratch, sizeof req.scratch, "%s", r->dir);
        int fds[KF_WARM_MAX_FDS] = {in_fd, pfd[1], log_fd, ofd[1], vfd[1]};
        pid = warms_spawn(a->warms, r->gpu, r->gpu_index, ta->spec->problem_hash, &req, fds,
                          &warm_pid, err);
        if (pid < 0 && err->code == KF_EUNAVAIL) {
            kf_debug("warm.skip", "task=0x%llx why=\"%s\"", (unsigned long long)ta->task_id,
                     err->msg);
            pid = fork(); /* no warm runner got its descriptors */
        } else if (pid < 0) {
            errno = 0;
        }
    } else {
        pid = fork();
    }
    if (pid < 0) {
        rc = errno ? kf_err_set(err, KF_EIO, "fork: %s", strerror(errno)) : KF_EIO;
        close(in_fd);
        if (task_fd[1] >= 0)
            close(task_fd[1]);
        close(log_fd);
        close_pair(pfd);
        close_pair(vfd);
        close_pair(ofd);
        goto fail;
    }
    if (pid == 0) {
        /* Child: own process group, so a kill reaches everything it starts;
         * and it dies with the agent, so a killed agent leaves no runner. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The runner's channel (runner/harness.h): stdin nothing, stdout
         * and stderr the kernel's output, which this agent keeps as text;
         * the task, the frames, the runner's log and a candidate's verdict
         * pipe on descriptors of their own. Nothing else of the agent's
         * reaches the kernel: not its socket, its outbox or other runners'
         * pipes, no KFLEET_* variable, no SSH agent; the runner's sandbox
         * does the rest. */
        int null = open("/dev/null", O_RDONLY);
        int place[KF_RUNNER_FD_VERDICT + 1] = {null, ofd[1], ofd[1], in_fd, pfd[1], log_fd, vfd[1]};
        if (kf_sandbox_place_fds(place, KF_RUNNER_FD_VERDICT + 1) != 0) {
            dprintf(log_fd, "cannot place the runner's descriptors: %s\n", strerror(errno));
            _exit(127);
        }
        int sandboxed = kf_sandbox_enabled();
        child_env(a, r->gpu, r->gpu_index);
        /* The scratch dir is what turns the runner's sandbox on. */
        char *argv[] = {"kfleet-agent", "--runner", "--workdir", a->workdir, "--channel",
                        NULL,           NULL,       NULL,        NULL};
        int n = 5;
        if (sandboxed) {
            argv[n++] = "--scratch";
            argv[n++] = r->dir;
        }
        if (serve)
            argv[n++] = "--serve";
        execv(a->runner_exe, argv);
        dprintf(KF_RUNNER_FD_LOG, "cannot exec runner %s: %s\n", a->runner_exe, strerror(errno));
        _exit(127);
    }
    if (!warm_pid) /* a warm runner's child set its own group */
        setpgid(pid, pid);
    r->warm_pid = warm_pid;
    close(in_fd);
    close(log_fd);
    close(pfd[1]);
    close(ofd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    fcntl(ofd[0], F_SETFL, O_NONBLOCK);
    r->kout_fd = ofd[0];
    if (vfd[0] >= 0) {
        close(vfd[1]);
        fcntl(vfd[0], F_SETFL, O_NONBLOCK);
        r->verdict_fd = vfd[0];
        r->want_checks = /* a profile re-checks during its samples and after them */
            kf_task_kind_at(ta->spec->kind)->report == KF_REPORT_VALIDATION
                ? (uint32_t)ta->spec->n_seeds
                : 2;
    }
    r->pid = pid;
    r->out_fd = pfd[0];
    r->in_fd = task_fd[1];
    begin_task(a, r, ta);
    a->runners[a->nrunners++] = r;
    if (serve && hand_task(a, r, ta, err) != KF_OK) {
        /* It dies at once; the reaper reports the attempt failed, as a
         * runner that could not start. */
        kill(-pid, SIGKILL);
        return KF_OK;
    }
    log_start(r, ta);
    return KF_OK;
fail:
    kf_buf_release(&r->in);
    free(r);
    return rc;
}

static void tail_of(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        kf_buf_release(&b);
        return;
    }
    /* The last 10 lines, at most len-1 bytes. */
    size_t start = b.len, lines = 0;
    while (start > 0 && lines <= 10) {
        start--;
        if (b.data[start] == '\n' && start + 1 < b.len)
            lines++;
    }
    if (lines > 10)
        start++;
    if (b.len - start >= len)
        start = b.len - (len - 1);
    snprintf(out, len, "%s", b.data + start);
    kf_buf_release(&b);
}

/* At most this much of a runner's frames, or of its kernel's output, is
 * read in one drain: a runner that floods either cannot keep the agent's
 * loop (its heartbeats, its other runners) waiting; the rest is read on the
 * next turn of the loop. */
#define DRAIN_MAX (4u << 20)
/* What is read of the kernel's output when its task's Result arrives:
 * everything it wrote before, unless a process of the kernel's goes on
 * writing; then the Result goes without the rest (it is counted with the
 * next task's, or dropped with the runner). */
#define RESULT_DRAIN_MAX (64u << 20)

/* kfleet kills runner r for a reason its attempt's error gives (the first
 * such reason stays). */
static void kill_for(krunner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kill_for(krunner *r, const char *fmt, ...)
{
    if (!r->killed_why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->killed_why, sizeof r->killed_why, fmt, ap);
        va_end(ap);
    }
    kf_error("runner.killed", "task=0x%llx pid=%d why=\"%s\"", (unsigned long long)r->task_id,
             (int)r->pid, r->killed_why);
    kill(-r->pid, SIGKILL);
}

/* The kernel's output of r's task so far into res (pointing into *keep,
 * which must outlive the frame), and r's record of it started afresh. */
static void attach_output(krunner *r, Kfleet__Result *res, kf_buf *keep)
{
    if (r->kout_fd >= 0)
        kf_kout_read(r->kout, &r->kout_fd, RESULT_DRAIN_MAX);
    res->kernel_output_bytes = kf_kout_total(r->kout);
    kf_kout_render(r->kout, keep);
    res->kernel_output.data = (uint8_t *)keep->data;
    res->kernel_output.len = keep->len;
    kf_kout_reset(r->kout);
}

/* Handles the frames a runner wrote so far, and keeps its kernel's output. */
void runners_drain(kf_agent *a, krunner *r)
{
    char buf[65536];
    if (r->kout_fd >= 0)
        kf_kout_read(r->kout, &r->kout_fd, DRAIN_MAX);
    for (size_t got = 0; r->out_fd >= 0 && got < DRAIN_MAX;) {
        ssize_t n = read(r->out_fd, buf, sizeof buf);
        if (n > 0) {
            kf_buf_add(&r->in, buf, (size_t)n);
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        close(r->out_fd); /* EOF, or an error: no more frames */
        r->out_fd = -1;
    }
    size_t off = 0;
    while (r->in.len - off >= 4) {
        const uint8_t *p = (const uint8_t *)r->in.data + off;
        uint32_t len = kf_frame_len_get(p);
        if (len > KF_MAX_FRAME) {
            /* The channel is the runner's alone (its kernel's stdout is
             * not it): something in its process wrote there. Nothing after
             * can be read in step, so the runner goes. */
            kill_for(r,
                     "kfleet killed the runner: its message channel carried a frame of %u bytes "
                     "(at most %u); the kernel's stdout and stderr are not that channel, so code "
                     "in the runner's process wrote into the channel itself",
                     len, (unsigned)KF_MAX_FRAME);
            off = r->in.len;
            break;
        }
        if (r->in.len - off - 4 < len)
            break;
        kf_err err;
        Kfleet__Envelope *env = kf_wire_unpack(p + 4, len, &err);
        off += 4 + len;
        if (!env) {
            kill_for(r,
                     "kfleet killed the runner: a message on its channel does not decode (%s); "
                     "the kernel's stdout and stderr are not that channel, so code in the "
                     "runner's process wrote into the channel itself",
                     err.msg);
            off = r->in.len;
            break;
        }
        if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES && !r->got_result) {
            env->samples->task_id = r->task_id;
            env->samples->attempt = r->attempt;
            r->nsamples += (uint32_t)env->samples->n_samples;
            link_emit(a, env, r->task_id, r->attempt, 0);
        } else if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT && !r->got_result) {
            Kfleet__Result *res = env->result;
            char *runner_agent = res->agent_id;
            res->task_id = r->task_id;
            res->attempt = r->attempt;
            res->agent_id = a->info->agent_id;
            res->sample_count = r->nsamples;
            if (r->cancelled)
                res->state = KFLEET__TASK_STATE__CANCELLED;
            char *runner_error = res->error;
            ProtobufCBinaryData runner_output = res->kernel_output;
            kf_buf output = KF_BUF_INIT;
            attach_output(r, res, &output);
            if (r->verdict_fd >= 0)
                kf_verdict_apply(r->verdict_fd, r->want_checks, res, r->verdict_why,
                                 sizeof r->verdict_why);
            if (res->artifact_stale) /* the runner's log goes with its scratch dir */
                kf_warn("runner.artifact_stale", "task=0x%llx error=\"%.300s\"",
                        (unsigned long long)r->task_id, res->error ? res->error : "");
            link_emit(a, env, r->task_id, r->attempt, 1);
            r->got_result = 1;
            res->agent_id = runner_agent; /* ours is not the decoder's to free */
            res->error = runner_error;
            res->kernel_output = runner_output;
            kf_buf_release(&output);
            if (r->in_fd >= 0 && res->runner_stays && !r->cancelled &&
                res->state == KFLEET__TASK_STATE__SUCCEEDED) {
                /* Waits for its kernel's next task, its slot free. */
                r->idle = 1;
                r->idle_mono = kf_mono_ns();
                free_slot(a, r);
                kf_debug("runner.end", "task=0x%llx attempt=%u status=0 pid=%d stays=1",
                         (unsigned long long)r->task_id, r->attempt, (int)r->pid);
            } else if (r->in_fd >= 0) {
                close(r->in_fd); /* it leaves after this task */
                r->in_fd = -1;
                if (res->state == KFLEET__TASK_STATE__SUCCEEDED && !r->cancelled) {
                    /* It said why on its stderr (runner.not_kept). */
                    char logp[PATH_MAX + 16], tail[512];
                    snprintf(logp, sizeof logp, "%s/runner.log", r->dir);
                    tail_of(logp, tail, sizeof tail);
                    for (char *c = tail; *c; c++)
                        *c = *c == '\n' || *c == '"' ? ' ' : *c;
                    kf_info("runner.leaves", "task=0x%llx pid=%d tasks=%u log=\"%s\"",
                            (unsigned long long)r->task_id, (int)r->pid, r->tasks, tail);
                }
            }
        }
        kf_wire_free(env);
    }
    if (off) {
        memmove(r->in.data, r->in.data + off, r->in.len - off);
        r->in.len -= off;
    }
}

/* The end of a runner that has exited (or been killed and reaped): its
 * pipes, its scratch directory unless kept, and the struct. */
static void free_runner(kf_agent *a, krunner *r)
{
    if (r->out_fd >= 0)
        close(r->out_fd);
    if (r->in_fd >= 0)
        close(r->in_fd);
    if (r->verdict_fd >= 0)
        close(r->verdict_fd);
    if (r->kout_fd >= 0)
        close(r->kout_fd);
    kf_kout_destroy(&r->kout);
    if (!a->cfg.keep_tmp)
        remove_dirs(r);
    kf_buf_release(&r->in);
    free(r);
}

static void finish_runner(kf_agent *a, size_t idx)
{
    krunner *r = a->runners[idx];
    if (!r->got_result) {
        char why[3072], tail[2048], logp[PATH_MAX + 16];
        snprintf(logp, sizeof logp, "%s/runner.log", r->dir);
        tail_of(logp, tail, sizeof tail);
        int state, infra;
        ending_explain(r, ending_oom_kills(), tail, why, sizeof why, &state, &infra);
        send_result(a, r, state, infra, why);
    }
    if (!r->idle) /* an idle runner's task ended with its result */
        kf_debug("runner.end", "task=0x%llx attempt=%u status=%d", (unsigned long long)r->task_id,
                 r->attempt, r->status);
    if (!r->idle)
        free_slot(a, r);
    free_runner(a, r);
    a->runners[idx] = a->runners[--a->nrunners];
}

void runners_reap(kf_agent *a)
{
    int status;
    pid_t pid;
    struct rusage ru;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        for (size_t i = 0; i < a->nrunners; i++) {
            if (a->runners[i]->pid == pid) {
                a->runners[i]->exited = 1;
                a->runners[i]->status = status;
                a->runners[i]->maxrss_kb = ru.ru_maxrss;
            }
        }
        warms_reaped(a->warms, pid, status);
    }
    warms_tick(a->warms);
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        if (r->idle && !r->exited && now - r->idle_mono > (uint64_t)(RUNNERS_IDLE_S * 1e9)) {
            retire(a, i, "idle");
            continue;
        }
        if (!r->idle && !r->exited && !r->timed_out && now > r->deadline_mono) {
            kf_warn("runner.timeout", "task=0x%llx attempt=%u limit_s=%.1f",
                    (unsigned long long)r->task_id, r->attempt, r->limit_s);
            r->timed_out = 1;
            kill(-r->pid, SIGKILL);
        }
        if (r->exited && r->out_fd >= 0)
            runners_drain(a, r);
        if (r->exited && r->out_fd < 0) {
            finish_runner(a, i);
            continue;
        }
        i++;
    }
}

void runners_stop_all(kf_agent *a)
{
    for (size_t i = 0; i < a->nrunners; i++) {
        krunner *r = a->runners[i];
        if (!r->exited) {
            kill(-r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
        free_runner(a, r);
    }
    a->nrunners = 0;
    warms_destroy(&a->warms);
}
