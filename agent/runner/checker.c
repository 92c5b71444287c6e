/* checker — a candidate's outputs judged in a process the candidate's code
 * never runs in; see checker.h and docs/problems.md.
 *
 * How: kf_checker_start allocates the receive buffer, then forks. The
 * child keeps only the read end of the data pipe, verdict_fd and stderr
 * (every other inherited descriptor is closed, the runner's frame stream
 * included), and loops: a header (u32 ref index, u32 dtype, u64 count,
 * little-endian as the host writes it: both ends are one binary), the
 * output's bytes, then hctx_compare on one thread (no thread is started in
 * a child forked from a threaded runner), a verdict line and the same
 * answer, binary, on the answer pipe back to the runner. A spot frame
 * (dtype SPOT: count positions, then their values as doubles) gets an
 * answer only: the guard's per-sample check, which is not a verdict. The
 * child's references are its copy-on-write copy as of the fork: nothing
 * the parent writes afterwards reaches them, and the parent wipes its own
 * (candidate.c), so the candidate's process holds none to copy. */
#include "runner/checker.h"

#include "common/util.h"
#include "runner/hctx.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct kf_checker {
    pid_t pid;
    int data_fd;   /* the write end of the data pipe */
    int answer_fd; /* the read end of the answer pipe */
    uint64_t seq;
};

/* A frame's dtype for a spot check: beyond every kf_dtype. */
#define SPOT 0x5350u
/* Elements of one spot frame at most: 16 bytes each, within the buffer. */
#define SPOT_MAX 256
#define MIN_CAP (SPOT_MAX * 16)

typedef struct answer {
    uint64_t nonfinite, ref_nonzero;
    double max_abs, rel;
    int32_t passed, bad;
} answer;

typedef struct frame_head {
    uint32_t ref_index;
    uint32_t dtype;
    uint64_t count;
} frame_head;

/* Reads exactly n bytes; 1 at a clean EOF before any byte, 0 done, -1 error. */
static int read_full(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 1 : -1;
        got += (size_t)r;
    }
    return 0;
}

static int verdict(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int verdict(int fd, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return kf_write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void close_others(int keep1, int keep2, int keep3)
{
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        if (fd != keep1 && fd != keep2 && fd != keep3)
            close(fd);
}

/* The spot frame in buf (n positions, then n values) against ref: the
 * guard's measures (guard.c), nonfinite counting non-finite outputs. */
static void spot(const void *buf, size_t n, const double *ref, size_t count, answer *a)
{
    const uint64_t *at = buf;
    const double *val = (const double *)(const void *)((const char *)buf + n * sizeof(uint64_t));
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (at[i] >= count) {
            a->bad = 1;
            return;
        }
        double o = val[i], r = ref[at[i]];
        if (!isfinite(o)) {
            a->nonfinite++;
            continue;
        }
        double d = fabs(o - r);
        a->max_abs = d > a->max_abs ? d : a->max_abs;
        a->ref_nonzero += r != 0;
        diff2 += d * d;
        ref2 += r * r;
    }
    a->rel = ref2 > 0 ? sqrt(diff2 / ref2) : 0;
}

static void child_main(int in_fd, int out_fd, int ans_fd, const double *const *refs,
                       const size_t *counts, size_t nrefs, double tol_abs, double tol_rel,
                       void *buf, size_t cap)
{
    close_others(in_fd, out_fd, ans_fd);
    signal(SIGPIPE, SIG_DFL);
    /* Not dumpable: the candidate's process, our parent, then cannot write
     * our memory through /proc/PID/mem or ptrace us. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    uint64_t seq = 0, failed = 0;
    for (;;) {
        frame_head fh;
        int r = read_full(in_fd, &fh, sizeof fh);
        if (r == 1)
            break;
        if (r < 0)
            _exit(3);
        if (fh.dtype == SPOT) {
            answer a = {0};
            if (fh.count > SPOT_MAX || read_full(in_fd, buf, (size_t)fh.count * 16) != 0)
                _exit(3);
            if (fh.ref_index >= nrefs)
                a.bad = 1;
            else
                spot(buf, (size_t)fh.count, refs[fh.ref_index], counts[fh.ref_index], &a);
            if (kf_write_all(ans_fd, &a, sizeof a) != 0)
                _exit(3);
            continue;
        }
        size_t esz = fh.dtype <= KF_DTYPE_I32 ? hctx_dtype_size((kf_dtype)fh.dtype) : 0;
        size_t bytes = esz ? (size_t)fh.count * esz : 0;
        int fits = esz && fh.count <= cap / esz;
        /* Consume the output's bytes even when it cannot be checked, so the
         * next frame is read where it starts. */
        for (size_t left = fits ? 0 : bytes; left > 0;) {
            size_t chunk = left < cap ? left : cap;
            if (read_full(in_fd, buf, chunk) != 0)
                _exit(3);
            left -= chunk;
        }
        if (fits && read_full(in_fd, buf, bytes) != 0)
            _exit(3);
        if (!fits || fh.ref_index >= nrefs || counts[fh.ref_index] != fh.count) {
            failed++;
            answer a = {.bad = 1};
            if (verdict(out_fd, "check %llu ref %u bad\n", (unsigned long long)seq++,
                        fh.ref_index) != 0 ||
                kf_write_all(ans_fd, &a, sizeof a) != 0)
                _exit(3);
            continue;
        }
        hctx_check c = {0};
        hctx_compare(buf, (kf_dtype)fh.dtype, refs[fh.ref_index], (size_t)fh.count, 1, &c);
        int pass =
            c.nonfinite == 0 && c.ref_nonzero > 0 && c.max_abs <= tol_abs && c.rel <= tol_rel;
        failed += !pass;
        if (verdict(out_fd, "check %llu ref %u pass %d nonfinite %llu max_abs %.17g rel %.17g\n",
                    (unsigned long long)seq++, fh.ref_index, pass, (unsigned long long)c.nonfinite,
                    c.max_abs, c.rel) != 0)
            _exit(3);
        answer a = {c.nonfinite, c.ref_nonzero, c.max_abs, c.rel, pass, 0};
        if (kf_write_all(ans_fd, &a, sizeof a) != 0)
            _exit(3);
    }
    verdict(out_fd, "done checks %llu failed %llu\n", (unsigned long long)seq,
            (unsigned long long)failed);
    _exit(0);
}

