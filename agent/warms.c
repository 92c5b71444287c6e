/* warms — see warms.h. A table of at most WARMS_MAX warm processes, each a
 * `kfleet-agent --runner --warm` with a SOCK_SEQPACKET socket on its stdin:
 * a request is one message (kf_warm_req and its descriptors as
 * SCM_RIGHTS), the answer one message (kf_warm_rep), so neither side
 * frames anything. */
#include "agent/warms.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARMS_MAX 16
/* A slot's Python tasks come one after another; a warm process not asked
 * for this long is done. */
#define WARMS_IDLE_S 60.0
/* How long the agent's loop waits, in all, for a new warm process's
 * imports (numpy takes a tenth of a second, torch and Triton 3.7-5 s on an
 * H200 host): well under the 5 s in which the coordinator wants an
 * assignment confirmed (at 5 s, 2026-11-27, an agent waiting for torch let
 * a build's confirmation lapse: "did not confirm the assignment within
 * 5.0 s"); until it is ready, its key's tasks get fresh runners. */
#define WARMS_READY_WAIT_MS 1500
/* How long a ready one may take to fork a runner (milliseconds). */
#define WARMS_ANSWER_S 5
/* Warm processes that failed to start in a row before the agent stops
 * starting them (said once): fresh runners from then on. */
#define WARMS_MAX_FAILS 3

typedef struct kwarm {
    pid_t pid;
    int sock;
    int gpu;
    uint32_t gpu_index;
    int dead, status;
    int ready;        /* its imports done: it takes requests */
    int wait_left_ms; /* of WARMS_READY_WAIT_MS, for its ready message */
    uint64_t last_mono;
    uint32_t tasks, ahead; /* runners it made, and those made before their request */
    char log[PATH_MAX];
} kwarm;

struct kwarms {
    char exe[PATH_MAX], workdir[PATH_MAX];
    int keep_tmp;
    warms_env_fn env;
    void *ctx;
    kwarm *w[WARMS_MAX];
    size_t n;
    uint32_t started; /* warm processes started so far, for their log names */
    int fails;        /* starts failed in a row */
};

