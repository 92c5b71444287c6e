/* checker — the candidate's judge, a process of the agent's; see checker.h.
 *
 * The runner's side keeps the output buffer it shares with the checker (a
 * memfd, mapped read-write here and read-only there), sends it once (again
 * when an output needs a larger one), and then sends one small message a
 * check. The checker's side maps the references the agent opened for it,
 * checks their digests (unless the agent saw this one hashed before),
 * enters a sandbox that grants no file, and answers. */
#include "runner/checker.h"

#include "common/log.h"
#include "common/util.h"
#include "runner/compare.h"
#include "runner/hctx.h"
#include "runner/reffile.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MSG_MAP = 1, MSG_CHECK, MSG_SPOT, MSG_FINISH };

typedef struct msg {
    uint32_t type, ref, dtype, n;
    uint64_t count; /* MSG_MAP: the buffer's bytes; MSG_CHECK: elements */
    uint64_t offset;
} msg;

typedef struct reply {
    int32_t passed, bad;
} reply;

#define MSG_MAX (sizeof(msg) + KF_CHECKER_SPOT_MAX * 16)

/* ---- the runner's side ---- */

struct kf_checker {
    int fd;
    int mfd; /* the shared buffer's memfd, -1 before the first output */
    void *stage;
    size_t stage_len;
    int unsent; /* a kept buffer (kf_checker_adopt) this checker has not mapped yet */
};

kf_checker *kf_checker_connect(int fd, kf_err *err)
{
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_SEQPACKET) {
        kf_err_set(err, KF_EIO,
                   "no checker socket on descriptor %d (the agent starts a candidate's checker "
                   "and gives its runner the socket): the candidate cannot be judged",
                   fd);
        return NULL;
    }
    kf_checker *c = calloc(1, sizeof *c);
    if (!c) {
        kf_err_set(err, KF_ENOMEM, "out of memory");
        return NULL;
    }
    c->fd = fd;
    c->mfd = -1;
    return c;
}

static int ask(kf_checker *c, const msg *m, const void *payload, size_t plen, int pass_fd, reply *r,
               kf_err *err)
{
    struct iovec iov[2] = {{(void *)m, sizeof *m}, {(void *)payload, plen}};
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = plen ? 2 : 1};
    if (pass_fd >= 0) {
        memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    ssize_t n;
    do
        n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return kf_err_set(err, KF_EIO, "checker: cannot send to it: %s", strerror(errno));
    do
        n = recv(c->fd, r, sizeof *r, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof *r)
        return kf_err_set(err, KF_EIO, "checker: no answer (%s): it is gone",
                          n < 0 ? strerror(errno) : "closed");
    return KF_OK;
}

/* Outputs from this size on are populated by several threads, at most
 * STAGE_THREADS: it does not go faster past that (8 GiB on an H200 host:
 * 3.87 s on one thread, 1.70 s on 8, 1.95 s on 16; bench/gpu/pin_copy.c). */
#define STAGE_PAR_MIN (64u << 20)
#define STAGE_THREADS 8u

/* Bytes [lo, hi) of a new, zero buffer: a write to each page, which gives
 * it its memory (writing the zero it holds changes nothing). */
static void touch_pages(void *buf, unsigned part, size_t lo, size_t hi)
{
    (void)part;
    volatile unsigned char *b = buf;
    long pg = sysconf(_SC_PAGESIZE);
    size_t step = pg > 0 ? (size_t)pg : 4096;
    for (size_t i = (lo + step - 1) / step * step; i < hi; i += step)
        b[i] = 0;
}

/* The buffer's memfd sent to the checker, which maps it. */
static int send_map(kf_checker *c, kf_err *err)
{
    msg m = {.type = MSG_MAP, .count = c->stage_len};
    reply r;
    if (ask(c, &m, NULL, 0, c->mfd, &r, err) != KF_OK)
        return err->code;
    if (!r.passed)
        return kf_err_set(err, KF_EIO, "checker: it cannot map the output buffer");
    c->unsent = 0;
    return KF_OK;
}

