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
#include "agent/checkers.h"
#include "agent/childenv.h"
#include "agent/contain.h"
#include "agent/ending.h"
#include "agent/kout.h"
#include "agent/results.h"
#include "agent/serve.h"
#include "common/execenv.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/build.h"
#include "runner/channel.h"
#include "runner/sandbox.h"
#include "runner/thermal.h"
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
#include <sys/socket.h>
#include <sys/syscall.h>
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
        if (a->runners[i]->task_id == task && a->runners[i]->attempt == attempt &&
            !a->runners[i]->handed_off)
            return a->runners[i];
    return NULL;
}

void runners_fail_assignment(kf_agent *a, const Kfleet__TaskAssign *ta, const char *why)
{
    krunner tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.task_id = ta->task_id;
    tmp.attempt = ta->attempt;
    tmp.started_mono = kf_mono_ns();
    /* The runner never ran: nothing the kernel did. */
    results_send(a, &tmp, KFLEET__TASK_STATE__FAILED, 1, why);
}

/* How long a serving runner waits idle for its kernel's next task. The
 * coordinator hands a GPU its next task as soon as the result is in, and a
 * sweep runs kernel by kernel, so the next task of the kernel comes within
 * milliseconds when it comes at all. */
#define RUNNERS_IDLE_S 5.0

static void take_slot(kf_agent *a, krunner *r)
{
    if (r->slot_held)
        return;
    r->slot_held = 1;
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index]++;
    else
        a->cpu_used++;
}

