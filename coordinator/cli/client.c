/* client — control-protocol calls, submit building and --follow; see client.h. */
#include "cli/client.h"
#include "common/taskkind.h"
#include "common/limits.h"
#include "common/xalloc.h"
#include "common/buf.h"
#include "common/dirpack.h"
#include "core/ctlsock.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

struct kf_client {
    void *ctx, *sock;
    char endpoint[PATH_MAX];
};

int kf_client_open(const kf_paths *paths, kf_client **out, kf_err *err)
{
    /* The coordinator holds this lock while it runs. */
    kf_err lerr;
    int fd = kf_lock_file(paths->lock, &lerr);
    if (fd >= 0) {
        close(fd);
        return kf_err_set(err, KF_EUNAVAIL,
                          "no coordinator is running for %s; start one with `kfleet serve` "
                          "(or use `kfleet run FILE` for a one-off local sweep)",
                          paths->state);
    }
    if (lerr.code == KF_EINVAL) /* permission denied: not "no coordinator" */
        return kf_err_set(err, KF_EINVAL,
                          "%s: this user cannot use the kfleet home there (pass --home DIR, or "
                          "run as its owner)",
                          lerr.msg);
    if (lerr.code != KF_EBUSY) {
        /* The state dir does not exist: nothing ever ran here. */
        return kf_err_set(err, KF_EUNAVAIL,
                          "no coordinator is running for %s; start one with `kfleet serve`",
                          paths->state);
    }
    kf_client *c = kf_xcalloc(1, sizeof *c);
    snprintf(c->endpoint, sizeof c->endpoint, "%s", paths->control_endpoint);
    c->ctx = zmq_ctx_new();
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    int zero = 0;
    int64_t maxmsg = KF_MAX_FRAME * 4;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_connect(c->sock, c->endpoint) != 0) {
        int e = errno;
        kf_client_close(&c);
        return kf_err_set(err, KF_EUNAVAIL, "cannot connect to the coordinator at %s: %s",
                          paths->control_endpoint, zmq_strerror(e));
    }
    *out = c;
    return KF_OK;
}

void kf_client_close(kf_client **self)
{
    kf_client *c = *self;
    if (!c)
        return;
    if (c->sock)
        zmq_close(c->sock);
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    free(c);
    *self = NULL;
}

int kf_client_call(kf_client *c, Kfleet__ControlRequest *req, int timeout_ms,
                   Kfleet__ControlReply **out, kf_err *err)
{
    int rc = kf_ctlsock_send_request(c->sock, req, err);
    if (rc)
        return rc;
    zmq_pollitem_t it = {c->sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, timeout_ms) <= 0)
        return kf_err_set(err, KF_ETIMEOUT,
                          "the coordinator at %s did not answer within %d ms (is it stuck? its "
                          "log says)",
                          c->endpoint, timeout_ms);
    return kf_ctlsock_read_reply(c->sock, out, err);
}

int kf_client_kernels_dir(char *out, size_t len, kf_err *err)
{
    const char *env = getenv("KF_KERNELS_DIR");
    struct stat st;
    if (env && *env) {
        if (stat(env, &st) != 0 || !S_ISDIR(st.st_mode))
            return kf_err_set(err, KF_EINVAL, "KF_KERNELS_DIR=%s is not a directory", env);
        snprintf(out, len, "%s", env);
        return KF_OK;
    }
    char exe[PATH_MAX], cand[PATH_MAX + 32];
    if (kf_exe_dir(exe, sizeof exe) == KF_OK) {
        snprintf(cand, sizeof cand, "%s/kernels/kf_kernel.h", exe);
        if (stat(cand, &st) == 0) {
            snprintf(out, len, "%s/kernels", exe);
            return KF_OK;
        }
        snprintf(cand, sizeof cand, "%s/../kernels/kf_kernel.h", exe);
        if (stat(cand, &st) == 0) {
            snprintf(out, len, "%s/../kernels", exe);
            return KF_OK;
        }
    }
    return kf_err_set(err, KF_ENOTFOUND,
                      "cannot find the kernels directory (kf_kernel.h) beside %s; set "
                      "KF_KERNELS_DIR",
                      exe);
}

