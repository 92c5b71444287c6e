/* toolhost — see toolhost.h. The requests and replies are fixed headers
 * followed by their bytes on a stream socket pair; the host reads at most
 * one task and writes at most one log per request. */
#include "runner/toolhost.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A task larger than this is no runner's: the host stops. */
#define MAX_TASK (64u << 20)
/* ncu's CSV and the sanitizer's logs beyond this are cut (their tails are
 * what the runner reads). */
#define MAX_LOG (16u << 20)

struct kf_toolhost {
    int fd;
    pid_t pid;
};

struct request {
    uint32_t tool, len;
};

struct reply {
    int32_t rc, status;
    uint32_t msglen, loglen;
};

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* As kf_write_all, with no SIGPIPE when the other end is gone. */
static int send_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One request: the task checked, the tool run in its own directory under
 * dir, the reply sent. Returns -1 when the runner is gone. */
static int serve_one(int fd, const char *workdir, const char *dir, const char *hash,
                     unsigned long long seq)
{
    struct request q;
    if (read_full(fd, &q, sizeof q) != 0 || q.len > MAX_TASK)
        return -1;
    uint8_t *bytes = kf_xmalloc(q.len ? q.len : 1);
    if (read_full(fd, bytes, q.len) != 0) {
        free(bytes);
        return -1;
    }
    Kfleet__TaskAssign *ta = kfleet__task_assign__unpack(NULL, q.len, bytes);
    free(bytes);
    kf_err err;
    kf_err_clear(&err);
    int status = -1, rc;
    char sub[PATH_MAX], log[PATH_MAX + 64];
    snprintf(sub, sizeof sub, "%s/%llu", dir, seq);
    kf_buf text = KF_BUF_INIT;
    /* The runner's end is the kernel's: only a tool run of this runner's
     * own kernel is taken, and the command line is made here. */
    if (!ta || !ta->spec || !ta->spec->kernel_hash || strcmp(ta->spec->kernel_hash, hash) != 0 ||
        q.tool >= KF_TOOL_COUNT) {
        rc =
            kf_err_set(&err, KF_EINVAL,
                       "the tool host takes only tool runs of kernel %.12s; request refused", hash);
        kf_warn("toolhost.refused", "kernel=%.12s tool=%u", hash, q.tool);
    } else if ((rc = kf_mkdirs(sub, 0700, &err)) == KF_OK) {
        rc = kf_tools_run((kf_tool)q.tool, workdir, sub, ta, &status, &err);
        kf_tools_log_path((kf_tool)q.tool, sub, ta, log, sizeof log);
        char why[256];
        if (rc == KF_OK && kf_buf_read_file_max(&text, log, MAX_LOG, why, sizeof why) != KF_OK)
            kf_buf_reset(&text); /* no log: the runner says the tool left none */
    }
    struct reply r = {rc, status, rc == KF_OK ? 0 : (uint32_t)strlen(err.msg), (uint32_t)text.len};
    int out = send_full(fd, &r, sizeof r) == 0 && send_full(fd, err.msg, r.msglen) == 0 &&
                      send_full(fd, text.data, text.len) == 0
                  ? 0
                  : -1;
    kf_buf_release(&text);
    kf_remove_tree(sub);
    if (ta)
        kfleet__task_assign__free_unpacked(ta, NULL);
    return out;
}

static void host_main(int fd, pid_t runner, const char *workdir, const char *dir, const char *hash)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != runner)
        _exit(0);
    if (fd != 3) {
        dup2(fd, 3);
        fd = 3;
    }
    kf_sandbox_close_fds(4); /* the agent's pipes stay the runner's */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    /* The tools' own temporary files go where no kernel writes. */
    setenv("TMPDIR", dir, 1);
    setenv("HOME", dir, 1);
    unsetenv("XDG_CACHE_HOME");
    for (unsigned long long seq = 0; serve_one(fd, workdir, dir, hash, seq) == 0; seq++)
        ;
    kf_remove_tree(dir);
    _exit(0);
}

int kf_toolhost_start(const char *workdir, const char *dir, const char *kernel_hash,
                      kf_toolhost **out, kf_err *err)
{
    *out = NULL;
    kf_remove_tree(dir); /* a host killed with its runner leaves its own */
    int rc = kf_mkdirs(dir, 0700, err);
    if (rc != KF_OK)
        return rc;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return kf_err_set(err, KF_EIO, "tool host: socketpair: %s", strerror(errno));
    pid_t runner = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        host_main(sv[1], runner, workdir, dir, kernel_hash ? kernel_hash : "");
    }
    int e = errno;
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return kf_err_set(err, KF_EIO, "tool host: fork: %s", strerror(e));
    }
    kf_toolhost *t = kf_xcalloc(1, sizeof *t);
    t->fd = sv[0];
    t->pid = pid;
    *out = t;
    return KF_OK;
}

int kf_toolhost_run(kf_toolhost *self, kf_tool tool, const char *workdir, const char *tmpdir,
                    const Kfleet__TaskAssign *ta, int *exit_status, kf_err *err)
{
    if (!self)
        return kf_tools_run(tool, workdir, tmpdir, ta, exit_status, err);
    size_t n = kfleet__task_assign__get_packed_size(ta);
    uint8_t *bytes = kf_xmalloc(n ? n : 1);
    kfleet__task_assign__pack(ta, bytes);
    struct request q = {(uint32_t)tool, (uint32_t)n};
    struct reply r;
    int ok = send_full(self->fd, &q, sizeof q) == 0 && send_full(self->fd, bytes, n) == 0 &&
             read_full(self->fd, &r, sizeof r) == 0 && r.msglen < sizeof err->msg &&
             r.loglen <= MAX_LOG;
    free(bytes);
    char msg[sizeof err->msg];
    kf_buf log = KF_BUF_INIT;
    if (ok) {
        kf_buf_grow(&log, r.loglen + 1);
        ok =
            read_full(self->fd, msg, r.msglen) == 0 && read_full(self->fd, log.data, r.loglen) == 0;
        msg[ok ? r.msglen : 0] = '\0';
        log.len = r.loglen;
    }
    int rc;
    if (!ok) {
        rc = kf_err_set(err, KF_EIO, "the tool host (pid %d) did not answer", (int)self->pid);
    } else if (r.rc != KF_OK) {
        rc = kf_err_set(err, r.rc, "%s", msg);
    } else {
        char path[PATH_MAX + 64];
        kf_tools_log_path(tool, tmpdir, ta, path, sizeof path);
        rc = kf_write_file(path, log.data ? log.data : "", log.len, 0600, err);
        *exit_status = r.status;
    }
    kf_buf_release(&log);
    return rc;
}

void kf_toolhost_destroy(kf_toolhost **self)
{
    if (!self || !*self)
        return;
    kf_toolhost *t = *self;
    close(t->fd);
    while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    free(t);
    *self = NULL;
}
