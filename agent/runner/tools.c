/* tools — ncu and compute-sanitizer around a nested runner; see tools.h.
 *
 * ncu's CSV is parsed here (a quoted-field reader of a few lines): no CSV
 * library is packaged for Debian that would be smaller than this. */
#include "runner/tools.h"
#include "common/xalloc.h"
#include "common/execenv.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#endif

int kf_tools_find(const char *name, char *out, size_t len)
{
    const char *nvcc = getenv("KF_NVCC");
    char dir[PATH_MAX];
    if (nvcc && strchr(nvcc, '/')) {
        snprintf(dir, sizeof dir, "%s", nvcc);
        char *slash = strrchr(dir, '/');
        *slash = '\0';
        snprintf(out, len, "%s/%s", dir, name);
        if (access(out, X_OK) == 0)
            return 1;
    }
    if (kf_find_exe(name, out, len))
        return 1;
    snprintf(out, len, "/usr/local/cuda/bin/%s", name);
    return access(out, X_OK) == 0;
}

int kf_tools_run_nested(const char *runner, const char *workdir, const char *tmpdir,
                        const Kfleet__TaskAssign *ta, char *const tool_argv[], size_t ntool,
                        int *exit_status, kf_err *err)
{
    char dir[PATH_MAX], self[PATH_MAX];
    if (tmpdir)
        snprintf(dir, sizeof dir, "%s/nested-0x%llx-%u", tmpdir, (unsigned long long)ta->task_id,
                 ta->attempt);
    else
        snprintf(dir, sizeof dir, "%s/tmp/nested-0x%llx-%u", workdir,
                 (unsigned long long)ta->task_id, ta->attempt);
    int rc = kf_mkdirs(dir, 0700, err);
    if (rc != KF_OK)
        return rc;
    if (runner) {
        snprintf(self, sizeof self, "%s", runner);
    } else {
        ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
        if (sl <= 0)
            return kf_err_set(err, KF_EIO, "cannot find this runner's binary: %s", strerror(errno));
        self[sl] = '\0';
    }
    /* The nested task: the same, marked so that it only launches. It goes
     * to the nested runner's stdin from a memory file, never a file in a
     * directory a kernel can write: a task swapped there would have the
     * nested runner's sandbox grant another kernel's cache. */
    Kfleet__TaskAssign copy = *ta;
    Kfleet__TaskSpec spec = *ta->spec;
    spec.ncu_pass = 1;
    copy.spec = &spec;
    size_t n = kfleet__task_assign__get_packed_size(&copy);
    uint8_t *buf = kf_xmalloc(n ? n : 1);
    kfleet__task_assign__pack(&copy, buf);
    int in = kf_memfd("kfleet-nested-task");
    rc = in >= 0 && kf_write_all(in, buf, n) == 0 && lseek(in, 0, SEEK_SET) == 0
             ? KF_OK
             : kf_err_set(err, KF_EIO, "cannot hand the nested run its task: %s", strerror(errno));
    free(buf);
    if (rc != KF_OK) {
        if (in >= 0)
            close(in);
        return rc;
    }
    char **argv = kf_xcalloc(ntool + 8, sizeof *argv);
    for (size_t i = 0; i < ntool; i++)
        argv[i] = tool_argv[i];
    argv[ntool] = self;
    argv[ntool + 1] = "--runner";
    argv[ntool + 2] = "--workdir";
    argv[ntool + 3] = (char *)workdir;
    if (tmpdir) { /* its sandbox's scratch dir, inside ours */
        argv[ntool + 4] = "--scratch";
        argv[ntool + 5] = dir;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(in, 0);
        if (devnull >= 0)
            dup2(devnull, 1); /* the nested runner's frames: nobody reads them */
        execv(argv[0], argv);
        kf_exec_say(2, "cannot run ", argv[0], kf_exec_why(errno));
        _exit(127);
    }
    int e = errno;
    free(argv);
    close(in);
    if (pid < 0)
        return kf_err_set(err, KF_EIO, "cannot start %s: %s", tool_argv[0], strerror(e));
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return kf_err_set(err, KF_EIO, "waitpid: %s", strerror(errno));
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return KF_OK;
}

static const char *const tool_names[KF_TOOL_COUNT] = {"ncu", "memcheck", "racecheck"};

void kf_tools_log_path(kf_tool tool, const char *dir, const Kfleet__TaskAssign *ta, char *out,
                       size_t len)
{
    if (tool == KF_TOOL_NCU)
        snprintf(out, len, "%s/ncu-0x%llx-%u.csv", dir, (unsigned long long)ta->task_id,
                 ta->attempt);
    else
        snprintf(out, len, "%s/sanitize-%s-0x%llx-%u.log", dir, tool_names[tool],
                 (unsigned long long)ta->task_id, ta->attempt);
}

