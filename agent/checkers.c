/* checkers — a candidate's references on this agent, and its checker; see
 * checkers.h. */
#include "agent/checkers.h"

#include "agent/refstore.h"
#include "common/execenv.h"
#include "common/log.h"
#include "common/taskspec.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/channel.h"
#include "runner/checker.h"
#include "runner/compare.h"
#include "runner/reffile.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* A reference of the assignment this agent can judge by now. */
static int here(const kf_agent *a, const Kfleet__Reference *r)
{
    return r->digest && kf_refstore_digest_ok(r->digest) && kf_refstore_has(a->refs, r->digest);
}

size_t checkers_missing(const kf_agent *a, const Kfleet__TaskSpec *spec)
{
    size_t n = 0;
    for (size_t i = 0; i < spec->n_references; i++)
        n += !here(a, spec->references[i]);
    return n;
}

int checkers_prestage(const kf_agent *a, const Kfleet__TaskAssign *ta, uint8_t **out, size_t *len,
                      kf_err *err)
{
    const Kfleet__TaskSpec *s = ta->spec;
    if (s->n_references != s->n_seeds)
        return kf_err_set(err, KF_EINVAL,
                          "the assignment carries %zu seeds and %zu stored references", s->n_seeds,
                          s->n_references);
    uint64_t *seeds = kf_xcalloc(s->n_seeds ? s->n_seeds : 1, sizeof *seeds);
    size_t n = 0;
    for (size_t i = 0; i < s->n_references; i++)
        if (!here(a, s->references[i]))
            seeds[n++] = s->seeds[i];
    /* The problem as a reference task sees it (the coordinator's own
     * reference tasks are the problem's kernel): loaded alone. */
    Kfleet__TaskSpec spec;
    kf_taskspec_problem(s, &spec);
    spec.kind = KFLEET__TASK_KIND__REFERENCE;
    spec.problem_files = NULL;
    spec.n_problem_files = 0;
    spec.problem_kernel = spec.problem_hash = spec.problem_artifact_hash = "";
    spec.problem_python = spec.problem_cuda = 0;
    spec.tol_override = 0; /* a reference keeps the problem's own tolerances */
    spec.seeds = seeds;
    spec.n_seeds = n;
    spec.references = NULL;
    spec.n_references = 0;
    Kfleet__TaskAssign copy = *ta;
    copy.spec = &spec;
    *len = kfleet__task_assign__get_packed_size(&copy);
    *out = kf_xmalloc(*len ? *len : 1);
    kfleet__task_assign__pack(&copy, *out);
    free(seeds);
    return KF_OK;
}

/* Where runner r writes its files: its scratch dir, which is what turns
 * its sandbox on, else the agent's shared tmp (runners.c). */
static void runner_tmpdir(const kf_agent *a, const krunner *r, char *out, size_t len)
{
    if (kf_sandbox_enabled())
        snprintf(out, len, "%s", r->dir);
    else
        snprintf(out, len, "%s/tmp", a->workdir);
}

int checkers_keep(kf_agent *a, const krunner *r, const Kfleet__Result *res, kf_err *err)
{
    char dir[PATH_MAX], from[PATH_MAX + 64];
    runner_tmpdir(a, r, dir, sizeof dir);
    int rc = KF_OK;
    for (size_t i = 0; i < res->n_references; i++) {
        const Kfleet__Reference *ref = res->references[i];
        kf_reffile_scratch_path(from, sizeof from, dir, r->task_id, r->attempt, i);
        if (rc == KF_OK)
            rc = kf_refstore_adopt(a->refs, from, ref->digest, err);
        else
            unlink(from);
    }
    return rc;
}