static void free_slot(kf_agent *a, krunner *r)
{
    if (!r->slot_held)
        return;
    r->slot_held = 0;
    if (r->gpu && r->gpu_index < 64) {
        a->gpu_busy[r->gpu_index] -= a->gpu_busy[r->gpu_index] > 0;
        a->gpu_freed_mono[r->gpu_index] = kf_mono_ns();
    } else if (a->cpu_used > 0)
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
    r->nseeds = 0;
    const Kfleet__TaskSpec *sp = ta->spec;
    if (sp && sp->problem_hash && *sp->problem_hash) /* a candidate's */
        for (size_t i = 0; i < sp->n_seeds && r->nseeds < sizeof r->seeds / sizeof *r->seeds; i++)
            r->seeds[r->nseeds++] = sp->seeds[i];
    if (sp && kf_task_kind_at(sp->kind)->references) /* a reference task's */
        for (size_t i = 0; i < sp->n_seeds && r->nseeds < sizeof r->seeds / sizeof *r->seeds; i++)
            r->seeds[r->nseeds++] = sp->seeds[i];
    r->tasks++;
    r->started_mono = kf_mono_ns();
    r->oom_kills0 = ending_oom_kills();
    r->limit_s =
        ta->spec && ta->spec->time_limit_s > 0 ? ta->spec->time_limit_s : a->cfg.default_limit_s;
    r->deadline_mono = r->started_mono + (uint64_t)(r->limit_s * 1e9);
    take_slot(a, r);
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

/* Ends idle runner idx without waiting for it: a process with a CUDA
 * context takes ~60 ms to exit after SIGKILL (the driver tearing the
 * context down; H200, driver 580), which the next candidate's runner
 * spends starting instead. That runner holds its task, and so opens no
 * context, until this one is reaped (serve_hand_held). Waits as retire
 * does where no pidfd can say when it is gone. */
static void retire_later(kf_agent *a, size_t idx, const char *why)
{
    krunner *r = a->runners[idx];
#ifdef SYS_pidfd_open
    r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
#endif
    if (r->pidfd < 0) {
        retire(a, idx, why);
        return;
    }
    kf_info("runner.retire", "pid=%d tasks=%u why=\"%s\" reaped=later", (int)r->pid, r->tasks, why);
    kill(-r->pid, SIGKILL);
    r->retiring = 1;
    if (r->out_fd >= 0) { /* nothing more is read from it */
        close(r->out_fd);
        r->out_fd = -1;
    }
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
static int reuse(kf_agent *a, const Kfleet__TaskAssign *ta, size_t missing)
{
    /* A candidate whose references this agent lacks (missing) computes
     * them in a runner of the problem first (runners_start), then starts
     * its own. */
    int cand = kf_verdict_wanted(ta->spec);
    int serve = serve_takes(ta) && !missing, gpu = serve_on_gpu(ta);
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        int same_gpu = gpu && r->gpu && r->gpu_index == ta->gpu_index;
        /* One killed for its channel (while idle: a process of its kernel
         * wrote after its Result) is on its way out, not a runner. */
        if (!r->idle || r->exited || r->retiring || r->killed_why[0] ||
            (!same_gpu && (gpu || r->gpu))) {
            i++;
            continue;
        }
        if (serve && serve_holds(r, ta)) {
            kf_err err;
            if ((cand ? serve_hand_candidate(a, r, ta, &err) : serve_hand(a, r, ta, -1, &err)) ==
                KF_OK) {
                begin_task(a, r, ta);
                log_start(r, ta);
                return 1;
            }
            kf_warn("runner.reuse", "pid=%d error=\"%s\"", (int)r->pid, err.msg);
            retire(a, i, "it could not be handed the task");
            continue;
        }
        if (same_gpu) {
            /* A serving runner comes next (serve): it holds its task until
             * this one is gone. Any other waits here (a reference's). */
            if (serve) {
                retire_later(a, i, "its GPU is wanted for another kernel");
                i++;
            } else {
                retire(a, i, "its GPU is wanted for another kernel");
            }
            continue;
        }
        i++;
    }
    return 0;
}

/* A runner's environment, made before its fork (common/execenv.h): the
 * agent's made a runner's (childenv.h), with its spawn's stamp. */
static kf_execenv *runner_env(const kf_agent *a, const krunner *r, uint64_t spawn)
{
    kf_execenv *env = kf_execenv_new();
    kf_childenv e = {a->compat_dir, a->host_lock, a->info};
    childenv_make(&e, r->gpu, r->gpu_index, env);
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%llu", (unsigned long long)spawn);
    kf_execenv_set(env, "KF_RUNNER_SPAWN_NS", stamp);
    return env;
}

/* Starts a runner for ta (a fresh or a warm runner's child): the runner,
 * in a->runners, or NULL with err. */
static krunner *start_runner(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err)
{
    uint64_t spawn = kf_mono_ns(); /* the runner's start phase from here (harness.h) */
    int serve = serve_takes(ta);
    krunner *r = kf_xcalloc(1, sizeof *r);
    kf_buf_init(&r->in);
    r->out_fd = -1;
    r->in_fd = -1;
    r->pidfd = -1;
    kf_buf_init(&r->held);
    r->verdict_fd = -1;
    r->kout_fd = -1;
    r->kout = kf_kout_new();
    r->gpu = serve_on_gpu(ta);
    r->gpu_index = ta->gpu_index;
    if (serve)
        serve_mark(r, ta);
    int rc = contain_runner(a, r, ta, err); /* its scratch dir, group and mounts */
    if (rc)
        goto fail;
    char path[PATH_MAX + 32];
    int in_fd = -1, task_fd[2] = {-1, -1};
    if (serve) {
        /* Its tasks come on a socket, this one first: a socket, so that a
         * candidate's next checker can be passed with its task. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, task_fd) == 0) {
            in_fd = task_fd[0];
            /* One way, as the pipe was: what the runner's process writes
             * on it fails (EPIPE) rather than waiting here unread. */
            shutdown(task_fd[1], SHUT_RD);
        }
    } else {
        Kfleet__TaskAssign st = serve_stamped(a, r, ta);
        size_t n = kfleet__task_assign__get_packed_size(&st);
        kf_buf_reset(&a->scratch);
        kf_buf_grow(&a->scratch, n);
        kfleet__task_assign__pack(&st, (uint8_t *)a->scratch.data);
        snprintf(path, sizeof path, "%s/task.pb", r->dir);
        if ((rc = kf_write_file(path, a->scratch.data, n, 0600, err)))
            goto fail;
        in_fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    snprintf(path, sizeof path, "%s/runner.log", r->dir);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int pfd[2] = {-1, -1}, ofd[2] = {-1, -1}, cfd = -1;
    if (in_fd < 0 || log_fd < 0 || pipe2(pfd, O_CLOEXEC) != 0 || pipe2(ofd, O_CLOEXEC) != 0)
        rc =
            kf_err_set(err, KF_EIO, "cannot prepare the runner in %s: %s", r->dir, strerror(errno));
    /* A candidate's checker, started here beside its runner (checkers.h). */
    else if (kf_verdict_wanted(ta->spec))
        rc = checkers_start(a, r, ta, &cfd, err);
    if (rc != KF_OK) {
        close_pair(ofd);
        close_pair(pfd);
        if (in_fd >= 0)
            close(in_fd);
        if (task_fd[1] >= 0)
            close(task_fd[1]);
        if (log_fd >= 0)
            close(log_fd);
        goto fail;
    }
    /* A Python problem's candidate: forked by its warm runner. Else forked
     * here, its environment and arguments made first (common/execenv.h). */
    kf_execenv *env = NULL;
    /* The scratch dir is what turns the runner's sandbox on. */
    char *argv[] = {"kfleet-agent", "--runner", "--workdir", a->workdir, "--channel",
                    NULL,           NULL,       NULL,        NULL};
    int argn = 5;
    if (kf_sandbox_enabled()) {
        argv[argn++] = "--scratch";
        argv[argn++] = r->dir;
    }
    if (serve)
        argv[argn++] = "--serve";
    pid_t warm_pid = 0, pid;
    if (warmup_for_task(a, ta, serve_on_gpu(ta))) {
        kf_warm_req req;
        memset(&req, 0, sizeof req);
        req.task_id = ta->task_id;
        req.attempt = ta->attempt;
        req.spawn_ns = spawn;
        req.serve = (uint32_t)serve;
        req.nfds = cfd >= 0 ? KF_WARM_FD_CHECKER + 1 : KF_WARM_FD_CHECKER;
        contain_warm(r, &req);
        if (kf_sandbox_enabled())
            snprintf(req.scratch, sizeof req.scratch, "%s", r->dir);
        /* Its kept cache's recorded launchers, built by the warm runner
         * once this runner is forked (warm.h): a candidate's profile,
         * after its validate, brings its signatures to the next
         * candidates. */
        const char *kh = ta->spec->kernel_hash;
        if (kh && strlen(kh) < sizeof req.kernel_hash)
            snprintf(req.kernel_hash, sizeof req.kernel_hash, "%s", kh);
        int fds[KF_WARM_MAX_FDS] = {in_fd, pfd[1], log_fd, ofd[1], cfd};
        pid = warms_spawn(a->warms, r->gpu, r->gpu_index, &req, fds, &warm_pid, err);
        if (pid < 0 && err->code == KF_EUNAVAIL) {
            kf_info("warm.skip", "task=0x%llx why=\"%s\"", (unsigned long long)ta->task_id,
                    err->msg);
            env = runner_env(a, r, spawn);
            pid = fork(); /* no warm runner got its descriptors */
        } else if (pid < 0) {
            errno = 0;
        }
    } else {
        env = runner_env(a, r, spawn);
        pid = fork();
    }
    if (pid < 0) {
        rc = errno ? kf_err_set(err, KF_EIO, "fork: %s", strerror(errno)) : KF_EIO;
        kf_execenv_destroy(&env);
        close(in_fd);
        if (task_fd[1] >= 0)
            close(task_fd[1]);
        close(log_fd);
        close_pair(pfd);
        close_pair(ofd);
        if (cfd >= 0)
            close(cfd);
        goto fail;
    }
    if (pid == 0) {
        /* Child: own process group, so a kill reaches everything it starts;
         * and it dies with the agent, so a killed agent leaves no runner. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The runner's channel (runner/harness.h): stdin nothing, stdout
         * and stderr the kernel's output, which this agent keeps as text;
         * the task, the frames, the runner's log and a candidate's socket
         * to its checker on descriptors of their own. Nothing else of the agent's
         * reaches the kernel: not its socket, its outbox or other runners'
         * pipes, no KFLEET_* variable, no SSH agent; the runner's sandbox
         * does the rest. */
        int null = open("/dev/null", O_RDONLY);
        int place[KF_RUNNER_FD_CHECKER + 1] = {null, ofd[1], ofd[1], in_fd, pfd[1], log_fd, cfd};
        if (kf_sandbox_place_fds(place, KF_RUNNER_FD_CHECKER + 1) != 0) {
            kf_exec_say(log_fd, "cannot place the runner's descriptors", "", kf_exec_why(errno));
            _exit(127);
        }
        contain_child(r); /* its group and mounts, before anything of it runs */
        execve(a->runner_exe, argv, kf_execenv_array(env));
        kf_exec_say(KF_RUNNER_FD_LOG, "cannot exec runner ", a->runner_exe, kf_exec_why(errno));
        _exit(127);
    }
    kf_execenv_destroy(&env);
    /* Its own group before the agent may kill it: a warm runner's child
     * sets it too, but one cloned as this agent's child (warm.c) may not
     * have yet; one forked through an intermediate is not this agent's
     * child yet, and the intermediate set it (ESRCH here). */
    setpgid(pid, pid);
    r->warm_pid = warm_pid;
    close(in_fd);
    close(log_fd);
    close(pfd[1]);
    close(ofd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    fcntl(ofd[0], F_SETFL, O_NONBLOCK);
    r->kout_fd = ofd[0];
    if (cfd >= 0) {
        close(cfd);
        r->want_checks = serve_checks_wanted(ta);
    }
    r->pid = pid;
    r->out_fd = pfd[0];
    r->in_fd = task_fd[1];
    begin_task(a, r, ta);
    a->runners[a->nrunners++] = r;
    if (serve && r->gpu && serve_gpu_retiring(a, r->gpu_index)) {
        serve_frame(a, r, ta, &r->held); /* handed by serve_hand_held */
        r->holding = 1;
    } else if (serve && serve_hand(a, r, ta, -1, err) != KF_OK) {
        /* It dies at once; the reaper reports the attempt failed, as a
         * runner that could not start. */
        kill(-pid, SIGKILL);
        return r;
    }
    log_start(r, ta);
    return r;
fail:
    contain_end(a, r);
    checkers_stop(r);
    if (r->verdict_fd >= 0)
        close(r->verdict_fd);
    kf_kout_destroy(&r->kout);
    kf_buf_release(&r->in);
    free(r);
    return NULL;
}

int runners_start(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err)
{
    /* A candidate whose references this agent lacks: a runner that loads
     * only the problem computes them first (checkers.h). */
    size_t missing = kf_verdict_wanted(ta->spec) ? checkers_missing(a, ta->spec) : 0;
    if (reuse(a, ta, missing))
        return KF_OK;
    if (missing) {
        uint8_t *packed;
        size_t len;
        int rc = checkers_prestage(a, ta, &packed, &len, err);
        Kfleet__TaskAssign *pre =
            rc == KF_OK ? kfleet__task_assign__unpack(NULL, len, packed) : NULL;
        free(packed);
        if (!pre)
            return rc != KF_OK ? rc : kf_err_set(err, KF_EINVAL, "internal: a prestage task");
        krunner *r = start_runner(a, pre, err);
        kfleet__task_assign__free_unpacked(pre, NULL);
        if (!r)
            return err->code ? err->code : KF_EIO;
        r->then_len = kfleet__task_assign__get_packed_size(ta);
        r->then = kf_xmalloc(r->then_len ? r->then_len : 1);
        kfleet__task_assign__pack(ta, r->then);
        kf_info("refs.compute", "task=0x%llx attempt=%u missing=%zu of %zu warm=%d",
                (unsigned long long)ta->task_id, ta->attempt, missing, ta->spec->n_references,
                (int)r->warm_pid);
        return KF_OK;
    }
    return start_runner(a, ta, err) ? KF_OK : (err->code ? err->code : KF_EIO);
}

/* At most this much of a runner's frames, or of its kernel's output, is
 * read in one drain: a runner that floods either cannot keep the agent's
 * loop (its heartbeats, its other runners) waiting; the rest is read on the
 * next turn of the loop. */
#define DRAIN_MAX (4u << 20)

/* The Result runner r wrote, sent; then a serving runner waits for its
 * kernel's next task, its slot free, or leaves. */
static void result_in(kf_agent *a, krunner *r, Kfleet__Envelope *env)
{
    contain_relay(a, r, env); /* results_relay, after its orphans are killed */
    const Kfleet__Result *res = env->result;
    if (r->in_fd >= 0 && res->runner_stays && !r->cancelled &&
        res->state == KFLEET__TASK_STATE__SUCCEEDED) {
        r->idle = 1;
        r->idle_mono = kf_mono_ns();
        free_slot(a, r);
        kf_debug("runner.end", "task=0x%llx attempt=%u status=0 pid=%d stays=1",
                 (unsigned long long)r->task_id, r->attempt, (int)r->pid);
    } else if (r->in_fd >= 0) {
        close(r->in_fd); /* it leaves after this task */
        r->in_fd = -1;
        if (res->state == KFLEET__TASK_STATE__SUCCEEDED && !r->cancelled) {
            /* It said why in its log (runner.not_kept). */
            char tail[512];
            results_log_tail(r, tail, sizeof tail);
            for (char *c = tail; *c; c++)
                *c = *c == '\n' || *c == '"' ? ' ' : *c;
            kf_info("runner.leaves", "task=0x%llx pid=%d tasks=%u log=\"%s\"",
                    (unsigned long long)r->task_id, (int)r->pid, r->tasks, tail);
        }
    }
}

/* The Result of a runner that computed a candidate's missing references
 * (r->then): kept, then the candidate's own runner starts in the slot; a
 * failure there is the candidate task's. Nothing of it is sent. */
static void hand_off(kf_agent *a, krunner *r, const Kfleet__Result *res)
{
    kf_err err;
    char why[3600];
    int infra = res->infra;
    Kfleet__TaskAssign *ta = NULL;
    uint32_t recomputed = 0, differ = 0;
    if (r->cancelled) {
        results_send(a, r, KFLEET__TASK_STATE__CANCELLED, 0, "cancelled by the coordinator");
        return;
    }
    if (res->state != KFLEET__TASK_STATE__SUCCEEDED) {
        snprintf(why, sizeof why,
                 "the problem's reference for this configuration could not be computed on this "
                 "agent, which lacked it: %s",
                 res->error ? res->error : "");
        results_send(a, r, res->state, infra, why);
        return;
    }
    ta = checkers_handoff(a, r, res, &recomputed, &differ, &err);
    /* Its work is done: the slot goes to the candidate, the process (and
     * its context on the GPU) away. */
    r->handed_off = 1;
    r->got_result = 1;
    free_slot(a, r);
    kill(-r->pid, SIGKILL);
    krunner *next = ta ? start_runner(a, ta, &err) : NULL;
    if (next) {
        next->refs_recomputed = recomputed;
        next->refs_differ = differ;
        if (differ)
            kf_info("refs.differ", "task=0x%llx recomputed=%u differ=%u",
                    (unsigned long long)ta->task_id, recomputed, differ);
    } else {
        snprintf(why, sizeof why, "the candidate could not start after its references: %s",
                 err.msg);
        r->got_result = 0;
        results_send(a, r, KFLEET__TASK_STATE__FAILED, 1, why);
    }
    if (ta)
        kfleet__task_assign__free_unpacked(ta, NULL);
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
    if (r->killed_why[0]) {
        /* Killed for what its channel carried: what it wrote before the
         * kill landed (a Result, samples), or a process of its that
         * outlived it writes after, is not its runner's. The pipe is still
         * read to its end, and dropped. */
        kf_buf_reset(&r->in);
        return;
    }
    size_t off = 0;
    while (r->in.len - off >= 4) {
        const uint8_t *p = (const uint8_t *)r->in.data + off;
        uint32_t len = kf_frame_len_get(p);
        if (len > KF_MAX_FRAME) {
            /* The channel is the runner's alone (its kernel's stdout is
             * not it): something in its process wrote there. Nothing after
             * can be read in step, so the runner goes. */
            results_kill(
                r,
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
            results_kill(r,
                         "kfleet killed the runner: a message on its channel does not decode (%s); "
                         "the kernel's stdout and stderr are not that channel, so code in the "
                         "runner's process wrote into the channel itself",
                         err.msg);
            off = r->in.len;
            break;
        }
        if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES && !r->got_result) {
            /* A task's samples come numbered 0, 1, 2, ... (harness.h): one
             * out of that order is a second writer on the runner's channel
             * (issue 43: a forwarder that sent its own copies first), so
             * nothing of the batch is kept and the runner goes. */
            const Kfleet__SampleBatch *sb = env->samples;
            size_t bad = 0;
            while (bad < sb->n_samples && sb->samples[bad]->seq == r->nsamples + bad)
                bad++;
            if (kf_task_kind_at(r->kind)->report != KF_REPORT_TIMING && sb->n_samples) {
                results_kill(r,
                             "kfleet killed the runner: samples came from a task that takes "
                             "none (a %s): something in the runner's process wrote samples on "
                             "its channel",
                             kf_task_kind_name(r->kind));
                kf_wire_free(env);
                off = r->in.len;
                break;
            }
            if (bad < sb->n_samples) {
                results_kill(r,
                             "kfleet killed the runner: sample number %u came where %u was due (a "
                             "duplicated or out-of-order sample: something in the runner's "
                             "process wrote samples on its channel); no time of this task is kept",
                             sb->samples[bad]->seq, (unsigned)(r->nsamples + bad));
                kf_wire_free(env);
                off = r->in.len;
                break;
            }
            env->samples->task_id = r->task_id;
            env->samples->attempt = r->attempt;
            r->nsamples += (uint32_t)env->samples->n_samples;
            link_emit(a, env, r->task_id, r->attempt, 0);
        } else if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT && !r->got_result) {
            if (r->then)
                hand_off(a, r, env->result);
            else
                result_in(a, r, env);
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
    checkers_stop(r);
    free(r->then);
    contain_end(a, r); /* its group killed, its kernel's cache kept: before its dirs go */
    if (!a->cfg.keep_tmp)
        remove_dirs(r);
    if (r->pidfd >= 0)
        close(r->pidfd);
    kf_buf_release(&r->held);
    kf_buf_release(&r->in);
    free(r);
}

static void finish_runner(kf_agent *a, size_t idx)
{
    krunner *r = a->runners[idx];
    if (!r->got_result) {
        char why[3072], tail[2048];
        results_log_tail(r, tail, sizeof tail);
        int state, infra;
        ending_explain(r, ending_oom_kills(), tail, why, sizeof why, &state, &infra);
        results_send(a, r, state, infra, why);
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
            if (a->runners[i]->checker_pid == pid)
                a->runners[i]->checker_pid = 0; /* reaped: its pid is not ours to kill */
        }
        warms_reaped(a->warms, pid, status);
    }
    warms_tick(a->warms);
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        if (r->idle && !r->exited && !r->retiring &&
            now - r->idle_mono > (uint64_t)(RUNNERS_IDLE_S * 1e9)) {
            retire(a, i, "idle");
            continue;
        }
        /* A held runner's limit is serve_hand_held's: its task has not begun. */
        if (!r->idle && !r->exited && !r->timed_out && !r->holding && now > r->deadline_mono) {
            kf_warn("runner.timeout", "task=0x%llx attempt=%u limit_s=%.1f",
                    (unsigned long long)r->task_id, r->attempt, r->limit_s);
            r->timed_out = 1;
            kill(-r->pid, SIGKILL);
        }
        if (r->exited)
            contain_exited(a, r); /* what it left goes, and with it its pipes' writers */
        if (r->exited && r->out_fd >= 0)
            runners_drain(a, r);
        if (r->exited && r->out_fd < 0) {
            finish_runner(a, i);
            continue;
        }
        i++;
    }
    serve_hand_held(a);
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