int kf_tools_run(kf_tool tool, const char *workdir, const char *dir, const Kfleet__TaskAssign *ta,
                 int *exit_status, kf_err *err)
{
    if ((unsigned)tool >= KF_TOOL_COUNT || !ta->spec)
        return kf_err_set(err, KF_EINVAL, "internal: tool %d on a task without a spec", tool);
    const char *exe = tool == KF_TOOL_NCU ? "ncu" : "compute-sanitizer";
    char path[PATH_MAX], log[PATH_MAX + 64];
    if (!kf_tools_find(exe, path, sizeof path))
        return kf_err_set(err, KF_ENOTFOUND, "%s is not on this node", exe);
    kf_tools_log_path(tool, dir, ta, log, sizeof log);
    unlink(log); /* the tool writes it anew, never through what was there */
    kf_buf metrics = KF_BUF_INIT;
    const Kfleet__MeasureSettings *m = ta->spec->measure;
    for (size_t i = 0; m && i < m->n_ncu_metrics; i++)
        kf_buf_addf(&metrics, "%s%s", i ? "," : "", m->ncu_metrics[i]);
    char *ncu[] = {path,
                   "--clock-control",
                   "none",
                   "--profile-from-start",
                   "off",
                   "--metrics",
                   metrics.data ? metrics.data : (char *)"",
                   "--csv",
                   "--print-units",
                   "base",
                   "--log-file",
                   log,
                   "--target-processes",
                   "all"};
    char *cs[] = {path,         "--tool", (char *)tool_names[tool], "--error-exitcode", "97",
                  "--log-file", log};
    int rc = tool == KF_TOOL_NCU ? kf_tools_run_nested(NULL, workdir, dir, ta, ncu,
                                                       sizeof ncu / sizeof *ncu, exit_status, err)
                                 : kf_tools_run_nested(NULL, workdir, dir, ta, cs,
                                                       sizeof cs / sizeof *cs, exit_status, err);
    kf_buf_release(&metrics);
    return rc;
}

/* Splits one CSV line into at most max fields (quotes removed, "" kept as
 * one quote), in place. Returns the count. */
static size_t csv_fields(char *line, char **f, size_t max)
{
    size_t n = 0;
    char *p = line;
    while (*p && n < max) {
        char *w = p, *start = p;
        if (*p == '"') {
            p++;
            start = w;
            while (*p) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',')
                w = ++p;
        }
        f[n++] = start;
        if (*p == ',') {
            *w = '\0';
            p++;
        } else {
            *w = '\0';
            break;
        }
    }
    return n;
}

typedef struct series {
    char *kernel, *metric, *unit;
    double *v;
    size_t n, cap;
} series;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static Kfleet__Metric *metric(const char *name, const char *unit, const char *kernel, double value,
                              uint32_t launches)
{
    Kfleet__Metric *m = kf_xmalloc(sizeof *m);
    kfleet__metric__init(m);
    m->name = kf_xstrdup(name);
    m->unit = kf_xstrdup(unit);
    m->kernel = kf_xstrdup(kernel);
    m->value = value;
    m->launches = launches;
    return m;
}