/* ---- submit ---- */

static char *xstrdup(const char *s)
{
    char *p = kf_xstrdup(s ? s : "");
    return p;
}

static Kfleet__SourceFile *source_file(const char *name, kf_buf *content)
{
    Kfleet__SourceFile *sf = kf_xmalloc(sizeof *sf);
    kfleet__source_file__init(sf);
    sf->name = xstrdup(name);
    sf->content.len = content->len;
    sf->content.data = (uint8_t *)kf_buf_detach(content);
    return sf;
}

/* The local headers a kernel needs: every `#include "NAME"` (a plain file
 * name, not kf_kernel.h) that exists beside the source, or else among
 * kfleet's shipped helpers (KERNELS_DIR/cuda, e.g. kf_cuda.cuh), and theirs
 * in turn, at most 16. They travel with the kernel and enter its hash, so a
 * changed header rebuilds. Names go to names[], contents to texts[]. */
#define KF_MAX_HEADERS 16
static int collect_headers(const char *dir, const char *kernels_dir, const kf_buf *text,
                           char **names, kf_buf *texts, size_t *n, kf_err *err)
{
    for (const char *p = text->data; p && (p = strstr(p, "#include")) != NULL;) {
        p += 8;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '"')
            continue;
        const char *e = strchr(p + 1, '"');
        const char *nl = strchr(p + 1, '\n');
        if (!e || (nl && nl < e) || e == p + 1)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
        if (strchr(name, '/') || name[0] == '.' || strcmp(name, "kf_kernel.h") == 0)
            continue;
        int seen = 0;
        for (size_t i = 0; i < *n; i++)
            seen |= strcmp(names[i], name) == 0;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!seen && access(path, R_OK) != 0)
            snprintf(path, sizeof path, "%s/cuda/%s", kernels_dir, name);
        if (seen || access(path, R_OK) != 0)
            continue; /* a system or toolkit header */
        if (*n == KF_MAX_HEADERS)
            return kf_err_set(err, KF_EINVAL,
                              "%s: a kernel may bring at most %d local headers; merge some", path,
                              KF_MAX_HEADERS);
        kf_buf_init(&texts[*n]);
        char why[160];
        int rrc = kf_buf_read_file_max(&texts[*n], path, KF_MAX_HEADER_FILE, why, sizeof why);
        if (rrc != KF_OK) {
            kf_buf_release(&texts[*n]);
            return kf_err_set(err, rrc == KF_EINVAL ? KF_EINVAL : KF_EIO,
                              "header %s (included by the kernel): %s; a header that travels "
                              "with a kernel is a regular file of at most %u KiB",
                              path, why, KF_MAX_HEADER_FILE >> 10);
        }
        size_t total = 0;
        for (size_t i = 0; i <= *n; i++)
            total += texts[i].len;
        if (total > KF_MAX_HEADERS_TOTAL) {
            kf_buf_release(&texts[*n]);
            return kf_err_set(err, KF_EINVAL,
                              "%s: the kernel's local headers add up to %zu bytes; at most %u "
                              "MiB together",
                              path, total, KF_MAX_HEADERS_TOTAL >> 20);
        }
        names[*n] = xstrdup(name);
        size_t me = (*n)++;
        int rc = collect_headers(dir, kernels_dir, &texts[me], names, texts, n, err);
        if (rc != KF_OK)
            return rc;
    }
    return KF_OK;
}

/* A Python kernel's torch extension sources (k->ext) and its own files
 * (k->files), beside it, appended to names[]/texts[] after the n already
 * there: they travel with the kernel and enter its hash like headers. */