Kfleet__TaskAssign *checkers_handoff(kf_agent *a, const krunner *r, const Kfleet__Result *res,
                                     uint32_t *recomputed, uint32_t *differ, kf_err *err)
{
    *recomputed = *differ = 0;
    Kfleet__TaskAssign *old = kfleet__task_assign__unpack(NULL, r->then_len, r->then);
    if (!old || !old->spec) {
        kf_err_set(err, KF_EINVAL, "internal: the candidate's assignment does not decode");
        if (old)
            kfleet__task_assign__free_unpacked(old, NULL);
        return NULL;
    }
    /* Which ones were missing, before the new files land (one may be the
     * very file the assignment names). */
    size_t nref = old->spec->n_references;
    uint8_t *was_missing = kf_xcalloc(nref ? nref : 1, 1);
    for (size_t i = 0; i < nref; i++)
        was_missing[i] = !here(a, old->spec->references[i]);
    if (checkers_keep(a, r, res, err) != KF_OK) {
        free(was_missing);
        kfleet__task_assign__free_unpacked(old, NULL);
        return NULL;
    }
    /* A shallow copy whose missing references are the ones computed here
     * (in the order the assignment lists them), packed and decoded again:
     * the caller gets a message that owns all it points to. */
    const Kfleet__TaskSpec *s = old->spec;
    size_t n = s->n_references, k = 0;
    Kfleet__Reference *refs = kf_xcalloc(n ? n : 1, sizeof *refs);
    Kfleet__Reference **ptrs = kf_xcalloc(n ? n : 1, sizeof *ptrs);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        refs[i] = *s->references[i];
        ptrs[i] = &refs[i];
        if (!was_missing[i] || k >= res->n_references)
            continue;
        const Kfleet__Reference *got = res->references[k++];
        bad |= got->seed != s->seeds[i] || got->count == 0;
        *differ += refs[i].digest && *refs[i].digest && strcmp(refs[i].digest, got->digest) != 0;
        (*recomputed)++;
        refs[i].digest = got->digest;
        refs[i].count = got->count;
        refs[i].dtype = got->dtype;
        refs[i].tol_abs = got->tol_abs;
        refs[i].tol_rel = got->tol_rel;
        refs[i].close = got->close;
        refs[i].atol = got->atol;
        refs[i].rtol = got->rtol;
    }
    Kfleet__TaskSpec spec = *s;
    spec.references = ptrs;
    Kfleet__TaskAssign copy = *old;
    copy.spec = &spec;
    Kfleet__TaskAssign *ta = NULL;
    if (bad || k != res->n_references) {
        kf_err_set(err, KF_EINVAL,
                   "internal: the references computed here (%zu) are not the %u the candidate "
                   "lacked",
                   res->n_references, *recomputed);
    } else {
        size_t len = kfleet__task_assign__get_packed_size(&copy);
        uint8_t *buf = kf_xmalloc(len ? len : 1);
        kfleet__task_assign__pack(&copy, buf);
        ta = kfleet__task_assign__unpack(NULL, len, buf);
        free(buf);
        if (ta && checkers_missing(a, ta->spec)) {
            kf_err_set(err, KF_EIO, "the references computed here are not in the store");
            kfleet__task_assign__free_unpacked(ta, NULL);
            ta = NULL;
        }
    }
    free(refs);
    free(ptrs);
    free(was_missing);
    kfleet__task_assign__free_unpacked(old, NULL);
    return ta;
}

/* The tolerances a candidate is judged by: its problem's, as the reference
 * task stored them, or the sweep's atol and rtol where it overrides them
 * (a KernelBench or GPU MODE problem's; the relative-L2 bound is kept). */
static kf_tols judged_by(const Kfleet__TaskSpec *s)
{
    const Kfleet__Reference *r0 = s->references[0];
    if (s->tol_override)
        return (kf_tols){r0->tol_abs, r0->tol_rel, 1, s->tol_atol, s->tol_rtol};
    return (kf_tols){r0->tol_abs, r0->tol_rel, r0->close, r0->atol, r0->rtol};
}

/* The checker's configuration (checker.h) in a memory file, at its start. */
static int config_fd(const kf_agent *a, const Kfleet__TaskSpec *s, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    kf_tols t = judged_by(s);
    kf_buf_addf(&b, "tol %.17g %.17g %d %.17g %.17g\n", t.abs, t.rel, t.close ? 1 : 0, t.atol,
                t.rtol);
    for (size_t i = 0; i < s->n_references; i++)
        kf_buf_addf(&b, "ref %llu %s %d\n", (unsigned long long)s->references[i]->count,
                    s->references[i]->digest,
                    !kf_refstore_verified(a->refs, s->references[i]->digest));
    int fd = kf_memfd("kfleet-checker-config");
    int ok = fd >= 0 && kf_write_all(fd, b.data, b.len) == 0 && lseek(fd, 0, SEEK_SET) == 0;
    kf_buf_release(&b);
    if (!ok) {
        if (fd >= 0)
            close(fd);
        return kf_err_set(err, KF_EIO, "cannot write the checker's configuration: %s",
                          strerror(errno));
    }
    return fd;
}

