/* warm — see warm.h. */
#include "runner/warm.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/channel.h"
#include "runner/confine.h"
#include "runner/harness.h"
#include "runner/hctx.h"
#include "runner/pykernel.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Receives one request and its descriptors from sock (the agent's: fd 0):
 * 1, 0 at EOF, -1 on a malformed one (its descriptors closed). */
static int receive(int sock, kf_warm_req *req, int fds[KF_WARM_MAX_FDS])
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * KF_WARM_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = req, .iov_len = sizeof *req};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n < 0)
        return -2;
    size_t got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (got < KF_WARM_MAX_FDS)
                fds[got++] = fd;
            else
                close(fd);
        }
    }
    int ok = (size_t)n == sizeof *req && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
             req->nfds >= KF_WARM_FD_CHECKER && req->nfds <= KF_WARM_MAX_FDS && got == req->nfds &&
             memchr(req->scratch, '\0', sizeof req->scratch) &&
             memchr(req->kernel_hash, '\0', sizeof req->kernel_hash);
    if (!ok) {
        for (size_t i = 0; i < got; i++)
            close(fds[i]);
        return -1;
    }
    return 1;
}

static void answer_as(pid_t pid, int ahead, const char *why)
{
    kf_warm_rep rep;
    memset(&rep, 0, sizeof rep);
    rep.pid = (int32_t)pid;
    rep.ahead = ahead != 0;
    snprintf(rep.why, sizeof rep.why, "%s", why ? why : "");
    if (send(0, &rep, sizeof rep, MSG_NOSIGNAL) != (ssize_t)sizeof rep)
        kf_warn("warm.answer", "pid=%d error=\"%s\"", (int)pid, strerror(errno));
}

static void answer(pid_t pid, const char *why)
{
    answer_as(pid, 0, why);
}

/* The task's runner: once the agent is its parent, its descriptors in
 * place of the warm's, then kf_runner_main's path; `ready`: the
 * interpreter's after-fork work is done (a spare's). Never returns. */
static void be_runner(const char *workdir, const kf_warm_req *req, const int *fds, pid_t agent,
                      int ready)
{
    /* The intermediate process exits right after answering; until it has,
     * the parent is that process, and a death signal armed now would fire
     * at its exit. 10 s is far beyond that exit. */
    setpgid(0, 0); /* its own group, which the agent kills (a clone's: not yet) */
    for (int i = 0; i < 100000 && getppid() != agent; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent) {
        dprintf(fds[KF_WARM_FD_LOG], "warm runner: the agent (pid %d) is gone\n", (int)agent);
        _exit(1);
    }
    prctl(PR_SET_DUMPABLE, 1);
    if (!ready)
        kf_pyk_after_fork_child();
    /* The runner's channel (harness.h), from the received descriptors;
     * the socket to the agent and every other descriptor of the warm
     * process's go: the runner has what a forked runner has. */
    int null = open("/dev/null", O_RDONLY);
    int vfd = req->nfds > KF_WARM_FD_CHECKER ? fds[KF_WARM_FD_CHECKER] : -1;
    int place[KF_RUNNER_FD_CHECKER + 1] = {null,
                                           fds[KF_WARM_FD_KOUT],
                                           fds[KF_WARM_FD_KOUT],
                                           fds[KF_WARM_FD_TASK],
                                           fds[KF_WARM_FD_OUT],
                                           fds[KF_WARM_FD_LOG],
                                           vfd};
    if (kf_sandbox_place_fds(place, KF_RUNNER_FD_CHECKER + 1) != 0) {
        dprintf(fds[KF_WARM_FD_LOG], "warm runner: cannot place the runner's descriptors: %s\n",
                strerror(errno));
        _exit(1);
    }
    /* Its group and mounts before anything of the task runs (contain.h). */
    const char *what = "";
    if (kf_contain_enter(&req->contain, &what) != 0) {
        dprintf(KF_RUNNER_FD_LOG, "warm runner: cannot %s: %s\n", what, strerror(errno));
        _exit(127);
    }
    kf_debug("warm.runner", "task=0x%llx attempt=%u pid=%d warm=%d",
             (unsigned long long)req->task_id, req->attempt, (int)getpid(), (int)getppid());
    const char *scratch = req->scratch[0] ? req->scratch : NULL;
    int rc = req->serve ? kf_runner_serve(workdir, scratch, 1, req->spawn_ns)
                        : kf_runner_main(workdir, scratch, 1, req->spawn_ns);
    _exit(rc); /* a copy of an interpreter: never finalized (pykernel.h) */
}