static int collect_extension(const char *dir, const kf_sweep_kernel *k, char **names, kf_buf *texts,
                             size_t *n, kf_err *err)
{
    size_t total = 0;
    for (size_t j = 0; j < k->next + k->nfiles; j++) {
        char path[PATH_MAX], why[160];
        const char *name = j < k->next ? k->ext[j] : k->files[j - k->next];
        const char *what = j < k->next ? "extension file" : "file";
        /* Read from elsewhere than its name: GPU MODE's ../utils.py. */
        const char *src = j >= k->next && k->file_src && k->file_src[j - k->next]
                              ? k->file_src[j - k->next]
                              : name;
        size_t nl = strlen(name);
        int is_dir = j >= k->next && nl > 1 && name[nl - 1] == '/';
        snprintf(path, sizeof path, "%s/%s", dir, src);
        kf_buf_init(&texts[*n]);
        /* A directory travels packed, as one source: NAME.kfdir. */
        int rrc =
            is_dir ? (kf_dirpack_pack(path, &texts[*n], KF_MAX_HEADERS_TOTAL, why, sizeof why) == 0
                          ? KF_OK
                          : KF_EINVAL)
                   : kf_buf_read_file_max(&texts[*n], path, KF_MAX_SOURCE_FILE, why, sizeof why);
        total += texts[*n].len;
        if (rrc == KF_OK && total > KF_MAX_HEADERS_TOTAL)
            snprintf(why, sizeof why, "the kernel's extension and files add up to more than %u MiB",
                     KF_MAX_HEADERS_TOTAL >> 20);
        if (rrc != KF_OK || total > KF_MAX_HEADERS_TOTAL) {
            kf_buf_release(&texts[*n]);
            return kf_err_set(err, rrc == KF_EIO ? KF_EIO : KF_EINVAL,
                              "%s %s (named by kernel %s): %s", what, path, k->name, why);
        }
        if (is_dir) {
            char packed[PATH_MAX];
            snprintf(packed, sizeof packed, "%.*s.kfdir", (int)(nl - 1), name);
            names[(*n)++] = xstrdup(packed);
        } else {
            names[(*n)++] = xstrdup(name);
        }
    }
    return KF_OK;
}

/* kf_client_build_submit's phases: the sweep record with its measurement
 * settings, then per kernel its reference, its sources and hash, and its
 * tasks (a group of configurations, or a task per kernel). */

static Kfleet__MeasureSettings *measure_settings(const kf_sweep_measure *m)
{
    Kfleet__MeasureSettings *ms = kf_xcalloc(1, sizeof *ms);
    kfleet__measure_settings__init(ms);
    ms->min_samples = m->min_samples;
    ms->min_time_s = m->min_time_s;
    ms->max_noise_pct = m->max_noise_pct;
    ms->precision_pct = m->precision_pct;
    ms->min_span_s = m->min_span_s;
    ms->timeout_s = m->timeout_s;
    ms->warmup = m->warmup;
    ms->hot = m->hot;
    ms->validate_seeds = m->seeds;
    ms->batch = m->batch;
    ms->sanitize = m->sanitize;
    ms->throttle_keep = m->throttle_keep;
    ms->throttle_threshold_pct = m->throttle_threshold_pct;
    ms->throttle_recovery_s = m->throttle_recovery_s;
    ms->thermal_sustained = m->thermal_sustained;
    ms->n_ncu_metrics = m->nncu;
    ms->ncu_metrics = kf_xcalloc(m->nncu ? m->nncu : 1, sizeof(char *));
    for (size_t i = 0; i < m->nncu; i++)
        ms->ncu_metrics[i] = xstrdup(m->ncu[i]);
    return ms;
}

/* The sweep record, its kernels' array allocated (nrefs of them) but
 * empty. A problem travels as one more KernelRef, last, marked as the
 * problem: built and hashed like a kernel, with no tasks of its own (the
 * coordinator makes its reference tasks, docs/problems.md). */
static Kfleet__Sweep *sweep_record(const kf_sweep_spec *spec, size_t nrefs)
{
    Kfleet__Sweep *sw = kf_xcalloc(1, sizeof *sw);
    kfleet__sweep__init(sw);
    sw->name = xstrdup(spec->name);
    sw->file = xstrdup(spec->file);
    sw->spec_yaml = xstrdup(spec->text);
    sw->nodes_all = spec->nodes_all;
    sw->max_attempts = spec->max_attempts;
    sw->time_limit_s = spec->time_limit_s;
    sw->memory_limit_bytes = spec->memory_limit;
    sw->baseline = xstrdup(spec->baseline);
    sw->price_per_gpu_hour = spec->price_per_gpu_hour;
    sw->measure = measure_settings(&spec->measure);
    sw->n_kernels = nrefs;
    sw->kernels = kf_xcalloc(nrefs ? nrefs : 1, sizeof *sw->kernels);
    if (spec->problem) {
        sw->seed_pool = spec->seed_pool;
        sw->seed_renew_s = spec->seed_renew_s;
        sw->tol_override = spec->tol_override != 0;
        sw->tol_atol = spec->tol_atol;
        sw->tol_rtol = spec->tol_rtol;
    }
    return sw;
}