static void unmap_stage(kf_checker *c)
{
    if (c->stage)
        munmap(c->stage, c->stage_len);
    if (c->mfd >= 0)
        close(c->mfd);
    c->stage = NULL;
    c->stage_len = 0;
    c->mfd = -1;
}

/* The shared buffer with room for n bytes, sent to the checker when new. */
static void *stage(kf_checker *c, size_t n, kf_err *err)
{
    if (c->stage && c->stage_len >= n)
        return c->unsent && send_map(c, err) != KF_OK ? NULL : c->stage;
    unmap_stage(c);
    c->mfd = kf_memfd("kfleet-output");
    if (c->mfd < 0 || ftruncate(c->mfd, (off_t)n) != 0) {
        kf_err_set(err, KF_EIO, "checker: cannot make a %zu-byte buffer for the output: %s", n,
                   strerror(errno));
        return NULL;
    }
    /* Populated here: a gigabyte output faulted in page by page during its
     * copy cost more than the copy. A large one on several threads: the
     * kernel zeroes each new page, and one thread took ~4 s of a KernelBench
     * L1Norm's validation (8.6 GB; H200 host, 2026-12-01). */
    unsigned threads = kf_cpus() < STAGE_THREADS ? kf_cpus() : STAGE_THREADS;
    int par = n >= STAGE_PAR_MIN && threads > 1;
    void *p =
        mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | (par ? 0 : MAP_POPULATE), c->mfd, 0);
    if (p == MAP_FAILED) {
        kf_err_set(err, KF_EIO, "checker: cannot map a %zu-byte buffer: %s", n, strerror(errno));
        return NULL;
    }
    if (par)
        kf_par_ranges(n, threads, touch_pages, p);
    c->stage = p;
    c->stage_len = n;
    if (send_map(c, err) != KF_OK) {
        unmap_stage(c);
        return NULL;
    }
    return p;
}

void kf_checker_adopt(kf_checker *c, kf_checker_stage *keep)
{
    if (!keep->p)
        return;
    unmap_stage(c);
    c->stage = keep->p;
    c->stage_len = keep->len;
    c->mfd = keep->mfd;
    c->unsent = 1;
    *keep = (kf_checker_stage){.mfd = -1};
}

static void stage_free(kf_checker_stage *keep)
{
    if (keep->p) {
        munmap(keep->p, keep->len);
        close(keep->mfd);
    }
    *keep = (kf_checker_stage){.mfd = -1};
}

void *kf_checker_buffer(kf_checker *c, size_t bytes, kf_err *err)
{
    return stage(c, bytes ? bytes : 1, err);
}

int kf_checker_check(kf_checker *c, uint32_t ref_index, const void *out, kf_dtype dtype,
                     size_t count, int *passed, kf_err *err)
{
    size_t bytes = count * hctx_dtype_size(dtype);
    void *buf = stage(c, bytes ? bytes : 1, err);
    if (!buf)
        return err->code;
    if (out != buf)
        memcpy(buf, out, bytes);
    msg m = {.type = MSG_CHECK, .ref = ref_index, .dtype = (uint32_t)dtype, .count = count};
    reply r;
    int rc = ask(c, &m, NULL, 0, -1, &r, err);
    if (rc != KF_OK)
        return rc;
    if (r.bad)
        return kf_err_set(err, KF_EINVAL,
                          "checker: the output is not the problem's (another element count, or "
                          "no such reference)");
    *passed = r.passed;
    return KF_OK;
}

int kf_checker_spot(kf_checker *c, uint32_t ref_index, const uint64_t *at, const double *values,
                    size_t n, int *passed, kf_err *err)
{
    if (n > KF_CHECKER_SPOT_MAX)
        return kf_err_set(err, KF_EINVAL, "checker: a spot check of %zu elements (at most %d)", n,
                          KF_CHECKER_SPOT_MAX);
    unsigned char payload[KF_CHECKER_SPOT_MAX * 16];
    memcpy(payload, at, n * 8);
    memcpy(payload + n * 8, values, n * 8);
    msg m = {.type = MSG_SPOT, .ref = ref_index, .n = (uint32_t)n};
    reply r;
    int rc = ask(c, &m, payload, n * 16, -1, &r, err);
    if (rc != KF_OK)
        return rc;
    if (r.bad)
        return kf_err_set(err, KF_EINVAL, "checker: a spot check outside the problem's output");
    *passed = r.passed;
    return KF_OK;
}

