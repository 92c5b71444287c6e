/* agent — the kfleet-agent daemon loop; see agent.h.
 *
 * State machine toward the coordinator: unregistered → (Register, every
 * second until a Welcome) → registered. A Welcome with `reregister` (the
 * coordinator restarted or thought us lost) sends us back to unregistered.
 * On every Welcome all unacked outbox entries are due for resending.
 *
 * Runners: fork + exec of this binary with --runner, in their own process
 * group (so a kill takes the compiler or kernel children too), stdin from the
 * task file, stdout a pipe of frames (harness.h), stderr a log file whose
 * tail explains a runner that died without a result. */
#include "runner/doctor.h"
#include "common/xalloc.h"
#include "agent/agent.h"
#include "common/buf.h"
#include "runner/harness.h"
#include "common/inventory.h"
#include "common/log.h"
#include "agent/outbox.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_RUNNERS 128

typedef struct krunner {
    uint64_t task_id;
    uint32_t attempt;
    int kind;
    pid_t pid;
    int out_fd; /* -1 once at EOF */
    int exited, status;
    int got_result, timed_out, cancelled;
    int gpu;
    uint32_t gpu_index;
    uint64_t started_mono, deadline_mono;
    double limit_s;
    uint32_t nsamples;
    char dir[PATH_MAX];
    kf_buf in;
} krunner;

typedef struct kpending {
    uint64_t oseq;
    uint64_t task_id;
    uint32_t attempt;
    int is_result;
    uint64_t sent_mono; /* 0: due now */
} kpending;

struct kf_agent {
    kf_agent_config cfg;
    char workdir[PATH_MAX];
    char runner_exe[PATH_MAX];
    char doctor_error[512]; /* the inventory's doctor_error points here */
    void *zctx, *sock;
    void *monitor;             /* PAIR fed by the DEALER's monitor: handshakes and disconnects */
    int link_up;               /* a handshake succeeded and no disconnect since */
    uint64_t link_down_mono;   /* since when the coordinator has not been reachable; 0: up */
    uint64_t waiting_log_mono; /* when "still no coordinator" was last said */
    int said_lost;             /* coordinator_lost or no_coordinator was logged */
    uint64_t last_auth_log_mono;
    int stopping;            /* flushing the outbox on the way out: no new tasks */
    uint64_t reconnect_mono; /* when to connect again after a refused handshake; 0: none due */
    kf_outbox *outbox;
    Kfleet__AgentInfo *info;
    int welcomed;
    uint64_t last_register_mono, last_hb_mono;
    double hb_interval_s;
    krunner *runners[MAX_RUNNERS];
    size_t nrunners;
    uint32_t cpu_used;
    uint8_t gpu_busy[64];
    kpending *pending;
    size_t npending, cappending;
    kf_buf scratch;
    char refused[512];     /* the coordinator refused our id for good: why; the loop ends */
    char last_reject[512]; /* the last refusal logged, so a retried one is logged once */
};

/* ---- outbox bookkeeping ---- */

static void pending_add(kf_agent *a, uint64_t oseq, uint64_t task, uint32_t attempt, int is_result,
                        uint64_t sent)
{
    if (a->npending == a->cappending) {
        a->cappending = a->cappending ? a->cappending * 2 : 64;
        a->pending = kf_xrealloc(a->pending, a->cappending * sizeof *a->pending);
    }
    a->pending[a->npending++] = (kpending){oseq, task, attempt, is_result, sent};
}

static int load_pending_cb(void *ctx, uint64_t oseq, const void *data, size_t len)
{
    kf_agent *a = ctx;
    Kfleet__Envelope *env = kf_wire_unpack(data, len, NULL);
    if (!env)
        return 0;
    if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT)
        pending_add(a, oseq, env->result->task_id, env->result->attempt, 1, 0);
    else if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES)
        pending_add(a, oseq, env->samples->task_id, env->samples->attempt, 0, 0);
    else
        pending_add(a, oseq, 0, 0, 0, 0);
    kf_wire_free(env);
    return 0;
}

/* Stamps an oseq into env, stores it in the outbox, and sends it when
 * registered. Storing comes first: a message is never sent that a crash
 * could lose. */
static void emit(kf_agent *a, Kfleet__Envelope *env, uint64_t task, uint32_t attempt, int is_result)
{
    kf_err err;
    env->oseq = kf_outbox_next(a->outbox);
    kf_wire_pack(env, &a->scratch);
    int stored =
        kf_outbox_put(a->outbox, env->oseq, a->scratch.data, a->scratch.len, &err) == KF_OK;
    if (!stored)
        kf_error("outbox.put", "task=%llx error=\"%s\"", (unsigned long long)task, err.msg);
    uint64_t sent = 0;
    if (a->welcomed && zmq_send(a->sock, a->scratch.data, a->scratch.len, ZMQ_DONTWAIT) >= 0)
        sent = kf_mono_ns();
    if (stored)
        pending_add(a, env->oseq, task, attempt, is_result, sent);
}