/* What the sweep's `tasks:` asks for, read through the task-kind table:
 * the per-configuration kinds go as task groups; without any, the
 * per-kernel ones go as a task each. */
typedef struct {
    unsigned per_config, per_kernel; /* sweep bits */
    size_t nper_config, nper_kernel;
} asked_kinds;

static asked_kinds kinds_asked(const kf_sweep_spec *spec)
{
    asked_kinds k = {0, 0, 0, 0};
    for (size_t ki = 0; kf_task_kinds[ki].name; ki++) {
        const kf_task_kind *tk = &kf_task_kinds[ki];
        if (!((unsigned)spec->tasks & tk->sweep_bit))
            continue;
        if (tk->per_config) {
            k.per_config |= tk->sweep_bit;
            k.nper_config++;
        } else {
            k.per_kernel |= tk->sweep_bit;
            k.nper_kernel++;
        }
    }
    return k;
}

/* Kernel k's reference without its sources: its name, its role, its
 * extension sources, files and Python packages. */
static Kfleet__KernelRef *kernel_ref(const kf_sweep_kernel *k, int problem)
{
    Kfleet__KernelRef *kr = kf_xcalloc(1, sizeof *kr);
    kfleet__kernel_ref__init(kr);
    kr->name = xstrdup(k->name);
    kr->problem = problem;
    kr->candidate = k->candidate != 0;
    if (k->refused)
        kr->refused = xstrdup(k->refused);
    kr->cuda = k->cuda;
    kr->python = k->python;
    if (k->next) {
        kr->extension = kf_xcalloc(k->next, sizeof *kr->extension);
        for (kr->n_extension = 0; kr->n_extension < k->next; kr->n_extension++)
            kr->extension[kr->n_extension] = xstrdup(k->ext[kr->n_extension]);
    }
    if (k->nfiles) {
        kr->files = kf_xcalloc(k->nfiles, sizeof *kr->files);
        for (kr->n_files = 0; kr->n_files < k->nfiles; kr->n_files++)
            kr->files[kr->n_files] = xstrdup(k->files[kr->n_files]);
    }
    for (unsigned b = 0; b < KF_SWEEP_PY_PACKAGES; b++)
        if (k->py_needs & (1u << b)) {
            if (!kr->needs)
                kr->needs = kf_xcalloc(KF_SWEEP_PY_PACKAGES, sizeof *kr->needs);
            kr->needs[kr->n_needs++] = xstrdup(kf_sweep_py_packages[b]);
        }
    return kr;
}

/* Reads kernel k's source and what it brings (headers, or a Python
 * kernel's extension and files), hashes them and puts them in kr. */