int kf_tools_parse_ncu_csv(const char *text, unsigned runs, Kfleet__Metric ***out, size_t *nout,
                           kf_err *err)
{
    *out = NULL;
    *nout = 0;
    char *copy = strdup(text ? text : "");
    series *s = NULL;
    size_t ns = 0;
    int ck = -1, cm = -1, cu = -1, cv = -1, rc = KF_OK;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line && copy;
         line = strtok_r(NULL, "\n", &save)) {
        line[strcspn(line, "\r")] = '\0';
        if (line[0] != '"')
            continue; /* ==PROF== notes and the application's own output */
        char *f[64];
        size_t nf = csv_fields(line, f, 64);
        if (ck < 0) {
            for (size_t i = 0; i < nf; i++) {
                ck = strcmp(f[i], "Kernel Name") == 0 ? (int)i : ck;
                cm = strcmp(f[i], "Metric Name") == 0 ? (int)i : cm;
                cu = strcmp(f[i], "Metric Unit") == 0 ? (int)i : cu;
                cv = strcmp(f[i], "Metric Value") == 0 ? (int)i : cv;
            }
            if (ck < 0 || cm < 0 || cu < 0 || cv < 0)
                ck = -1;
            continue;
        }
        if ((size_t)ck >= nf || (size_t)cm >= nf || (size_t)cu >= nf || (size_t)cv >= nf)
            continue;
        char num[64], *q = num;
        for (const char *p = f[cv]; *p && q < num + sizeof num - 1; p++)
            if (*p != ',') /* thousands separators */
                *q++ = *p;
        *q = '\0';
        char *end;
        double v = strtod(num, &end);
        if (end == num || *end)
            continue; /* "n/a" and the like */
        size_t i = 0;
        while (i < ns && !(strcmp(s[i].kernel, f[ck]) == 0 && strcmp(s[i].metric, f[cm]) == 0))
            i++;
        if (i == ns) {
            s = kf_xrealloc(s, (ns + 1) * sizeof *s);
            memset(&s[ns], 0, sizeof *s);
            s[ns].kernel = kf_xstrdup(f[ck]);
            s[ns].metric = kf_xstrdup(f[cm]);
            s[ns].unit = kf_xstrdup(f[cu]);
            ns++;
        }
        if (s[i].n == s[i].cap) {
            size_t cap = s[i].cap ? 2 * s[i].cap : 8;
            s[i].v = kf_xrealloc(s[i].v, cap * sizeof *s[i].v);
            s[i].cap = cap;
        }
        s[i].v[s[i].n++] = v;
    }
    if (rc == KF_OK && ns == 0)
        rc = kf_err_set(err, KF_EINVAL,
                        "ncu reported no metric rows (no kernel launched, or no metric name was "
                        "known to this ncu)");
    Kfleet__Metric **m = rc == KF_OK ? kf_xcalloc(2 * ns, sizeof *m) : NULL;
    size_t nm = 0;
    for (size_t i = 0; rc == KF_OK && i < ns; i++) {
        qsort(s[i].v, s[i].n, sizeof *s[i].v, cmp_d);
        double med =
            s[i].n % 2 ? s[i].v[s[i].n / 2] : (s[i].v[s[i].n / 2 - 1] + s[i].v[s[i].n / 2]) / 2;
        m[nm++] = metric(s[i].metric, s[i].unit, s[i].kernel, med, (uint32_t)s[i].n);
    }
    /* Per metric, all kernels together, per run. */
    for (size_t i = 0; rc == KF_OK && i < ns; i++) {
        int first = 1;
        for (size_t j = 0; j < i; j++)
            first &= strcmp(s[j].metric, s[i].metric) != 0;
        if (!first)
            continue;
        double total = 0;
        uint32_t launches = 0;
        for (size_t j = i; j < ns; j++) {
            if (strcmp(s[j].metric, s[i].metric) != 0)
                continue;
            for (size_t k = 0; k < s[j].n; k++)
                total += s[j].v[k];
            launches += (uint32_t)s[j].n;
        }
        m[nm++] = metric(s[i].metric, s[i].unit, "(per run)", total / (runs ? runs : 1), launches);
    }
    for (size_t i = 0; i < ns; i++) {
        free(s[i].kernel);
        free(s[i].metric);
        free(s[i].unit);
        free(s[i].v);
    }
    free(s);
    free(copy);
    if (rc != KF_OK) {
        kf_tools_free_metrics(m, nm);
        return rc;
    }
    *out = m;
    *nout = nm;
    return KF_OK;
}

void kf_tools_free_metrics(Kfleet__Metric **m, size_t n)
{
    for (size_t i = 0; m && i < n; i++) {
        if (!m[i])
            continue;
        free(m[i]->name);
        free(m[i]->unit);
        free(m[i]->kernel);
        free(m[i]);
    }
    free(m);
}

void kf_tools_first_error_block(const char *log, char *out, size_t len)
{
    out[0] = '\0';
    if (!log || !len)
        return;
    size_t used = 0;
    int in_block = 0, done = 0;
    const char *summary = NULL, *last = NULL;
    size_t summary_n = 0, last_n = 0;
    for (const char *p = log; *p;) {
        size_t n = strcspn(p, "\n");
        /* The line without the "========= " prefix: what it says. */
        const char *body = p;
        if (strncmp(body, "=========", 9) == 0) {
            body += 9;
            while (body < p + n && *body == ' ')
                body++;
        }
        size_t bn = (size_t)(p + n - body);
        if (bn) {
            last = p;
            last_n = n;
        }
        if (bn && memmem(body, bn, "SUMMARY:", 8)) { /* ERROR / RACECHECK SUMMARY */
            summary = p;
            summary_n = n;
        } else if (!done) {
            int banner = strncmp(body, "COMPUTE-SANITIZER", 17) == 0;
            int frame = strncmp(body, "Saved host backtrace", 20) == 0 ||
                        strncmp(body, "Host Frame", 10) == 0;
            if (!in_block && bn && !banner && !frame && body != p) {
                in_block = 1; /* the first line after the banner that says something */
            } else if (in_block && (bn == 0 || frame)) {
                in_block = 0;
                done = 1;
            }
            if (in_block && used + n + 2 < len) {
                memcpy(out + used, p, n);
                used += n;
                out[used++] = '\n';
                out[used] = '\0';
            }
        }
        p += n + (p[n] == '\n');
    }
    const char *tail = summary ? summary : (used ? NULL : last);
    size_t tn = summary ? summary_n : last_n;
    if (tail && used + tn + 1 < len) {
        memcpy(out + used, tail, tn);
        used += tn;
        out[used] = '\0';
    } else if (used && out[used - 1] == '\n') {
        out[used - 1] = '\0';
    }
}