/* The Triton launchers the runners of kernel h recorded in its kept
 * cache, built here after a runner is forked and answered (warm.h): the
 * agent waits for no build, and one stops before it starts when the next
 * request is waiting. Nothing when it names none, or names no hash. */
static void learn(const char *workdir, const char *h)
{
    char dir[PATH_MAX], built[32] = "", err[512] = "";
    if (kf_confine_kcache_dir(workdir, h, dir, sizeof dir) != 0)
        return;
    if (kf_pyk_warm_learn(dir, built, sizeof built, err, sizeof err) != 0)
        kf_warn("warm.learn", "kernel=%.16s error=\"%s\"", h, err);
    else if (strcmp(built, "0") != 0)
        kf_info("warm.learn", "kernel=%.16s launchers=%s", h, built);
}

size_t kf_warm_learn_order(const char *last0, const char *last1, const char *req,
                           const char *out[3])
{
    const char *cand[3] = {last0, last1, req};
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        int seen = !cand[i] || !cand[i][0] || (i < 2 && req && strcmp(cand[i], req) == 0);
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], cand[i]) == 0;
        if (!seen)
            out[n++] = cand[i];
    }
    return n;
}

/* The runner as the agent's own child: clone(2) with CLONE_PARENT (the
 * agent is this process's parent), so no intermediate process is forked
 * and torn down and the runner does not wait to be re-parented — a fork
 * of an interpreter with torch imported costs 11-17 ms on a 2-core VM,
 * its exit as much again. A raw clone runs none of glibc's fork handlers,
 * which only matter with other threads (a lock one of them held): done
 * only when this process has none, else 0 (fork through an intermediate).
 * Returns as fork does, and 0 in the parent with *used 0 when not done. */
static pid_t clone_to_agent(int *used)
{
    *used = 0;
    if (kf_sandbox_threads() != 1)
        return 0;
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
    if (pid < 0)
        return 0; /* the intermediate's way still works */
    *used = 1;
    return pid;
}

/* A spare: the next request's runner, cloned (clone_to_agent) and through
 * the interpreter's after-fork work (16-24 ms of copied pages on a 2-core
 * VM) while the current runner runs, waiting on a socket of its own for
 * the request. It is what a fork at the request would be: a copy of this
 * process, made after the last request's launchers were learned, not
 * dumpable until it takes a request, and nothing of a task reaches it
 * before then. It ends at its socket's EOF (this process gone) or with
 * the agent. */
typedef struct spare {
    pid_t pid; /* 0: none */
    int sock;  /* this end of its socket */
} spare;

/* In the spare: waits for its request, then becomes its runner. */
static void spare_wait(const char *workdir, int sock, pid_t agent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent)
        _exit(1);
    kf_pyk_after_fork_child();
    /* The agent's requests are the warm process's: not read here. */
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0)
        _exit(1);
    kf_warm_req req;
    int fds[KF_WARM_MAX_FDS];
    if (receive(sock, &req, fds) != 1)
        _exit(0);
    be_runner(workdir, &req, fds, agent, 1);
}

static void spare_make(const char *workdir, pid_t agent, spare *sp)
{
    sp->pid = 0;
    sp->sock = -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    kf_pyk_before_fork();
    int direct;
    pid_t pid = clone_to_agent(&direct);
    if (direct && pid == 0) {
        close(sv[0]);
        spare_wait(workdir, sv[1], agent);
    }
    kf_pyk_after_fork_parent();
    close(sv[1]);
    if (!direct) {
        close(sv[0]);
        return;
    }
    sp->pid = pid;
    sp->sock = sv[0];
}

/* Hands the request to the spare and answers its pid: 0, or -1 when there
 * is none or it is gone (its socket closed; it exits at the EOF). */
static int spare_take(spare *sp, const kf_warm_req *req, const int *fds)
{
    if (sp->pid <= 0)
        return -1;
    int sent = kf_send_fds(sp->sock, req, sizeof *req, fds, req->nfds) == KF_OK;
    close(sp->sock);
    pid_t pid = sp->pid;
    sp->pid = 0;
    sp->sock = -1;
    if (!sent) {
        kf_warn("warm.spare", "pid=%d error=\"%s\"", (int)pid, strerror(errno));
        return -1;
    }
    answer_as(pid, 1, ""); /* the agent puts it in its own group (and so does it) */
    return 0;
}