static int kernel_sources(const kf_sweep_spec *spec, const kf_sweep_kernel *k,
                          const char *kernels_dir, const kf_buf *abi, Kfleet__KernelRef *kr,
                          kf_err *err)
{
    kf_buf src = KF_BUF_INIT;
    char why[160];
    int rrc = kf_buf_read_file_max(&src, k->path, KF_MAX_SOURCE_FILE, why, sizeof why);
    if (rrc != KF_OK) {
        kf_buf_release(&src);
        return kf_err_set(
            err, rrc == KF_EINVAL ? KF_EINVAL : KF_EIO, "%s:%d:%d: kernel source %s: %s%s",
            spec->file, k->line, k->col, k->path, why,
            rrc == KF_EINVAL ? "; a kernel source is a regular file of at most 4 MiB" : "");
    }
    const char *base = strrchr(k->path, '/');
    base = base ? base + 1 : k->path;
    char srcdir[PATH_MAX];
    /* The directory without its trailing slash ("/" for the root). */
    int dlen = base > k->path ? (int)(base - k->path) - 1 : 0;
    snprintf(srcdir, sizeof srcdir, "%.*s", dlen > 0 ? dlen : (base > k->path ? 1 : 0), k->path);
    if (!srcdir[0])
        snprintf(srcdir, sizeof srcdir, ".");
    char *hnames[KF_MAX_HEADERS + 2 * KF_SWEEP_MAX_EXT];
    kf_buf htexts[KF_MAX_HEADERS + 2 * KF_SWEEP_MAX_EXT];
    size_t nh = 0;
    /* A Python kernel is its module (#include means nothing to it),
     * the sources of its torch extension and its own files. */
    int rc = k->python ? collect_extension(srcdir, k, hnames, htexts, &nh, err)
                       : collect_headers(srcdir, kernels_dir, &src, hnames, htexts, &nh, err);
    if (rc != KF_OK) {
        for (size_t h = 0; h < nh; h++) {
            free(hnames[h]);
            kf_buf_release(&htexts[h]);
        }
        kf_buf_release(&src);
        return rc;
    }
    kr->n_flags = k->nflags;
    kr->flags = kf_xcalloc(k->nflags ? k->nflags : 1, sizeof *kr->flags);
    for (size_t f = 0; f < k->nflags; f++)
        kr->flags[f] = xstrdup(k->flags[f]);
    /* The hash covers what decides the artifact on the coordinator's
     * side: every source byte, the file names and the flags. The agent
     * adds its compiler version and arch to make its cache key. */
    kf_hash_part parts[4 + 2 * (KF_MAX_HEADERS + 2 * KF_SWEEP_MAX_EXT) + 64];
    size_t np = 0;
    parts[np++] = (kf_hash_part){base, strlen(base)};
    parts[np++] = (kf_hash_part){src.data, src.len};
    parts[np++] = (kf_hash_part){"kf_kernel.h", 11};
    parts[np++] = (kf_hash_part){abi->data, abi->len};
    for (size_t h = 0; h < nh; h++) {
        parts[np++] = (kf_hash_part){hnames[h], strlen(hnames[h])};
        parts[np++] = (kf_hash_part){htexts[h].data, htexts[h].len};
    }
    for (size_t f = 0; f < k->nflags && f < 64; f++)
        parts[np++] = (kf_hash_part){k->flags[f], strlen(k->flags[f])};
    /* A KernelBench or GPU MODE file's device is the sweep's, not its
     * source's: a reference computed on the CPU is not one of the GPU. */
    if (k->format != KF_FORMAT_KFLEET)
        parts[np++] = k->cuda ? (kf_hash_part){"format device: cuda", 19}
                              : (kf_hash_part){"format device: cpu", 18};
    /* How the runner draws a KernelBench file's weights decides its
     * references: since they come from KernelBench's seed 42 and no longer
     * from the pool's seed, a reference stored before is another
     * problem's, never reused (agent/runner/pyformats.py). */
    if (k->format == KF_FORMAT_KERNELBENCH)
        parts[np++] = (kf_hash_part){"kernelbench weights: seed 42", 28};
    char hex[65];
    kf_hash_hex(parts, np, hex);
    kr->hash = xstrdup(hex);
    kr->n_sources = 2 + nh;
    kr->sources = kf_xcalloc(2 + nh, sizeof *kr->sources);
    kr->sources[0] = source_file(base, &src);
    kf_buf abicopy = KF_BUF_INIT;
    kf_buf_add(&abicopy, abi->data, abi->len);
    kr->sources[1] = source_file("kf_kernel.h", &abicopy);
    for (size_t h = 0; h < nh; h++) {
        kr->sources[2 + h] = source_file(hnames[h], &htexts[h]);
        free(hnames[h]);
    }
    return KF_OK;
}

/* Kernel i's tasks: a group of its configurations with the kinds asked
 * for, or (none per configuration) a task of each per-kernel kind. */