struct resend_ctx {
    kf_agent *a;
    uint64_t now, due;
};

static int resend_cb(void *ctx, uint64_t oseq, const void *data, size_t len)
{
    struct resend_ctx *r = ctx;
    for (size_t i = 0; i < r->a->npending; i++) {
        kpending *p = &r->a->pending[i];
        if (p->oseq != oseq)
            continue;
        if (p->sent_mono && r->now - p->sent_mono < r->due)
            return 0;
        if (zmq_send(r->a->sock, data, len, ZMQ_DONTWAIT) < 0)
            return 1; /* HWM reached: try again next turn */
        p->sent_mono = r->now;
        return 0;
    }
    return 0;
}

static void resend_due(kf_agent *a)
{
    if (!a->welcomed || a->npending == 0)
        return;
    uint64_t now = kf_mono_ns();
    int any = 0;
    for (size_t i = 0; i < a->npending && !any; i++)
        if (!a->pending[i].sent_mono ||
            now - a->pending[i].sent_mono >= (uint64_t)(a->cfg.resend_s * 1e9))
            any = 1;
    if (!any)
        return;
    struct resend_ctx r = {a, now, (uint64_t)(a->cfg.resend_s * 1e9)};
    kf_outbox_foreach(a->outbox, resend_cb, &r);
}

/* ---- messages to the coordinator ---- */

static void send_direct(kf_agent *a, Kfleet__Envelope *env)
{
    kf_wire_send(a->sock, NULL, env, ZMQ_DONTWAIT);
}

static void send_register(kf_agent *a)
{
    uint64_t free_b = 0;
    if (kf_free_bytes(a->workdir, &free_b) == KF_OK)
        a->info->workdir_free_bytes = free_b;
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    reg.info = a->info;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    send_direct(a, &env);
    a->last_register_mono = kf_mono_ns();
}

static void send_heartbeat(kf_agent *a)
{
    Kfleet__AttemptRef refs[MAX_RUNNERS + 256];
    Kfleet__AttemptRef *ptrs[MAX_RUNNERS + 256];
    size_t n = 0;
    for (size_t i = 0; i < a->nrunners && n < MAX_RUNNERS; i++) {
        kfleet__attempt_ref__init(&refs[n]);
        refs[n].task_id = a->runners[i]->task_id;
        refs[n].attempt = a->runners[i]->attempt;
        ptrs[n] = &refs[n];
        n++;
    }
    for (size_t i = 0; i < a->npending && n < MAX_RUNNERS + 256; i++) {
        if (!a->pending[i].is_result)
            continue;
        kfleet__attempt_ref__init(&refs[n]);
        refs[n].task_id = a->pending[i].task_id;
        refs[n].attempt = a->pending[i].attempt;
        ptrs[n] = &refs[n];
        n++;
    }
    Kfleet__Heartbeat hb = KFLEET__HEARTBEAT__INIT;
    hb.n_active = n;
    hb.active = ptrs;
    hb.free_cpu_slots = a->info->cpu_slots - a->cpu_used;
    uint32_t gfree = 0;
    for (uint32_t g = 0; g < a->info->gpu_slots && g < 64; g++)
        gfree += !a->gpu_busy[g];
    hb.free_gpu_slots = gfree;
    uint64_t fb = 0;
    kf_free_bytes(a->workdir, &fb);
    hb.workdir_free_bytes = fb;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    send_direct(a, &env);
    a->last_hb_mono = kf_mono_ns();
}

/* ---- runners ---- */

static krunner *find_runner(kf_agent *a, uint64_t task, uint32_t attempt)
{
    for (size_t i = 0; i < a->nrunners; i++)
        if (a->runners[i]->task_id == task && a->runners[i]->attempt == attempt)
            return a->runners[i];
    return NULL;
}

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
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    emit(a, &env, r->task_id, r->attempt, 1);
    r->got_result = 1;
}

static void fail_assignment(kf_agent *a, const Kfleet__TaskAssign *ta, const char *why)
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
static void visible_device(uint32_t index, char *out, size_t len)
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