int kf_checker_finish(kf_checker **self)
{
    return kf_checker_finish_keep(self, NULL);
}

int kf_checker_finish_keep(kf_checker **self, kf_checker_stage *keep)
{
    if (!self || !*self)
        return KF_EIO;
    kf_checker *c = *self;
    msg m = {.type = MSG_FINISH};
    reply r;
    kf_err err;
    int rc = ask(c, &m, NULL, 0, -1, &r, &err);
    if (keep && c->stage) {
        stage_free(keep);
        *keep = (kf_checker_stage){.mfd = c->mfd, .p = c->stage, .len = c->stage_len};
        c->stage = NULL;
        c->mfd = -1;
    }
    unmap_stage(c);
    close(c->fd);
    free(c);
    *self = NULL;
    return rc;
}

/* ---- the checker's side ---- */

typedef struct server {
    kf_tols tol;
    kf_reffile refs[KF_CHECKER_MAX_REFS];
    char digests[KF_CHECKER_MAX_REFS][KF_REFFILE_DIGEST_HEX];
    size_t nrefs;
    const void *map; /* the runner's output buffer, read-only */
    size_t map_len;
    unsigned long long checks, failed, spots, spot_failed;
} server;

static void verdict(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void verdict(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        kf_write_all(KF_CHECKER_FD_VERDICTS, line,
                     (size_t)n < sizeof line ? (size_t)n : sizeof line);
}

/* The configuration on fd 0 and the reference files from fd 5 on. 0, or -1
 * with an "error" or "damaged" line written. */
static int configure(server *s)
{
    char text[KF_CHECKER_MAX_REFS * 128 + 256];
    size_t len = 0;
    for (ssize_t n;
         len < sizeof text - 1 && (n = read(0, text + len, sizeof text - 1 - len)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    text[len] = '\0';
    int have_tol = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned long long count;
        int verify, is_close;
        char digest[KF_REFFILE_DIGEST_HEX + 1];
        if (sscanf(line, "tol %lg %lg %d %lg %lg", &s->tol.abs, &s->tol.rel, &is_close,
                   &s->tol.atol, &s->tol.rtol) == 5) {
            s->tol.close = is_close;
            have_tol = 1;
        } else if (sscanf(line, "ref %llu %64s %d", &count, digest, &verify) == 3 &&
                   s->nrefs < KF_CHECKER_MAX_REFS) {
            size_t i = s->nrefs++;
            snprintf(s->digests[i], sizeof s->digests[i], "%s", digest);
            kf_err err;
            int rc = kf_reffile_map(KF_CHECKER_FD_REFS + (int)i, count, digest, verify, &s->refs[i],
                                    &err);
            close(KF_CHECKER_FD_REFS + (int)i); /* the mapping stays */
            if (rc == KF_EINVAL) {
                verdict("damaged %s %s\n", digest, err.msg);
                return -1;
            }
            if (rc != KF_OK) {
                verdict("error %s\n", err.msg);
                return -1;
            }
            if (verify)
                verdict("verified %s\n", digest);
        } else {
            verdict("error the checker's configuration has a line it does not know: %.100s\n",
                    line);
            return -1;
        }
    }
    if (!have_tol || s->nrefs == 0) {
        verdict("error the checker got no %s\n", have_tol ? "reference" : "tolerances");
        return -1;
    }
    return 0;
}

/* The runner's output buffer, passed with a MSG_MAP. */
static int take_map(server *s, int fd, size_t len)
{
    if (s->map)
        munmap((void *)s->map, s->map_len);
    s->map = NULL;
    /* Not populated: the buffer is the candidate's to size, and a check
     * reads only an output's bytes of it. */
    void *p = fd >= 0 && len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return 0;
    s->map = p;
    s->map_len = len;
    return 1;
}

static reply check(server *s, const msg *m)
{
    size_t esz = m->dtype <= KF_DTYPE_I32 ? hctx_dtype_size((kf_dtype)m->dtype) : 0;
    unsigned long long seq = s->checks++;
    if (!esz || m->ref >= s->nrefs || m->count != s->refs[m->ref].count || !s->map ||
        m->count > s->map_len / esz) {
        s->failed++;
        verdict("check %llu ref %u bad\n", seq, m->ref);
        return (reply){0, 1};
    }
    const kf_reffile *r = &s->refs[m->ref];
    kf_cmp c;
    kf_cmp_run(s->map, (kf_dtype)m->dtype, r->values, r->dtype, (size_t)m->count, &s->tol,
               kf_cpus(), &c);
    int pass = kf_cmp_passed(&c, &s->tol);
    s->failed += !pass;
    verdict("check %llu ref %u pass %d nonfinite %llu max_abs %.17g rel %.17g not_close %llu at "
            "%llu out %.17g ref %.17g close_ratio %.17g close_at %llu close_out %.17g close_ref "
            "%.17g\n",
            seq, m->ref, pass, (unsigned long long)c.nonfinite, c.max_abs, c.rel,
            (unsigned long long)c.not_close, (unsigned long long)c.max_abs_at, c.max_abs_out,
            c.max_abs_ref, c.close_ratio, (unsigned long long)c.close_at, c.close_out, c.close_ref);
    if (!pass) {
        char why[512];
        kf_cmp_why(&c, &s->tol, why, sizeof why);
        verdict("why %llu %s\n", seq, why);
    }
    return (reply){pass, 0};
}

/* How far apart the answers of the pool's inputs are at a spot check's
 * positions: the least relative L2 distance from the reference checked
 * against to another seed's (issue 43 item 3). Where a problem's tolerances
 * are loose beside its outputs (KernelBench's atol 1e-4 on a softmax whose
 * every value is below it), an answer kept from other inputs passes them;
 * it is still as far from this input's reference as the other inputs'
 * answers are, which an honest output never is. INFINITY with one seed. */
static double answers_apart(const server *s, const msg *m, const unsigned char *payload,
                            double ref2)
{
    double best = INFINITY;
    for (size_t k = 0; k < s->nrefs && ref2 > 0; k++) {
        if (k == m->ref || s->refs[k].count != s->refs[m->ref].count)
            continue;
        double d2 = 0;
        for (uint32_t i = 0; i < m->n; i++) {
            uint64_t at;
            memcpy(&at, payload + 8 * i, 8);
            double d = kf_reffile_at(&s->refs[k], (size_t)at) -
                       kf_reffile_at(&s->refs[m->ref], (size_t)at);
            d2 += d * d;
        }
        double d = sqrt(d2 / ref2);
        best = d < best ? d : best;
    }
    return best;
}

static reply spot(server *s, const msg *m, const unsigned char *payload, size_t plen)
{
    unsigned long long seq = s->spots++;
    if (m->ref >= s->nrefs || m->n > KF_CHECKER_SPOT_MAX || plen != (size_t)m->n * 16) {
        s->spot_failed++;
        verdict("spot %llu ref %u fail a spot check outside the problem's output\n", seq, m->ref);
        return (reply){0, 1};
    }
    const kf_reffile *r = &s->refs[m->ref];
    kf_cmp_spot c = {0};
    for (uint32_t i = 0; i < m->n; i++) {
        uint64_t at;
        double o;
        memcpy(&at, payload + 8 * i, 8);
        memcpy(&o, payload + 8 * m->n + 8 * i, 8);
        if (at >= r->count) {
            s->spot_failed++;
            verdict("spot %llu ref %u fail position %llu past the output\n", seq, m->ref,
                    (unsigned long long)at);
            return (reply){0, 1};
        }
        kf_cmp_spot_add(&c, &s->tol, o, kf_reffile_at(r, (size_t)at));
    }
    /* The guard's bounds (guard.c): an honest output meets the absolute and
     * close tolerances at every element; over a few chunks its relative
     * error can exceed tol_rel where the reference is small, so that bound
     * is loose: an output of other inputs is off by ~1 relative. */
    double rel = kf_cmp_spot_rel(&c), rel_bound = fmax(0.25, 10 * s->tol.rel);
    int pass = c.nonfinite == 0 && c.max_abs <= s->tol.abs && rel <= rel_bound && c.not_close == 0;
    double apart = pass ? answers_apart(s, m, payload, c.ref2) : INFINITY;
    if (pass && rel > apart / 4 && apart > 4 * fmax(s->tol.rtol, 1e-3)) {
        s->spot_failed++;
        verdict("spot %llu ref %u fail of %u elements at secret positions, the relative error "
                "%.3g is as large as between the answers of the pool's different inputs there "
                "(%.3g): an answer kept from other inputs, within tolerances too loose to tell "
                "inputs apart\n",
                seq, m->ref, m->n, rel, apart);
        return (reply){0, 0};
    }
    if (!pass) {
        s->spot_failed++;
        verdict("spot %llu ref %u fail of %u elements at secret positions, %llu still the poison "
                "or non-finite, %llu outside atol + rtol |ref|, max abs error %.3g (tolerance "
                "%.3g), relative error %.3g (bound %.3g)\n",
                seq, m->ref, m->n, (unsigned long long)c.nonfinite, (unsigned long long)c.not_close,
                c.max_abs, s->tol.abs, rel, rel_bound);
    }
    return (reply){pass, 0};
}

/* Confines the checker: no file, no network, no new privileges. */
static int confine(void)
{
    if (!kf_sandbox_enabled())
        return 0;
    kf_sandbox *sb = kf_sandbox_new();
    unsigned missing = 0;
    kf_err err;
    int rc = kf_sandbox_enter(sb, &missing, &err);
    kf_sandbox_destroy(&sb);
    if (rc != KF_OK)
        verdict("error the checker cannot enter its sandbox: %s\n", err.msg);
    return rc == KF_OK ? 0 : -1;
}

int kf_checker_main(void)
{
    /* Before anything is read: no process of this user without
     * CAP_SYS_PTRACE can attach to it or read its memory. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_IGN);
    server s;
    memset(&s, 0, sizeof s);
    if (configure(&s) != 0 || confine() != 0)
        return 1;
    unsigned char buf[MSG_MAX];
    for (;;) {
        struct iovec iov = {buf, sizeof buf};
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        ssize_t n = recvmsg(KF_CHECKER_FD_SOCK, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the runner is gone: no summary, so the task does not pass */
        int fd = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                cm->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        msg m;
        reply r = {0, 1};
        if ((size_t)n < sizeof m) {
            if (fd >= 0)
                close(fd);
        } else {
            memcpy(&m, buf, sizeof m);
            if (m.type != MSG_MAP && fd >= 0)
                close(fd);
            if (m.type == MSG_MAP)
                r = (reply){take_map(&s, fd, (size_t)m.count), 0};
            else if (m.type == MSG_CHECK)
                r = check(&s, &m);
            else if (m.type == MSG_SPOT)
                r = spot(&s, &m, buf + sizeof m, (size_t)n - sizeof m);
            else if (m.type == MSG_FINISH) {
                verdict("done checks %llu failed %llu spots %llu spot_failed %llu\n", s.checks,
                        s.failed, s.spots, s.spot_failed);
                r = (reply){1, 0};
                kf_write_all(KF_CHECKER_FD_SOCK, &r, sizeof r);
                return 0;
            }
        }
        if (kf_write_all(KF_CHECKER_FD_SOCK, &r, sizeof r) != 0)
            break;
    }
    return 0;
}