static void kernel_tasks(Kfleet__SubmitRequest *req, const kf_sweep_kernel *k, size_t i,
                         const asked_kinds *ak)
{
    if (!ak->nper_config) {
        for (size_t ki = 0; kf_task_kinds[ki].name; ki++) {
            if (!(ak->per_kernel & kf_task_kinds[ki].sweep_bit))
                continue;
            Kfleet__Task *t = kf_xcalloc(1, sizeof *t);
            kfleet__task__init(t);
            t->kind = kf_task_kinds[ki].kind;
            t->kernel_index = (uint32_t)i;
            req->tasks[req->n_tasks++] = t;
        }
        return;
    }
    /* The configurations go as axes: the coordinator expands them
     * (TaskGroup), so the request stays small at any size. */
    Kfleet__TaskGroup *g = kf_xcalloc(1, sizeof *g);
    kfleet__task_group__init(g);
    g->kernel_index = (uint32_t)i;
    g->kinds = kf_xcalloc(8, sizeof *g->kinds);
    for (size_t ki = 0; kf_task_kinds[ki].name && g->n_kinds < 8; ki++) {
        const kf_task_kind *tk = &kf_task_kinds[ki];
        if (tk->per_config && (ak->per_config & tk->sweep_bit))
            g->kinds[g->n_kinds++] = (Kfleet__TaskKind)tk->kind;
    }
    g->axes = kf_xcalloc(k->naxes ? k->naxes : 1, sizeof *g->axes);
    for (size_t a = 0; a < k->naxes; a++) {
        Kfleet__Axis *ax = kf_xmalloc(sizeof *ax);
        kfleet__axis__init(ax);
        ax->name = xstrdup(k->axes[a].name);
        ax->n_values = k->axes[a].nvalues;
        ax->values = kf_xcalloc(ax->n_values ? ax->n_values : 1, sizeof *ax->values);
        memcpy(ax->values, k->axes[a].values, ax->n_values * sizeof *ax->values);
        g->axes[g->n_axes++] = ax;
    }
    req->groups[req->n_groups++] = g;
}

int kf_client_build_submit(const kf_sweep_spec *spec, const char *kernels_dir,
                           Kfleet__SubmitRequest **out, kf_err *err)
{
    char abi_path[PATH_MAX + 32];
    snprintf(abi_path, sizeof abi_path, "%s/kf_kernel.h", kernels_dir);
    kf_buf abi = KF_BUF_INIT;
    if (kf_buf_read_file(&abi, abi_path) != KF_OK) {
        kf_buf_release(&abi);
        return kf_err_set(err, KF_EIO, "cannot read the kernel ABI header %s: %s", abi_path,
                          strerror(errno));
    }
    size_t nrefs = spec->nkernels + (spec->problem ? 1 : 0);
    Kfleet__SubmitRequest *req = kf_xcalloc(1, sizeof *req);
    kfleet__submit_request__init(req);
    Kfleet__Sweep *sw = req->sweep = sweep_record(spec, nrefs);
    asked_kinds ak = kinds_asked(spec);
    size_t nk = spec->nkernels ? spec->nkernels : 1;
    req->tasks = kf_xcalloc(nk * (ak.nper_kernel ? ak.nper_kernel : 1), sizeof *req->tasks);
    req->groups = kf_xcalloc(nk, sizeof *req->groups);
    int rc = KF_OK;
    for (size_t i = 0; i < nrefs && rc == KF_OK; i++) {
        const kf_sweep_kernel *k = i < spec->nkernels ? &spec->kernels[i] : spec->problem;
        Kfleet__KernelRef *kr = sw->kernels[i] = kernel_ref(k, i == spec->nkernels);
        rc = kernel_sources(spec, k, kernels_dir, &abi, kr, err);
        if (rc == KF_OK && !kr->problem)
            kernel_tasks(req, k, i, &ak);
    }
    kf_buf_release(&abi);
    if (rc) {
        kf_client_free_submit(&req);
        return rc;
    }
    *out = req;
    return KF_OK;
}

void kf_client_free_submit(Kfleet__SubmitRequest **req)
{
    /* Everything was malloc'd piecewise with the default allocator, which
     * is what free_unpacked releases. */
    if (req && *req) {
        kfleet__submit_request__free_unpacked(*req, NULL);
        *req = NULL;
    }
}