static int start_runner(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err)
{
    krunner *r = kf_xcalloc(1, sizeof *r);
    kf_buf_init(&r->in);
    r->task_id = ta->task_id;
    r->attempt = ta->attempt;
    r->kind = ta->spec ? ta->spec->kind : 0;
    r->out_fd = -1;
    r->gpu = ta->spec && ta->spec->device_cuda && ta->spec->kind != KFLEET__TASK_KIND__BUILD;
    r->gpu_index = ta->gpu_index;
    snprintf(r->dir, sizeof r->dir, "%s/tmp/%llx-%u", a->workdir, (unsigned long long)r->task_id,
             r->attempt);
    int rc = kf_mkdirs(r->dir, 0700, err);
    if (rc)
        goto fail;
    char path[PATH_MAX + 32];
    size_t n = kfleet__task_assign__get_packed_size(ta);
    kf_buf_reset(&a->scratch);
    kf_buf_grow(&a->scratch, n);
    kfleet__task_assign__pack(ta, (uint8_t *)a->scratch.data);
    snprintf(path, sizeof path, "%s/task.pb", r->dir);
    if ((rc = kf_write_file(path, a->scratch.data, n, 0600, err)))
        goto fail;
    int in_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/runner.log", r->dir);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int pfd[2];
    if (in_fd < 0 || log_fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
        rc =
            kf_err_set(err, KF_EIO, "cannot prepare the runner in %s: %s", r->dir, strerror(errno));
        if (in_fd >= 0)
            close(in_fd);
        if (log_fd >= 0)
            close(log_fd);
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        rc = kf_err_set(err, KF_EIO, "fork: %s", strerror(errno));
        close(in_fd);
        close(log_fd);
        close(pfd[0]);
        close(pfd[1]);
        goto fail;
    }
    if (pid == 0) {
        /* Child: own process group, so a kill reaches everything it starts;
         * and it dies with the agent, so a killed agent leaves no runner. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in_fd, 0);
        dup2(pfd[1], 1);
        dup2(log_fd, 2);
        /* In a sanitizer build, let a kernel's fault kill the runner by its
         * signal (what the task reports) instead of ASan's own exit. */
        const char *asan = getenv("ASAN_OPTIONS");
        if (asan) {
            char opts[1024];
            snprintf(opts, sizeof opts, "%s:handle_segv=0:handle_sigbus=0:handle_sigfpe=0", asan);
            setenv("ASAN_OPTIONS", opts, 1);
        }
        if (r->gpu) {
            char dev[128];
            visible_device(r->gpu_index, dev, sizeof dev);
            setenv("CUDA_VISIBLE_DEVICES", dev, 1);
        }
        execl(a->runner_exe, "kfleet-agent", "--runner", "--workdir", a->workdir, (char *)NULL);
        dprintf(2, "cannot exec runner %s: %s\n", a->runner_exe, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(in_fd);
    close(log_fd);
    close(pfd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    r->pid = pid;
    r->out_fd = pfd[0];
    r->started_mono = kf_mono_ns();
    r->limit_s =
        ta->spec && ta->spec->time_limit_s > 0 ? ta->spec->time_limit_s : a->cfg.default_limit_s;
    r->deadline_mono = r->started_mono + (uint64_t)(r->limit_s * 1e9);
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 1;
    else
        a->cpu_used++;
    a->runners[a->nrunners++] = r;
    static const char *kinds[] = {"?", "build", "validate", "profile", "doctor"};
    kf_debug("runner.start", "task=%llx attempt=%u kind=%s pid=%d limit_s=%.0f",
             (unsigned long long)r->task_id, r->attempt, kinds[r->kind <= 4 ? r->kind : 0],
             (int)pid, r->limit_s);
    return KF_OK;
fail:
    kf_buf_release(&r->in);
    free(r);
    return rc;
}

/* Handles the frames a runner wrote so far. */
static void drain_runner(kf_agent *a, krunner *r)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(r->out_fd, buf, sizeof buf);
        if (n > 0) {
            kf_buf_add(&r->in, buf, (size_t)n);
            continue;
        }
        if (n == 0) {
            close(r->out_fd);
            r->out_fd = -1;
        } else if (errno == EINTR) {
            continue;
        } else if (errno != EAGAIN) {
            close(r->out_fd);
            r->out_fd = -1;
        }
        break;
    }
    size_t off = 0;
    while (r->in.len - off >= 4) {
        const uint8_t *p = (const uint8_t *)r->in.data + off;
        uint32_t len =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (len > KF_MAX_FRAME) {
            kf_error("runner.bad_frame", "task=%llx len=%u", (unsigned long long)r->task_id, len);
            kill(-r->pid, SIGKILL);
            off = r->in.len;
            break;
        }
        if (r->in.len - off - 4 < len)
            break;
        kf_err err;
        Kfleet__Envelope *env = kf_wire_unpack(p + 4, len, &err);
        off += 4 + len;
        if (!env) {
            kf_error("runner.bad_frame", "task=%llx error=\"%s\"", (unsigned long long)r->task_id,
                     err.msg);
            continue;
        }
        if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES && !r->got_result) {
            env->samples->task_id = r->task_id;
            env->samples->attempt = r->attempt;
            r->nsamples += (uint32_t)env->samples->n_samples;
            emit(a, env, r->task_id, r->attempt, 0);
        } else if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT && !r->got_result) {
            Kfleet__Result *res = env->result;
            char *runner_agent = res->agent_id;
            res->task_id = r->task_id;
            res->attempt = r->attempt;
            res->agent_id = a->info->agent_id;
            res->sample_count = r->nsamples;
            if (r->cancelled)
                res->state = KFLEET__TASK_STATE__CANCELLED;
            emit(a, env, r->task_id, r->attempt, 1);
            r->got_result = 1;
            res->agent_id = runner_agent; /* ours is not the decoder's to free */
        }
        kf_wire_free(env);
    }
    if (off) {
        memmove(r->in.data, r->in.data + off, r->in.len - off);
        r->in.len -= off;
    }
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

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void finish_runner(kf_agent *a, size_t idx)
{
    krunner *r = a->runners[idx];
    if (!r->got_result) {
        char why[3072], tail[2048], logp[PATH_MAX + 16];
        snprintf(logp, sizeof logp, "%s/runner.log", r->dir);
        tail_of(logp, tail, sizeof tail);
        int state = KFLEET__TASK_STATE__FAILED, infra = 0;
        int sig = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;
        if (r->timed_out) {
            state = KFLEET__TASK_STATE__TIMED_OUT;
            snprintf(why, sizeof why,
                     "timed out: the task ran past its limit of %.1f s and was "
                     "killed",
                     r->limit_s);
        } else if (r->cancelled) {
            state = KFLEET__TASK_STATE__CANCELLED;
            snprintf(why, sizeof why, "cancelled by the coordinator");
        } else if (sig == SIGKILL || sig == SIGTERM || sig == SIGHUP || sig == SIGINT) {
            /* Not a signal a kernel raises on itself, and not ours (a time
             * limit or a cancel is said above): the OS or a person killed
             * it, typically the out-of-memory killer. Tried again. */
            infra = 1;
            snprintf(why, sizeof why,
                     "the runner was killed by signal %d (%s), not by kfleet (the out-of-memory "
                     "killer? the node's kernel log says); tried again while attempts remain%s%s",
                     sig, strsignal(sig), *tail ? "\n" : "", tail);
        } else if (sig) {
            snprintf(why, sizeof why, "the kernel crashed: runner killed by signal %d (%s)%s%s",
                     sig, strsignal(sig), *tail ? "\n" : "", tail);
        } else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127) {
            infra = 1; /* exec failed: the node, not the kernel */
            snprintf(why, sizeof why, "the runner could not start (exit 127)%s%s",
                     *tail ? "\n" : "", tail);
        } else {
            snprintf(why, sizeof why, "runner exited with status %d without a result%s%s",
                     WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, *tail ? "\n" : "", tail);
        }
        send_result(a, r, state, infra, why);
    }
    kf_debug("runner.end", "task=%llx attempt=%u status=%d", (unsigned long long)r->task_id,
             r->attempt, r->status);
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 0;
    else if (a->cpu_used > 0)
        a->cpu_used--;
    if (!a->cfg.keep_tmp)
        nftw(r->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    kf_buf_release(&r->in);
    free(r);
    a->runners[idx] = a->runners[--a->nrunners];
}