int kf_checker_start(const double *const *refs, const size_t *counts, size_t nrefs, double tol_abs,
                     double tol_rel, int verdict_fd, kf_checker **out, kf_err *err)
{
    *out = NULL;
    size_t cap = MIN_CAP;
    for (size_t i = 0; i < nrefs; i++)
        if (counts[i] * sizeof(double) > cap)
            cap = counts[i] * sizeof(double);
    kf_checker *c = calloc(1, sizeof *c);
    void *buf = malloc(cap);
    int p[2] = {-1, -1}, q[2] = {-1, -1};
    if (!c || !buf || pipe(p) != 0 || pipe(q) != 0) {
        free(c);
        free(buf);
        for (int i = 0; i < 2; i++) {
            if (p[i] >= 0)
                close(p[i]);
            if (q[i] >= 0)
                close(q[i]);
        }
        close(verdict_fd);
        return kf_err_set(err, KF_EIO,
                          "checker: cannot start (%s); the node is short of memory "
                          "or descriptors",
                          strerror(errno ? errno : ENOMEM));
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        close(q[0]);
        child_main(p[0], verdict_fd, q[1], refs, counts, nrefs, tol_abs, tol_rel, buf, cap);
    }
    int saved = errno;
    free(buf);
    close(p[0]);
    close(q[1]);
    close(verdict_fd); /* only the checker holds it now */
    if (pid < 0) {
        close(p[1]);
        close(q[0]);
        free(c);
        return kf_err_set(err, KF_EIO, "checker: fork failed: %s", strerror(saved));
    }
    c->pid = pid;
    c->data_fd = p[1];
    c->answer_fd = q[0];
    *out = c;
    return KF_OK;
}

/* The checker's answer to the frame just sent into *ans. */
static int read_answer(kf_checker *c, const char *what, hctx_check *ans, kf_err *err)
{
    answer a;
    int r = read_full(c->answer_fd, &a, sizeof a);
    if (r != 0)
        return kf_err_set(err, KF_EIO, "checker: no answer to %s %llu (%s): it died", what,
                          (unsigned long long)c->seq, r < 0 ? strerror(errno) : "EOF");
    if (a.bad)
        return kf_err_set(err, KF_EINVAL,
                          "checker: %s %llu is not the problem's output (another element count "
                          "or position, or no such reference)",
                          what, (unsigned long long)c->seq);
    *ans = (hctx_check){a.nonfinite, a.ref_nonzero, a.max_abs, a.rel, a.passed};
    return KF_OK;
}

int kf_checker_check(kf_checker *c, uint32_t ref_index, const void *out, kf_dtype dtype,
                     size_t count, hctx_check *ans, kf_err *err)
{
    frame_head fh = {ref_index, (uint32_t)dtype, count};
    if (kf_write_all(c->data_fd, &fh, sizeof fh) != 0 ||
        kf_write_all(c->data_fd, out, count * hctx_dtype_size(dtype)) != 0)
        return kf_err_set(err, KF_EIO, "checker: cannot send output %llu: %s",
                          (unsigned long long)c->seq, strerror(errno));
    int rc = read_answer(c, "output", ans, err);
    c->seq++;
    return rc;
}

int kf_checker_spot(kf_checker *c, uint32_t ref_index, const uint64_t *at, const double *values,
                    size_t n, hctx_check *ans, kf_err *err)
{
    if (n > SPOT_MAX)
        return kf_err_set(err, KF_EINVAL, "checker: a spot check of %zu elements (at most %d)", n,
                          SPOT_MAX);
    frame_head fh = {ref_index, SPOT, n};
    if (kf_write_all(c->data_fd, &fh, sizeof fh) != 0 ||
        kf_write_all(c->data_fd, at, n * sizeof *at) != 0 ||
        kf_write_all(c->data_fd, values, n * sizeof *values) != 0)
        return kf_err_set(err, KF_EIO, "checker: cannot send a spot check: %s", strerror(errno));
    return read_answer(c, "spot check after output", ans, err);
}

int kf_checker_finish(kf_checker **self)
{
    if (!self || !*self)
        return -1;
    kf_checker *c = *self;
    close(c->data_fd);
    close(c->answer_fd);
    int st = 0;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
    free(c);
    *self = NULL;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