int checkers_start(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, int *runner_fd,
                   kf_err *err)
{
    const Kfleet__TaskSpec *s = ta->spec;
    size_t n = s->n_references;
    if (n == 0 || n > KF_CHECKER_MAX_REFS || n != s->n_seeds || checkers_missing(a, s))
        return kf_err_set(err, KF_EINVAL,
                          "the candidate's %zu references are not all on this agent (or more "
                          "than %d)",
                          n, KF_CHECKER_MAX_REFS);
    int place[KF_CHECKER_FD_REFS + KF_CHECKER_MAX_REFS];
    for (size_t i = 0; i < sizeof place / sizeof *place; i++)
        place[i] = -1;
    int sv[2] = {-1, -1}, vp[2] = {-1, -1}, log_fd = -1, rc = KF_OK;
    char path[PATH_MAX + 80];
    for (size_t i = 0; i < n && rc == KF_OK; i++) {
        kf_refstore_path(a->refs, s->references[i]->digest, path, sizeof path);
        place[KF_CHECKER_FD_REFS + i] = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (place[KF_CHECKER_FD_REFS + i] < 0)
            rc = kf_err_set(err, KF_EIO, "cannot open the reference %s: %s", path, strerror(errno));
    }
    snprintf(path, sizeof path, "%s/checker.log", r->dir);
    if (rc == KF_OK && (place[0] = config_fd(a, s, err)) < 0)
        rc = err->code;
    if (rc == KF_OK &&
        (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
         pipe2(vp, O_CLOEXEC) != 0 ||
         (log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0))
        rc = kf_err_set(err, KF_EIO, "cannot prepare the checker: %s", strerror(errno));
    pid_t pid = rc == KF_OK ? fork() : -1;
    if (rc == KF_OK && pid < 0)
        rc = kf_err_set(err, KF_EIO, "cannot fork the checker: %s", strerror(errno));
    if (pid == 0) {
        /* Its own process group: a kill of the runner's never reaches it. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        place[1] = open("/dev/null", O_WRONLY);
        place[2] = log_fd;
        place[KF_CHECKER_FD_SOCK] = sv[0];
        place[KF_CHECKER_FD_VERDICTS] = vp[1];
        if (kf_sandbox_place_fds(place, KF_CHECKER_FD_REFS + (int)n) != 0)
            _exit(127);
        char *argv[] = {"kfleet-agent", "--checker", NULL};
        execv(a->runner_exe, argv);
        kf_exec_say(2, "cannot exec the checker ", a->runner_exe, kf_exec_why(errno));
        _exit(127);
    }
    for (size_t i = 0; i < sizeof place / sizeof *place; i++)
        if (place[i] >= 0)
            close(place[i]);
    if (log_fd >= 0)
        close(log_fd);
    if (sv[0] >= 0)
        close(sv[0]);
    if (vp[1] >= 0)
        close(vp[1]);
    if (rc != KF_OK) {
        if (sv[1] >= 0)
            close(sv[1]);
        if (vp[0] >= 0)
            close(vp[0]);
        return rc;
    }
    fcntl(vp[0], F_SETFL, O_NONBLOCK);
    r->verdict_fd = vp[0];
    r->checker_pid = pid;
    kf_tols t = judged_by(s);
    r->has_tols = 1;
    r->tol_abs = t.abs;
    r->tol_rel = t.rel;
    r->tol_close = t.close;
    r->atol = t.atol;
    r->rtol = t.rtol;
    *runner_fd = sv[1];
    kf_debug("checker.start", "task=0x%llx pid=%d refs=%zu", (unsigned long long)ta->task_id,
             (int)pid, n);
    return KF_OK;
}

void checkers_stop(krunner *r)
{
    if (r->checker_pid > 0)
        kill(r->checker_pid, SIGKILL);
    r->checker_pid = 0;
}