static void reap_runners(kf_agent *a)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < a->nrunners; i++) {
            if (a->runners[i]->pid == pid) {
                a->runners[i]->exited = 1;
                a->runners[i]->status = status;
            }
        }
    }
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        if (!r->exited && !r->timed_out && now > r->deadline_mono) {
            kf_warn("runner.timeout", "task=%llx attempt=%u limit_s=%.1f",
                    (unsigned long long)r->task_id, r->attempt, r->limit_s);
            r->timed_out = 1;
            kill(-r->pid, SIGKILL);
        }
        if (r->exited && r->out_fd >= 0)
            drain_runner(a, r);
        if (r->exited && r->out_fd < 0) {
            finish_runner(a, i);
            continue;
        }
        i++;
    }
}

/* ---- handlers for coordinator messages ---- */

static int on_welcome(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    if (env->welcome->heartbeat_interval_ms)
        a->hb_interval_s = env->welcome->heartbeat_interval_ms / 1000.0;
    /* Whatever the coordinator had of us may be gone: resend everything. */
    for (size_t i = 0; i < a->npending; i++)
        a->pending[i].sent_mono = 0;
    if (env->welcome->reregister) {
        if (a->welcomed)
            kf_info("agent.reregister", "coordinator=%s", a->cfg.coordinator);
        a->welcomed = 0;
        if (kf_mono_ns() - a->last_register_mono > 200000000ull)
            send_register(a);
        return KF_OK;
    }
    if (!a->welcomed)
        kf_info("agent.registered", "coordinator=%s heartbeat_s=%.2f outbox=%zu",
                a->cfg.coordinator, a->hb_interval_s, a->npending);
    a->welcomed = 1;
    return KF_OK;
}