kwarms *warms_new(const char *exe, const char *workdir, int keep_tmp, warms_env_fn env, void *ctx,
                  kf_err *err)
{
    const char *off = getenv("KF_WARM");
    if (off && strcmp(off, "0") == 0) {
        kf_err_set(err, KF_EINVAL, "KF_WARM=0 in the agent's environment");
        return NULL;
    }
    if (off && *off && strcmp(off, "1") != 0 && strcmp(off, "start") != 0 &&
        strcmp(off, "later") != 0) {
        kf_err_set(err, KF_EINVAL, "KF_WARM is '%s'; it takes 0, 1, start or later", off);
        return NULL;
    }
    /* The runners a warm process forks are re-parented to the agent. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        kf_err_set(err, KF_EIO, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
        return NULL;
    }
    kwarms *w = kf_xcalloc(1, sizeof *w);
    snprintf(w->exe, sizeof w->exe, "%s", exe);
    snprintf(w->workdir, sizeof w->workdir, "%s", workdir);
    w->keep_tmp = keep_tmp;
    w->env = env;
    w->ctx = ctx;
    return w;
}

/* The last line of the warm's log, for a reason. */
static void last_line(const kwarm *m, char *out, size_t len)
{
    kf_buf b = KF_BUF_INIT;
    out[0] = '\0';
    if (kf_buf_read_file(&b, m->log) == KF_OK && b.len) {
        while (b.len && b.data[b.len - 1] == '\n')
            b.data[--b.len] = '\0';
        const char *nl = strrchr(b.data, '\n');
        snprintf(out, len, "%s", nl ? nl + 1 : b.data);
    }
    kf_buf_release(&b);
}

/* Ends warm process i (killed and waited for unless dead already) and
 * frees its entry. */
static void retire(kwarms *w, size_t i, const char *why)
{
    kwarm *m = w->w[i];
    if (!m->dead) {
        kill(-m->pid, SIGKILL);
        int st;
        while (waitpid(m->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    kf_info("warm.retire", "pid=%d tasks=%u ahead=%u why=\"%s\"", (int)m->pid, m->tasks, m->ahead,
            why);
    close(m->sock);
    if (!w->keep_tmp)
        unlink(m->log);
    free(m);
    w->w[i] = w->w[--w->n];
}

void warms_destroy(kwarms **self)
{
    kwarms *w = *self;
    if (!w)
        return;
    while (w->n)
        retire(w, 0, "the agent stops");
    free(w);
    *self = NULL;
}

static kwarm *start(kwarms *w, int gpu, uint32_t gpu_index, kf_err *err)
{
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/tmp", w->workdir);
    if (kf_mkdirs(dir, 0700, err) != KF_OK)
        return NULL;
    kwarm *m = kf_xcalloc(1, sizeof *m);
    m->gpu = gpu;
    m->gpu_index = gpu_index;
    snprintf(m->log, sizeof m->log, "%s/warm-%u.log", dir, ++w->started);
    int sv[2] = {-1, -1};
    int log_fd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    kf_execenv *env = kf_execenv_new();
    w->env(w->ctx, gpu, gpu_index, env);
    char *argv[] = {"kfleet-agent", "--runner", "--warm", "--workdir", w->workdir, NULL};
    pid_t pid = -1;
    if (log_fd >= 0 && null_fd >= 0 &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)
        pid = fork();
    if (pid == 0) {
        /* As runners.c's child: its own group, dies with the agent, no
         * descriptor of the agent's, the runner's environment; system
         * calls only (common/execenv.h). */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(sv[1], 0);
        dup2(null_fd, 1);
        dup2(log_fd, 2);
        kf_sandbox_close_fds(3);
        execve(w->exe, argv, kf_execenv_array(env));
        kf_exec_say(2, "cannot exec the warm runner ", w->exe, kf_exec_why(errno));
        _exit(127);
    }
    int e = errno;
    kf_execenv_destroy(&env);
    if (log_fd >= 0)
        close(log_fd);
    if (null_fd >= 0)
        close(null_fd);
    if (sv[1] >= 0)
        close(sv[1]);
    if (pid < 0) {
        if (sv[0] >= 0)
            close(sv[0]);
        kf_err_set(err, KF_EIO, "cannot start a warm runner (log %s): %s", m->log, strerror(e));
        free(m);
        return NULL;
    }
    setpgid(pid, pid);
    m->pid = pid;
    m->sock = sv[0];
    m->wait_left_ms = WARMS_READY_WAIT_MS;
    m->last_mono = kf_mono_ns();
    w->w[w->n++] = m;
    kf_info("warm.start", "pid=%d gpu=%s%u log=%s", (int)pid, gpu ? "" : "cpu-",
            gpu ? gpu_index : 0, m->log);
    return m;
}

/* The live warm process of the key, or NULL. */
static kwarm *find(const kwarms *w, int gpu, uint32_t gpu_index)
{
    for (size_t i = 0; i < w->n; i++) {
        kwarm *m = w->w[i];
        if (!m->dead && m->gpu == gpu && (!gpu || m->gpu_index == gpu_index))
            return m;
    }
    return NULL;
}

/* The live warm process of the key, or a new one (the least recently used
 * retired when the table is full). */
static kwarm *warm_of(kwarms *w, int gpu, uint32_t gpu_index, kf_err *err)
{
    kwarm *m = find(w, gpu, gpu_index);
    if (m)
        return m;
    size_t lru = 0;
    for (size_t i = 1; i < w->n; i++)
        if (w->w[i]->last_mono < w->w[lru]->last_mono)
            lru = i;
    if (w->n == WARMS_MAX)
        retire(w, lru, "another GPU needs its entry");
    return start(w, gpu, gpu_index, err);
}

int warms_start(kwarms *w, int gpu, uint32_t gpu_index)
{
    if (find(w, gpu, gpu_index))
        return 0;
    if (w->n == WARMS_MAX) /* taken by other GPUs' runners: the first task starts one */
        return -1;
    kf_err err;
    if (start(w, gpu, gpu_index, &err))
        return 0;
    kf_warn("warm.start", "error=\"%s\"", err.msg);
    return -1;
}

/* One request; 0, or -1 when the warm process cannot take it. */
static int request(kwarm *m, const kf_warm_req *req, const int *fds)
{
    return kf_send_fds(m->sock, req, sizeof *req, fds, req->nfds) == KF_OK ? 0 : -1;
}

/* Its next message within wait_ms; 0, or -1 with why (1: none yet, why
 * empty, only when `quiet`). */
static int answer(kwarm *m, kf_warm_rep *rep, int wait_ms, int quiet, char *why, size_t len)
{
    struct pollfd p = {.fd = m->sock, .events = POLLIN};
    int rc;
    do
        rc = poll(&p, 1, wait_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0 && quiet)
        return 1;
    ssize_t n = rc > 0 ? recv(m->sock, rep, sizeof *rep, 0) : -1;
    if (n == (ssize_t)sizeof *rep) {
        rep->why[sizeof rep->why - 1] = '\0';
        return 0;
    }
    char tail[512];
    last_line(m, tail, sizeof tail);
    if (rc == 0)
        snprintf(why, len, "it gave no answer in %d ms%s%s", wait_ms,
                 *tail ? "; its log ends: " : "", tail);
    else
        snprintf(why, len, "it exited or closed its socket%s%s", *tail ? "; its log ends: " : "",
                 tail);
    return -1;
}

/* m's entry, retired. */
static void retire_warm(kwarms *w, kwarm *m, const char *why)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->w[i] == m) {
            retire(w, i, why);
            return;
        }
}

int warms_ready(kwarms *w, int gpu, uint32_t gpu_index)
{
    if (w->fails >= WARMS_MAX_FAILS)
        return 0;
    kf_err err;
    kwarm *m = warm_of(w, gpu, gpu_index, &err);
    if (m && m->ready) {
        /* A ready one says nothing until asked: anything readable is its
         * end (it died before the agent reaped it). */
        struct pollfd p = {.fd = m->sock, .events = POLLIN};
        if (poll(&p, 1, 0) == 0)
            return 1;
        retire_warm(w, m, "its socket closed");
        m = warm_of(w, gpu, gpu_index, &err);
    }
    if (!m) {
        kf_warn("warm.start", "error=\"%s\"", err.msg);
        w->fails++;
        return 0;
    }
    kf_warm_rep rep;
    char why[768];
    uint64_t t0 = kf_mono_ns();
    int rc = answer(m, &rep, m->wait_left_ms, 1, why, sizeof why);
    m->wait_left_ms -= (int)((kf_mono_ns() - t0) / 1000000);
    if (m->wait_left_ms < 0)
        m->wait_left_ms = 0;
    if (rc == 1)
        return 0; /* still importing: a fresh runner for this task */
    if (rc == 0 && rep.pid == m->pid) {
        m->ready = 1;
        w->fails = 0;
        kf_info("warm.ready", "pid=%d imported=\"%s\" wait_ms=%d", (int)m->pid, rep.why,
                WARMS_READY_WAIT_MS - m->wait_left_ms);
        return 1;
    }
    if (rc == 0)
        snprintf(why, sizeof why, "%s", rep.pid < 0 ? rep.why : "it answered another pid");
    kf_warn("warm.failed", "pid=%d why=\"%s\"", (int)m->pid, why);
    retire_warm(w, m, "it could not start");
    if (++w->fails == WARMS_MAX_FAILS)
        kf_error("warm.off",
                 "why=\"%d warm runners in a row could not start; candidates get a fresh runner "
                 "each\"",
                 WARMS_MAX_FAILS);
    return 0;
}

pid_t warms_spawn(kwarms *w, int gpu, uint32_t gpu_index, const kf_warm_req *req, const int *fds,
                  pid_t *warm_pid, kf_err *err)
{
    kwarm *m = find(w, gpu, gpu_index);
    if (!m || !m->ready) {
        kf_err_set(err, KF_EUNAVAIL, "no warm runner is ready");
        return -1;
    }
    if (request(m, req, fds) != 0) {
        /* It never got the descriptors: the task may take a fresh runner. */
        int e = errno;
        retire_warm(w, m, "it refused a request");
        kf_err_set(err, KF_EUNAVAIL, "the warm runner's socket failed: %s", strerror(e));
        return -1;
    }
    kf_warm_rep rep;
    char why[768];
    int rc = answer(m, &rep, WARMS_ANSWER_S * 1000, 0, why, sizeof why);
    if (rc == 0 && rep.pid > 0) {
        m->tasks++;
        m->ahead += rep.ahead != 0;
        m->last_mono = kf_mono_ns();
        *warm_pid = m->pid;
        return (pid_t)rep.pid;
    }
    /* It took the descriptors: a runner of it may hold them, so the task
     * fails (the coordinator tries it again with its own) rather than run
     * twice on them. */
    if (rc == 0)
        snprintf(why, sizeof why, "%s", rep.why);
    kf_warn("warm.lost", "pid=%d task=0x%llx why=\"%s\"", (int)m->pid,
            (unsigned long long)req->task_id, why);
    kf_err_set(err, KF_EIO, "the warm runner %d took the task and failed it: %s", (int)m->pid, why);
    retire_warm(w, m, "it failed a request");
    return -1;
}

int warms_reaped(kwarms *w, pid_t pid, int status)
{
    for (size_t i = 0; w && i < w->n; i++) {
        kwarm *m = w->w[i];
        if (m->pid != pid)
            continue;
        m->dead = 1;
        m->status = status;
        char tail[512];
        last_line(m, tail, sizeof tail);
        kf_warn("warm.exit", "pid=%d tasks=%u status=0x%x log=\"%s\"", (int)pid, m->tasks,
                (unsigned)status, tail);
        return 1;
    }
    return 0;
}

void warms_tick(kwarms *w)
{
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; w && i < w->n;) {
        kwarm *m = w->w[i];
        if (m->dead)
            retire(w, i, "it exited");
        else if (now - m->last_mono > (uint64_t)(WARMS_IDLE_S * 1e9))
            retire(w, i, "idle");
        else
            i++;
    }
}