/* Forks the runner of one request (clone_to_agent, else through an
 * intermediate process, see warm.h) and answers its pid. */
static void fork_runner(const char *workdir, const kf_warm_req *req, const int *fds, pid_t agent)
{
    kf_pyk_before_fork();
    int direct;
    pid_t pid = clone_to_agent(&direct);
    if (direct) {
        if (pid == 0)
            be_runner(workdir, req, fds, agent, 0);
        kf_pyk_after_fork_parent();
        answer(pid, ""); /* the agent puts it in its own group (and so does it) */
        return;
    }
    pid_t mid = fork();
    if (mid == 0) {
        pid = fork();
        if (pid == 0)
            be_runner(workdir, req, fds, agent, 0);
        if (pid > 0)
            setpgid(pid, pid); /* before the agent may kill its group */
        char why[160];
        snprintf(why, sizeof why, "the warm runner cannot fork: %s", strerror(errno));
        answer(pid > 0 ? pid : -1, pid > 0 ? "" : why);
        _exit(0);
    }
    int err = errno;
    kf_pyk_after_fork_parent();
    if (mid < 0) {
        char why[160];
        snprintf(why, sizeof why, "the warm runner cannot fork: %s", strerror(err));
        answer(-1, why);
        return;
    }
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
}

int kf_runner_warm(const char *workdir)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    pid_t agent = getppid();
    /* It dies with the agent, as a runner does. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent)
        return 1;
    /* Not dumpable: no process of its user (a runner it forked whose
     * node has no Landlock, whose ptrace rules keep a sandboxed runner out
     * anyway) may read or write its memory through /proc or ptrace, since
     * every later runner is a copy of it. Its runners are dumpable again,
     * as a runner forked by the agent is. */
    prctl(PR_SET_DUMPABLE, 0);
    const kf_pyenv *py;
    kf_err err;
    char imported[256] = "", perr[2048];
    if (kf_pyenv_get(&py, &err) != KF_OK) {
        kf_error("warm.start", "error=\"%s\"", err.msg);
        answer(-1, err.msg);
        return 1;
    }
    if (kf_pyk_warm(py, workdir, imported, sizeof imported, perr, sizeof perr) != 0) {
        kf_error("warm.start", "error=\"%s\"", perr);
        answer(-1, perr);
        _exit(1); /* an interpreter is never finalized (pykernel.h) */
    }
    /* Threads at a fork are not in the child: one holding a lock then
     * (an import's pool) would leave it held there. Said, for the GPU's
     * packages. */
    kf_info("warm.ready", "pid=%d python=%s imported=\"%s\" threads=%d", (int)getpid(), py->version,
            imported, kf_sandbox_threads());
    char ready[sizeof imported + 32];
    snprintf(ready, sizeof ready, "%s threads=%d", imported, kf_sandbox_threads());
    answer(getpid(), ready); /* ready: the agent sends tasks from now on */
    unsigned tasks = 0;
    spare sp;
    spare_make(workdir, agent, &sp);
    /* The kernels of the last two requests (kf_warm_learn_order): a
     * serving runner takes a candidate's later tasks without a fork, so
     * its records are read at a later candidate's request. */
    char last[2][sizeof((kf_warm_req *)0)->kernel_hash] = {"", ""};
    for (;;) {
        kf_warm_req req;
        int fds[KF_WARM_MAX_FDS];
        int rc = receive(0, &req, fds);
        if (rc == 0)
            break;
        if (rc == -2) {
            kf_error("warm.receive", "error=\"%s\"", strerror(errno));
            return 1;
        }
        if (rc < 0) {
            answer(-1, "the warm runner got a malformed request");
            continue;
        }
        if (spare_take(&sp, &req, fds) != 0)
            fork_runner(workdir, &req, fds, agent);
        for (uint32_t i = 0; i < req.nfds; i++)
            close(fds[i]);
        const char *order[3];
        size_t n = kf_warm_learn_order(last[0], last[1], req.kernel_hash, order);
        for (size_t k = 0; k < n; k++)
            learn(workdir, order[k]);
        memcpy(last[1], last[0], sizeof last[0]);
        snprintf(last[0], sizeof last[0], "%s", req.kernel_hash);
        tasks++;
        spare_make(workdir, agent, &sp); /* with what learn() built */
    }
    kf_info("warm.end", "pid=%d tasks=%u", (int)getpid(), tasks);
    _exit(0); /* an interpreter with torch's state is never finalized (pykernel.h) */
}