static int on_assign(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    const Kfleet__TaskAssign *ta = env->assign;
    if (!ta->spec)
        return KF_EPROTO;
    if (find_runner(a, ta->task_id, ta->attempt))
        return KF_OK; /* a repeated assignment */
    if (a->stopping)
        return KF_OK; /* unconfirmed: the coordinator requeues it */
    for (size_t i = 0; i < a->npending; i++)
        if (a->pending[i].is_result && a->pending[i].task_id == ta->task_id &&
            a->pending[i].attempt == ta->attempt)
            return KF_OK; /* already done, result on its way */
    if (a->nrunners >= MAX_RUNNERS) {
        fail_assignment(a, ta, "agent has no free runner slot");
        return KF_OK;
    }
    kf_err err;
    if (start_runner(a, ta, &err) != KF_OK) {
        kf_error("runner.start", "task=%llx error=\"%s\"", (unsigned long long)ta->task_id,
                 err.msg);
        fail_assignment(a, ta, err.msg);
        return KF_OK;
    }
    Kfleet__Progress p = KFLEET__PROGRESS__INIT;
    p.task_id = ta->task_id;
    p.attempt = ta->attempt;
    p.state = KFLEET__TASK_STATE__RUNNING;
    Kfleet__Envelope out = KFLEET__ENVELOPE__INIT;
    out.body_case = KFLEET__ENVELOPE__BODY_PROGRESS;
    out.progress = &p;
    send_direct(a, &out);
    return KF_OK;
}

static int on_ack(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    const Kfleet__Ack *ack = env->ack;
    kf_err err;
    if (kf_outbox_ack(a->outbox, ack->oseq, ack->n_oseq, &err) != KF_OK)
        kf_error("outbox.ack", "error=\"%s\"", err.msg);
    for (size_t i = 0; i < ack->n_oseq; i++) {
        for (size_t k = 0; k < a->npending; k++) {
            if (a->pending[k].oseq == ack->oseq[i]) {
                a->pending[k] = a->pending[--a->npending];
                break;
            }
        }
    }
    return KF_OK;
}

static int on_cancel(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    krunner *r = find_runner(a, env->cancel->task_id, env->cancel->attempt);
    if (r && !r->exited && !r->cancelled) {
        kf_info("runner.cancel", "task=%llx attempt=%u", (unsigned long long)r->task_id,
                r->attempt);
        r->cancelled = 1;
        kill(-r->pid, SIGKILL);
    }
    return KF_OK;
}

static int on_reject(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    (void)peer;
    kf_agent *a = ctx;
    const Kfleet__Reject *r = env->reject;
    const char *reason = r && r->reason ? r->reason : "";
    if (r && r->kind == KFLEET__REJECT_KIND__REJECT_IDENTITY) {
        /* Our id is bound to another key: nothing we send will be taken. */
        snprintf(a->refused, sizeof a->refused, "%s", reason);
        return KF_OK;
    }
    if (r && r->kind == KFLEET__REJECT_KIND__REJECT_NAME_IN_USE) {
        /* Another process holds our id; Register is retried each second
         * until that one is lost. Said once, not every second. */
        if (strcmp(a->last_reject, reason) != 0)
            kf_warn("agent.name_in_use", "coordinator=%s reason=\"%s\"", a->cfg.coordinator,
                    reason);
        snprintf(a->last_reject, sizeof a->last_reject, "%s", reason);
        return KF_OK;
    }
    kf_error("agent.rejected",
             "coordinator=%s reason=\"%s\" bytes=%u coordinator_protocol=%u agent_protocol=%d",
             a->cfg.coordinator, r && r->reason ? r->reason : "", r ? r->frame_bytes : 0,
             r ? r->coordinator_protocol : 0, KF_PROTOCOL_VERSION);
    return KF_OK;
}

static const kf_wire_handler agent_handlers[KF_WIRE_BODY_MAX] = {
    [KFLEET__ENVELOPE__BODY_WELCOME] = on_welcome, [KFLEET__ENVELOPE__BODY_ASSIGN] = on_assign,
    [KFLEET__ENVELOPE__BODY_ACK] = on_ack,         [KFLEET__ENVELOPE__BODY_CANCEL] = on_cancel,
    [KFLEET__ENVELOPE__BODY_REJECT] = on_reject,
};

/* ---- life cycle ---- */

/* The doctor's ceilings, once per start (registration), in a child so that
 * a broken driver cannot take the agent down. A failure is recorded in
 * the inventory and the agent still registers: reports then show no
 * percentage rather than a made-up one. */
static void measure_ceilings(kf_agent *a)
{
    kf_doctor d;
    kf_err err;
    char dev[128];
    visible_device(0, dev, sizeof dev);
    int gpu = a->info->n_gpus > 0;
    kf_doctor_run(a->runner_exe, gpu, gpu ? dev : NULL, 120, &d, &err);
    a->info->ceiling_copy_gbps = d.copy_gbps;
    a->info->ceiling_bf16_tflops = d.bf16_tflops;
    snprintf(a->doctor_error, sizeof a->doctor_error, "%s", d.error);
    a->info->doctor_error = a->doctor_error;
    kf_info("agent.doctor", "copy_gbps=%.1f bf16_tflops=%.1f error=\"%s\"", d.copy_gbps,
            d.bf16_tflops, d.error);
}

int kf_agent_new(const kf_agent_config *cfg, kf_agent **out, kf_err *err)
{
    kf_agent *a = kf_xcalloc(1, sizeof *a);
    a->cfg = *cfg;
    if (a->cfg.resend_s <= 0)
        a->cfg.resend_s = 5.0;
    if (a->cfg.default_limit_s <= 0)
        a->cfg.default_limit_s = 300.0;
    a->hb_interval_s = 1.0;
    kf_buf_init(&a->scratch);
    snprintf(a->workdir, sizeof a->workdir, "%s", cfg->workdir);
    if (cfg->runner_exe)
        snprintf(a->runner_exe, sizeof a->runner_exe, "%s", cfg->runner_exe);
    else if (readlink("/proc/self/exe", a->runner_exe, sizeof a->runner_exe - 1) <= 0)
        snprintf(a->runner_exe, sizeof a->runner_exe, "kfleet-agent");
    char dir[PATH_MAX + 16];
    int rc;
    snprintf(dir, sizeof dir, "%s/outbox", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)) || (rc = kf_outbox_open(dir, &a->outbox, err)))
        goto fail;
    snprintf(dir, sizeof dir, "%s/cache", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)))
        goto fail;
    snprintf(dir, sizeof dir, "%s/tmp", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)))
        goto fail;
    if ((rc = kf_inventory_collect(cfg->agent_id, a->workdir, &a->info, err)))
        goto fail;
    if (cfg->cpu_slots)
        a->info->cpu_slots = cfg->cpu_slots;
    measure_ceilings(a);
    kf_outbox_foreach(a->outbox, load_pending_cb, a);

    a->zctx = zmq_ctx_new();
    a->sock = zmq_socket(a->zctx, ZMQ_DEALER);
    /* No routing id: the coordinator's ROUTER names the connection, and the
     * coordinator binds our id to our key when we register. */
    int linger = 1000, ivl = 100, ivl_max = 2000, hwm = 100000;
    int64_t maxmsg = KF_MAX_FRAME;
    zmq_setsockopt(a->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(a->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(a->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* ZMTP pings: a connection that died somewhere on the way (a relay, a
     * tunnel, a NAT that forgot it) without a FIN would otherwise look alive
     * to the DEALER forever, and it would never reconnect. */
    int hb_ivl = 2000, hb_timeout = 15000;
    zmq_setsockopt(a->sock, ZMQ_HEARTBEAT_IVL, &hb_ivl, sizeof hb_ivl);
    zmq_setsockopt(a->sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout);
    if (!cfg->server_key || !cfg->public_key || !cfg->secret_key) {
        rc = kf_err_set(err, KF_EINVAL,
                        "the agent link is CurveZMQ: the coordinator's public "
                        "key and the agent's key pair are needed");
        goto fail;
    }
    if (zmq_setsockopt(a->sock, ZMQ_CURVE_SERVERKEY, cfg->server_key,
                       strlen(cfg->server_key) + 1) ||
        zmq_setsockopt(a->sock, ZMQ_CURVE_PUBLICKEY, cfg->public_key,
                       strlen(cfg->public_key) + 1) ||
        zmq_setsockopt(a->sock, ZMQ_CURVE_SECRETKEY, cfg->secret_key,
                       strlen(cfg->secret_key) + 1)) {
        rc = kf_err_set(err, KF_EINVAL, "cannot set the Curve keys: %s", zmq_strerror(errno));
        goto fail;
    }
    /* A refused key is otherwise silent: the DEALER just reconnects. */
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://agent-monitor-%p", (void *)a);
    if (zmq_socket_monitor(a->sock, mon,
                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) == 0) {
        a->monitor = zmq_socket(a->zctx, ZMQ_PAIR);
        if (zmq_connect(a->monitor, mon) != 0) {
            zmq_close(a->monitor);
            a->monitor = NULL;
        }
    }
    if (zmq_connect(a->sock, cfg->coordinator) != 0) {
        rc = kf_err_set(err, KF_EINVAL, "cannot connect to %s: %s", cfg->coordinator,
                        zmq_strerror(errno));
        goto fail;
    }
    *out = a;
    return KF_OK;
fail:
    kf_agent_destroy(&a);
    return rc;
}

void kf_agent_destroy(kf_agent **self)
{
    kf_agent *a = *self;
    if (!a)
        return;
    for (size_t i = 0; i < a->nrunners; i++) {
        krunner *r = a->runners[i];
        if (!r->exited) {
            kill(-r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
        if (r->out_fd >= 0)
            close(r->out_fd);
        if (!a->cfg.keep_tmp)
            nftw(r->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        kf_buf_release(&r->in);
        free(r);
    }
    if (a->monitor)
        zmq_close(a->monitor);
    if (a->sock)
        zmq_close(a->sock);
    if (a->zctx)
        zmq_ctx_term(a->zctx);
    kf_outbox_close(&a->outbox);
    kf_inventory_free(&a->info);
    free(a->pending);
    kf_buf_release(&a->scratch);
    free(a);
    *self = NULL;
}

/* Monitor events: [u16 event][u32 value] then the endpoint. A refused
 * handshake is logged with our public key, which is what the operator needs
 * to accept it (at most every 10 s: the DEALER retries every 2 s). */
static void drain_monitor(kf_agent *a)
{
    for (;;) {
        zmq_msg_t ev, ep;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, a->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        zmq_msg_init(&ep);
        if (zmq_msg_more(&ev))
            zmq_msg_recv(&ep, a->monitor, 0);
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + 2, 4);
        }
        uint64_t now = kf_mono_ns();
        /* libzmq ends a session whose handshake was refused (a protocol
         * error) and never retries it; an operator may accept the key any
         * moment, so the agent connects again itself. */
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ||
            event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
            a->reconnect_mono = now + 2000000000ull;
        if (event == ZMQ_EVENT_DISCONNECTED) {
            /* The coordinator stopped (kfleet stop), died, or the link broke:
             * said once, with what waits to be sent; the DEALER redials. */
            if (a->link_up)
                a->said_lost = 1;
            if (a->link_up)
                kf_warn("agent.coordinator_lost",
                        "coordinator=%s outbox=%zu running=%zu hint=\"the connection closed; "
                        "reconnecting every 2 s, results are kept until acked\"",
                        a->cfg.coordinator, a->npending, a->nrunners);
            a->link_up = 0;
            if (!a->link_down_mono)
                a->link_down_mono = now;
        } else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            if (a->last_auth_log_mono)
                kf_info("agent.auth_ok", "coordinator=%s", a->cfg.coordinator);
            if (a->link_down_mono && a->said_lost)
                kf_info("agent.coordinator_back", "coordinator=%s after_s=%.1f", a->cfg.coordinator,
                        (double)(now - a->link_down_mono) / 1e9);
            a->said_lost = 0;
            a->last_auth_log_mono = 0;
            a->link_up = 1;
            a->link_down_mono = 0;
            a->waiting_log_mono = 0;
        } else if (event &&
                   (!a->last_auth_log_mono || now - a->last_auth_log_mono > 10000000000ull)) {
            a->last_auth_log_mono = now;
            if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
                kf_error(
                    "agent.auth_refused",
                    "coordinator=%s status=%u key=%s hint=\"the coordinator does not accept "
                    "this agent's key: run `kfleet agent-key add '%s' NAME` on the coordinator\"",
                    a->cfg.coordinator, value, a->cfg.public_key, a->cfg.public_key);
            else
                kf_error("agent.handshake_failed",
                         "coordinator=%s event=%u errno=%u hint=\"is --server-key the "
                         "coordinator's public key (`kfleet init` prints it)?\"",
                         a->cfg.coordinator, event, value);
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&ep);
    }
}

/* Handles what the coordinator sent (at most 1000 frames a turn). */
static void pump_socket(kf_agent *a)
{
    for (int k = 0; k < 1000; k++) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, a->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        kf_err derr;
        kf_peer peer = {NULL, 0, NULL};
        if (kf_wire_dispatch(agent_handlers, a, &peer, zmq_msg_data(&msg), zmq_msg_size(&msg),
                             &derr) == KF_EPROTO)
            kf_warn("agent.bad_frame", "bytes=%zu error=\"%s\"", zmq_msg_size(&msg), derr.msg);
        zmq_msg_close(&msg);
    }
}

/* On the way out (SIGTERM from `kfleet teardown`), the outbox is sent once
 * more and given up to flush_s to be acked, so a node that is torn down
 * leaves no result only on its disk. New assignments are not started;
 * the coordinator requeues them. Whatever stays unacked is kept in the
 * outbox for the next start. */
static void flush_outbox(kf_agent *a, double flush_s)
{
    if (!a->welcomed || a->npending == 0)
        return;
    a->stopping = 1;
    for (size_t i = 0; i < a->npending; i++)
        a->pending[i].sent_mono = 0;
    size_t before = a->npending;
    uint64_t deadline = kf_mono_ns() + (uint64_t)(flush_s * 1e9);
    resend_due(a);
    while (a->npending > 0 && kf_mono_ns() < deadline) {
        zmq_pollitem_t it = {a->sock, 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 50);
        pump_socket(a);
    }
    kf_info("agent.flush", "sent=%zu acked=%zu left=%zu", before, before - a->npending,
            a->npending);
}

int kf_agent_run(kf_agent *a, volatile sig_atomic_t *stop, kf_err *err)
{
    kf_info("agent.start",
            "agent=%s coordinator=%s workdir=%s gpus=%zu cpu_slots=%u outbox=%zu key=%s",
            a->info->agent_id, a->cfg.coordinator, a->workdir, a->info->n_gpus, a->info->cpu_slots,
            a->npending, a->cfg.public_key);
    send_register(a);
    a->link_down_mono = kf_mono_ns();
    while (!(stop && *stop) && !a->refused[0]) {
        zmq_pollitem_t items[2 + MAX_RUNNERS];
        size_t n = 0;
        items[n++] = (zmq_pollitem_t){a->sock, 0, ZMQ_POLLIN, 0};
        if (a->monitor)
            items[n++] = (zmq_pollitem_t){a->monitor, 0, ZMQ_POLLIN, 0};
        for (size_t i = 0; i < a->nrunners; i++)
            if (a->runners[i]->out_fd >= 0)
                items[n++] = (zmq_pollitem_t){NULL, a->runners[i]->out_fd, ZMQ_POLLIN, 0};
        if (zmq_poll(items, (int)n, 50) < 0 && errno != EINTR)
            return kf_err_set(err, KF_EIO, "poll: %s", zmq_strerror(errno));
        pump_socket(a);
        if (a->monitor)
            drain_monitor(a);
        if (a->reconnect_mono && kf_mono_ns() > a->reconnect_mono) {
            a->reconnect_mono = 0;
            zmq_disconnect(a->sock, a->cfg.coordinator);
            if (zmq_connect(a->sock, a->cfg.coordinator) != 0)
                kf_warn("agent.reconnect", "coordinator=%s error=\"%s\"", a->cfg.coordinator,
                        zmq_strerror(errno));
        }
        for (size_t i = 0; i < a->nrunners; i++)
            if (a->runners[i]->out_fd >= 0)
                drain_runner(a, a->runners[i]);
        reap_runners(a);
        uint64_t now = kf_mono_ns();
        /* No coordinator for a while (never reached, or gone): said, then
         * again each minute, so an agent log never just goes quiet. */
        if (!a->link_up && !a->last_auth_log_mono && a->link_down_mono &&
            now - a->link_down_mono > 10000000000ull &&
            (!a->waiting_log_mono || now - a->waiting_log_mono > 60000000000ull)) {
            a->waiting_log_mono = now;
            a->said_lost = 1;
            kf_warn("agent.no_coordinator",
                    "coordinator=%s unreachable_s=%.0f outbox=%zu hint=\"is it running, and is "
                    "--coordinator its agent endpoint (kfleet serve prints it)?\"",
                    a->cfg.coordinator, (double)(now - a->link_down_mono) / 1e9, a->npending);
        }
        if (!a->welcomed && now - a->last_register_mono > 1000000000ull)
            send_register(a);
        if (a->welcomed && now - a->last_hb_mono > (uint64_t)(a->hb_interval_s * 1e9))
            send_heartbeat(a);
        resend_due(a);
    }
    if (a->refused[0]) {
        kf_error("agent.refused", "coordinator=%s reason=\"%s\"", a->cfg.coordinator, a->refused);
        return kf_err_set(err, KF_EINVAL, "the coordinator %s refused this agent: %s",
                          a->cfg.coordinator, a->refused);
    }
    flush_outbox(a, 5.0);
    kf_info("agent.stop", "agent=%s running=%zu outbox=%zu", a->info->agent_id, a->nrunners,
            a->npending);
    return KF_OK;
}
