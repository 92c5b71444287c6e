/* harness — build, validate and profile one task inside a runner process;
 * see harness.h for the frame stream and the cache layout.
 *
 * Build: the sources are written to a scratch dir and compiled by the node's
 * compiler (cc for .c, nvcc for .cu) into a shared object, cached under a
 * key that covers the sources, flags, compiler version and arch — so a
 * second sweep recompiles nothing and a changed header recompiles.
 * Validate: fresh inputs per seed, output poisoned before each run, every
 * element checked finite, max-abs and relative-L2 error against the
 * kernel's own reference, and bitwise determinism across two runs.
 * Profile: warm-up, then timed samples (caches flushed between cold
 * samples) until min samples + min time + noise, or the timeout. Every
 * sample is streamed. Device kernels are timed by the CUDA driver through
 * cudrv (dlopen'd), host kernels by CLOCK_MONOTONIC. */
#include "runner/harness.h"
#include "common/buf.h"
#include "runner/build.h"
#include "runner/cudrv.h"
#include "runner/nvml.h"
#include "common/stats.h"
#include "runner/tools.h"
#include "kf_kernel.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define SAMPLE_BATCH 64

typedef struct hctx {
    const Kfleet__TaskAssign *ta;
    const Kfleet__TaskSpec *spec;
    const char *workdir;
    int out_fd;
    Kfleet__Result *res;
    Kfleet__Sample *pending; /* samples not yet flushed */
    size_t npending;
    uint32_t seq;
    uint64_t last_flush;
    char err[4096];
    kf_cudrv *cu;    /* NULL for host kernels */
    kf_nvml *nv;     /* NULL without NVML */
    size_t tel_sent; /* readings streamed so far (= next seq) */
    uint32_t throttled_samples;
    char uuid[64];
    char sanitizer[4096]; /* the Result's sanitizer verdict */
} hctx;

/* ---- frames ---- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return KF_EIO;
        }
        c += w;
        n -= (size_t)w;
    }
    return KF_OK;
}

int kf_harness_write_frame(int fd, Kfleet__Envelope *env)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    uint8_t len[4] = {(uint8_t)b.len, (uint8_t)(b.len >> 8), (uint8_t)(b.len >> 16),
                      (uint8_t)(b.len >> 24)};
    int rc = write_all(fd, len, 4);
    if (rc == KF_OK)
        rc = write_all(fd, b.data, b.len);
    kf_buf_release(&b);
    return rc;
}

#define TEL_BATCH 128

static int flush_samples(hctx *h)
{
    /* NVML readings ride along with the samples they were taken beside. */
    kf_nvml_reading rd[TEL_BATCH];
    size_t nt = h->nv ? kf_nvml_readings(h->nv, h->tel_sent, rd, TEL_BATCH) : 0;
    if (h->npending == 0 && nt == 0)
        return KF_OK;
    Kfleet__Sample *ptrs[SAMPLE_BATCH];
    for (size_t i = 0; i < h->npending; i++)
        ptrs[i] = &h->pending[i];
    Kfleet__Telemetry tel[TEL_BATCH], *tptrs[TEL_BATCH];
    for (size_t i = 0; i < nt; i++) {
        kfleet__telemetry__init(&tel[i]);
        tel[i].seq = (uint32_t)(h->tel_sent + i);
        tel[i].t_ns = rd[i].wall_ns;
        tel[i].sm_clock_mhz = rd[i].sm_mhz;
        tel[i].mem_clock_mhz = rd[i].mem_mhz;
        tel[i].power_mw = rd[i].power_mw;
        tel[i].temp_c = rd[i].temp_c;
        tel[i].clock_event_reasons = rd[i].reasons;
        tel[i].throttled = rd[i].throttled;
        tptrs[i] = &tel[i];
    }
    h->tel_sent += nt;
    Kfleet__SampleBatch sb = KFLEET__SAMPLE_BATCH__INIT;
    sb.task_id = h->ta->task_id;
    sb.attempt = h->ta->attempt;
    sb.n_samples = h->npending;
    sb.samples = ptrs;
    sb.n_telemetry = nt;
    sb.telemetry = tptrs;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_SAMPLES;
    env.samples = &sb;
    h->npending = 0;
    h->last_flush = kf_mono_ns();
    return kf_harness_write_frame(h->out_fd, &env);
}

static int add_sample(hctx *h, double seconds, int throttled)
{
    Kfleet__Sample *s = &h->pending[h->npending++];
    kfleet__sample__init(s);
    s->seq = h->seq++;
    s->seconds = seconds;
    s->t_ns = kf_now_ns();
    s->throttled = throttled;
    if (h->npending == SAMPLE_BATCH || kf_mono_ns() - h->last_flush > 100000000ull)
        return flush_samples(h);
    return KF_OK;
}

static int fail(hctx *h, int state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(hctx *h, int state, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
    h->res->state = (Kfleet__TaskState)state;
    h->res->error = h->err;
    return -1;
}

/* ---- build ---- */

/* The first `lines` lines of text, for an error message. */
static void first_lines(const char *text, int lines, char *out, size_t len)
{
    size_t i = 0;
    int n = 0;
    while (text[i] && n < lines) {
        if (text[i] == '\n')
            n++;
        i++;
    }
    if (i >= len)
        i = len - 1;
    memcpy(out, text, i);
    out[i] = '\0';
}

/* Fills the wire BuildInfo from build.c's record; strings point into `b`,
 * which outlives the Result frame. */
static void build_to_wire(const kf_build_info *b, Kfleet__BuildInfo *bi)
{
    bi->cached = b->cached;
    bi->compile_s = b->compile_s;
    bi->compiler = (char *)b->compiler;
    bi->artifact_hash = (char *)b->artifact_hash;
    bi->warnings = b->log.data ? b->log.data : "";
    bi->registers = b->registers;
    bi->shared_bytes = b->shared_bytes;
    bi->stack_bytes = b->stack_bytes;
    bi->spill_bytes = b->spill_bytes;
    bi->sass_archs = (char *)b->sass_archs;
    bi->has_ptx = b->has_ptx;
    bi->jit_fallback = b->jit_fallback;
    bi->nvcc_cuda = (char *)b->nvcc_cuda;
    bi->driver_cuda = (char *)b->driver_cuda;
}

static int do_build(hctx *h, Kfleet__BuildInfo *bi, kf_build_info *b)
{
    char scratch[PATH_MAX];
    snprintf(scratch, sizeof scratch, "%s/tmp/build-%llx-%u", h->workdir,
             (unsigned long long)h->ta->task_id, h->ta->attempt);
    kf_err err;
    int rc = kf_build_kernel(h->spec, h->workdir, scratch, b, &err);
    build_to_wire(b, bi);
    if (rc == KF_OK)
        return 0;
    if (b->rejected && b->log.data) {
        char lines[3000];
        first_lines(b->log.data, 20, lines, sizeof lines);
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s:\n%s", err.msg, lines);
    }
    return fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
}

/* ---- loading and driving a kernel ---- */

typedef struct loaded {
    void *dl;
    const kf_kernel *k;
    kf_params params;
} loaded;

static int load_kernel(hctx *h, loaded *L)
{
    char key[65], so[PATH_MAX];
    kf_err berr;
    if (kf_build_artifact(h->workdir, h->spec->kernel_hash, h->spec->device_cuda, key, so,
                          sizeof so, &berr) != KF_OK)
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s", berr.msg);
    if (access(so, R_OK) != 0)
        return fail(h, KFLEET__TASK_STATE__FAILED,
                    "artifact %s of kernel %s not in cache; the build must run first", key,
                    h->spec->kernel);
    L->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!L->dl)
        return fail(h, KFLEET__TASK_STATE__FAILED, "cannot load %s: %s", so, dlerror());
    kf_kernel_get_fn get = (kf_kernel_get_fn)dlsym(L->dl, KF_KERNEL_SYMBOL);
    if (!get)
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s does not define %s()", so, KF_KERNEL_SYMBOL);
    L->k = get();
    if (!L->k || L->k->abi_version != KF_KERNEL_ABI_VERSION)
        return fail(h, KFLEET__TASK_STATE__FAILED, "kernel ABI version %u, this agent speaks %d",
                    L->k ? L->k->abi_version : 0, KF_KERNEL_ABI_VERSION);
    if (!L->k->setup || !L->k->run || !L->k->output || !L->k->reference || !L->k->teardown)
        return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s lacks a required callback",
                    h->spec->kernel);
    L->params.count = 0;
    for (size_t i = 0; i < h->spec->n_params && i < KF_KERNEL_MAX_PARAMS; i++) {
        L->params.names[L->params.count] = h->spec->params[i]->name;
        L->params.values[L->params.count++] = h->spec->params[i]->value;
    }
    if (h->spec->device_cuda) {
        kf_err err;
        if (kf_cudrv_open(&h->cu, &err) != KF_OK)
            return fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    }
    return 0;
}

static size_t dtype_size(kf_dtype t)
{
    switch (t) {
    case KF_DTYPE_F64:
        return 8;
    case KF_DTYPE_F16:
    case KF_DTYPE_BF16:
        return 2;
    default:
        return 4;
    }
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double elem(const void *data, kf_dtype t, size_t i)
{
    switch (t) {
    case KF_DTYPE_F64:
        return ((const double *)data)[i];
    case KF_DTYPE_I32:
        return ((const int32_t *)data)[i];
    case KF_DTYPE_F16:
        return half_to_double(((const uint16_t *)data)[i]);
    case KF_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default:
        return ((const float *)data)[i];
    }
}

/* Copies the kernel's output to host memory (a device view is fetched
 * through the driver). The caller frees *host when *owned. */
static int fetch_output(hctx *h, const kf_view *v, void **host, int *owned)
{
    if (v->location == KF_LOC_HOST) {
        *host = v->data;
        *owned = 0;
        return 0;
    }
    if (!h->cu)
        return fail(h, KFLEET__TASK_STATE__FAILED, "a device output from a host kernel");
    size_t n = v->count * dtype_size(v->dtype);
    *host = malloc(n ? n : 1);
    if (!*host)
        return fail(h, KFLEET__TASK_STATE__FAILED, "out of memory for %zu output bytes", n);
    *owned = 1;
    kf_err err;
    if (kf_cudrv_copy_to_host(h->cu, *host, v->data, n, &err) != KF_OK) {
        free(*host);
        *host = NULL;
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    }
    return 0;
}

static int poison(hctx *h, const kf_view *v)
{
    size_t n = v->count * dtype_size(v->dtype);
    if (v->location == KF_LOC_HOST) {
        memset(v->data, 0xFF, n);
        return 0;
    }
    kf_err err;
    if (kf_cudrv_memset(h->cu, v->data, 0xFF, n, &err) != KF_OK)
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    return 0;
}

/* Runs the kernel once and waits for it; device errors (an illegal address,
 * a trap) surface here with the driver's name for them. */
static int run_once(hctx *h, const loaded *L, void *state)
{
    char kerr[512] = "";
    if (L->k->run(state, kerr, sizeof kerr) != 0)
        return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s failed: %s", h->spec->kernel, kerr);
    if (h->cu) {
        kf_err err;
        if (kf_cudrv_sync(h->cu, &err) != KF_OK)
            return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s: %s", h->spec->kernel, err.msg);
    }
    return 0;
}

static int do_setup(hctx *h, const loaded *L, uint64_t seed, void **state)
{
    char kerr[512] = "";
    *state = NULL;
    if (L->k->setup(state, &L->params, seed, kerr, sizeof kerr) != 0)
        return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s setup (seed %llu) failed: %s",
                    h->spec->kernel, (unsigned long long)seed, kerr);
    if (h->cu) {
        kf_err err;
        if (kf_cudrv_sync(h->cu, &err) != KF_OK)
            return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s setup: %s", h->spec->kernel,
                        err.msg);
    }
    return 0;
}

/* ---- under NVIDIA's tools ---- */

/* The nested run a tool watches: set up, then `runs` launches (each
 * synchronised) inside the profiler range, nothing timed or streamed. */
static int do_nested(hctx *h, const loaded *L, unsigned runs)
{
    void *state = NULL;
    kf_err err;
    int rc = do_setup(h, L, 1, &state);
    if (rc == 0)
        rc = run_once(h, L, state); /* warm-up: module load stays out of the metrics */
    if (rc == 0 && h->cu && kf_cudrv_profiler(h->cu, 1, &err) != KF_OK)
        rc = fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    for (unsigned i = 0; rc == 0 && i < runs; i++)
        rc = run_once(h, L, state);
    if (h->cu)
        kf_cudrv_profiler(h->cu, 0, &err);
    L->k->teardown(state);
    return rc;
}

/* The last `lines` lines of a file, for a verdict or an error. */
static void tail_lines(const char *path, int lines, char *out, size_t len)
{
    kf_buf b = KF_BUF_INIT;
    out[0] = '\0';
    if (kf_buf_read_file(&b, path) != KF_OK || !b.data) {
        kf_buf_release(&b);
        return;
    }
    size_t i = b.len;
    while (i > 0 && (b.data[i - 1] == '\n' || b.data[i - 1] == ' '))
        i--;
    size_t end = i;
    for (int n = 0; i > 0; i--)
        if (b.data[i - 1] == '\n' && ++n == lines)
            break;
    snprintf(out, len, "%.*s", (int)(end - i), b.data + i);
    kf_buf_release(&b);
}

/* ncu on the nested run; the metrics go into the Result. */
static int do_ncu(hctx *h)
{
    const Kfleet__MeasureSettings *m = h->spec->measure;
    char ncu[PATH_MAX], log[PATH_MAX + 32];
    if (!kf_tools_find("ncu", ncu, sizeof ncu))
        return fail(h, KFLEET__TASK_STATE__FAILED,
                    "the sweep asks for ncu metrics but Nsight Compute (ncu) is not on this "
                    "node; install it with the CUDA toolkit or drop measure.ncu");
    kf_buf metrics = KF_BUF_INIT;
    for (size_t i = 0; i < m->n_ncu_metrics; i++)
        kf_buf_addf(&metrics, "%s%s", i ? "," : "", m->ncu_metrics[i]);
    snprintf(log, sizeof log, "%s/tmp/ncu-%llx-%u.csv", h->workdir,
             (unsigned long long)h->ta->task_id, h->ta->attempt);
    char *argv[] = {ncu,
                    "--clock-control",
                    "none",
                    "--profile-from-start",
                    "off",
                    "--metrics",
                    metrics.data,
                    "--csv",
                    "--print-units",
                    "base",
                    "--log-file",
                    log,
                    "--target-processes",
                    "all"};
    int st = 0;
    kf_err err;
    int rc =
        kf_tools_run_nested(NULL, h->workdir, h->ta, argv, sizeof argv / sizeof *argv, &st, &err);
    kf_buf_release(&metrics);
    if (rc != KF_OK)
        return fail(h, KFLEET__TASK_STATE__FAILED, "ncu: %s", err.msg);
    kf_buf text = KF_BUF_INIT;
    kf_buf_read_file(&text, log);
    Kfleet__Metric **mv = NULL;
    size_t n = 0;
    rc = st == 0 ? kf_tools_parse_ncu_csv(text.data, KF_TOOLS_NCU_RUNS, &mv, &n, &err) : KF_EIO;
    kf_buf_release(&text);
    if (rc != KF_OK) {
        char tail[1500];
        tail_lines(log, 8, tail, sizeof tail);
        return fail(h, KFLEET__TASK_STATE__FAILED, "ncu (exit %d): %s\n%s", st,
                    st == 0 ? err.msg : "the profiled run failed", tail);
    }
    h->res->ncu = mv;
    h->res->n_ncu = n;
    return 0;
}

/* memcheck, then racecheck, on the nested run; the verdict is stored, and
 * an error either tool finds fails the validation. */
static int do_sanitize(hctx *h)
{
    static const char *const tools[] = {"memcheck", "racecheck"};
    char cs[PATH_MAX], log[PATH_MAX + 32];
    if (!kf_tools_find("compute-sanitizer", cs, sizeof cs))
        return fail(h, KFLEET__TASK_STATE__FAILED,
                    "the sweep asks for sanitize but compute-sanitizer is not on this node; "
                    "install it with the CUDA toolkit or drop measure.sanitize");
    kf_buf verdict = KF_BUF_INIT;
    int bad = 0;
    for (size_t t = 0; t < 2; t++) {
        snprintf(log, sizeof log, "%s/tmp/sanitize-%s-%llx-%u.log", h->workdir, tools[t],
                 (unsigned long long)h->ta->task_id, h->ta->attempt);
        char *argv[] = {cs,           "--tool", (char *)tools[t], "--error-exitcode", "97",
                        "--log-file", log};
        int st = 0;
        kf_err err;
        if (kf_tools_run_nested(NULL, h->workdir, h->ta, argv, sizeof argv / sizeof *argv, &st,
                                &err)) {
            kf_buf_release(&verdict);
            return fail(h, KFLEET__TASK_STATE__FAILED, "compute-sanitizer: %s", err.msg);
        }
        char tail[1200];
        tail_lines(log, st == 0 ? 1 : 12, tail, sizeof tail);
        kf_buf_addf(&verdict, "%s%s: %s%s", t ? "\n" : "", tools[t],
                    st == 0    ? "clean"
                    : st == 97 ? "ERRORS"
                               : "run failed",
                    st ? "\n" : " — ");
        kf_buf_addf(&verdict, "%s", tail);
        bad |= st != 0;
    }
    snprintf(h->sanitizer, sizeof h->sanitizer, "%s", verdict.data);
    kf_buf_release(&verdict);
    h->res->sanitizer = h->sanitizer;
    if (bad)
        return fail(h, KFLEET__TASK_STATE__FAILED, "compute-sanitizer found errors:\n%s",
                    h->sanitizer);
    return 0;
}

/* ---- validate ---- */

static int do_validate(hctx *h, const loaded *L)
{
    const Kfleet__MeasureSettings *m = h->spec->measure;
    uint32_t seeds = m && m->validate_seeds ? m->validate_seeds : KF_DEFAULT_SEEDS;
    Kfleet__ValidateTrial **trials = calloc(seeds, sizeof *trials);
    if (!trials)
        return fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    h->res->trials = trials;
    int all_pass = 1;
    char first_bad[1024] = "";
    void *first_out = NULL;
    size_t first_bytes = 0;
    for (uint32_t s = 0; s < seeds; s++) {
        /* Seeds differ per trial and per task, so no two validations share inputs. */
        uint64_t seed = (h->ta->task_id * 0x9E3779B97F4A7C15ull) ^ (0xA5A5ull + s * 7919ull);
        void *state = NULL;
        if (do_setup(h, L, seed, &state) != 0) {
            L->k->teardown(state);
            return -1;
        }
        kf_view v = {0};
        if (L->k->output(state, &v) != 0 || !v.data || v.count == 0) {
            L->k->teardown(state);
            return fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s has no output view",
                        h->spec->kernel);
        }
        double *ref = malloc(v.count * sizeof *ref);
        void *out = NULL;
        int owned = 0;
        char kerr[512] = "";
        int rc = ref ? poison(h, &v) : fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
        if (rc == 0)
            rc = run_once(h, L, state);
        if (rc == 0)
            rc = fetch_output(h, &v, &out, &owned);
        if (rc == 0 && L->k->reference(state, ref, kerr, sizeof kerr) != 0)
            rc = fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s reference failed: %s",
                      h->spec->kernel, kerr);
        if (rc != 0) {
            free(ref);
            if (owned)
                free(out);
            L->k->teardown(state);
            return -1;
        }
        uint64_t nonfinite = 0;
        double max_abs = 0, diff2 = 0, ref2 = 0;
        for (size_t i = 0; i < v.count; i++) {
            double o = elem(out, v.dtype, i);
            if (!isfinite(o)) {
                nonfinite++;
                continue;
            }
            double d = fabs(o - ref[i]);
            if (d > max_abs)
                max_abs = d;
            diff2 += d * d;
            ref2 += ref[i] * ref[i];
        }
        double rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
        Kfleet__ValidateTrial *t = malloc(sizeof *t);
        kfleet__validate_trial__init(t);
        t->seed = seed;
        t->max_abs_err = max_abs;
        t->rel_err = rel;
        t->nonfinite = nonfinite;
        t->passed = nonfinite == 0 && max_abs <= L->k->tol_abs && rel <= L->k->tol_rel;
        h->res->tol_abs = L->k->tol_abs;
        h->res->tol_rel = L->k->tol_rel;
        trials[h->res->n_trials++] = t;
        if (!t->passed && all_pass) {
            all_pass = 0;
            snprintf(first_bad, sizeof first_bad,
                     "validation failed (seed %llu): %llu non-finite or unwritten elements of "
                     "%zu, max abs error %.3g (tolerance %.3g), relative error %.3g (tolerance "
                     "%.3g)",
                     (unsigned long long)seed, (unsigned long long)nonfinite, v.count, max_abs,
                     L->k->tol_abs, rel, L->k->tol_rel);
        }
        /* Determinism: the first seed runs a second time on the same inputs. */
        if (s == 0) {
            first_bytes = v.count * dtype_size(v.dtype);
            first_out = malloc(first_bytes ? first_bytes : 1);
            if (first_out)
                memcpy(first_out, out, first_bytes);
            void *out2 = NULL;
            int owned2 = 0;
            if (first_out && poison(h, &v) == 0 && run_once(h, L, state) == 0 &&
                fetch_output(h, &v, &out2, &owned2) == 0) {
                h->res->deterministic = memcmp(first_out, out2, first_bytes) == 0;
                if (owned2)
                    free(out2);
            } else {
                free(ref);
                free(first_out);
                if (owned)
                    free(out);
                L->k->teardown(state);
                return -1;
            }
        }
        free(ref);
        if (owned)
            free(out);
        L->k->teardown(state);
    }
    free(first_out);
    if (!all_pass)
        return fail(h, KFLEET__TASK_STATE__FAILED, "%s", first_bad);
    if (L->k->deterministic && !h->res->deterministic)
        return fail(h, KFLEET__TASK_STATE__FAILED,
                    "kernel %s says it is deterministic but two runs on the same inputs "
                    "differ bitwise",
                    h->spec->kernel);
    return 0;
}

/* ---- profile ---- */

/* The robust noise of the samples so far (1.4826 MAD / median, percent, as
 * common/stats.h defines it) and the timer's quantum in the same units:
 * the smallest gap between two distinct sample values. CUDA events tick
 * in 32 ns steps, so a 15 us kernel's noise estimate moves by ~0.3 % per
 * tick of its MAD; the settling test below must not ask for less. */
static void noise_of(const double *v, size_t n, double *noise, double *quantum_pct)
{
    *noise = INFINITY;
    *quantum_pct = 0;
    double *s = n >= 2 ? malloc(n * sizeof *s) : NULL;
    if (!s)
        return;
    memcpy(s, v, n * sizeof *s);
    kf_stats_sort(s, n);
    double med = kf_stats_quantile(s, n, 0.5), gap = INFINITY;
    for (size_t i = 1; i < n; i++)
        if (s[i] > s[i - 1] && s[i] - s[i - 1] < gap)
            gap = s[i] - s[i - 1];
    if (med > 0) {
        *noise = 1.4826 * kf_stats_mad(s, n) / med * 100.0;
        *quantum_pct = isfinite(gap) ? 1.4826 * gap / med * 100.0 : 0;
    }
    free(s);
}

/* The stored summary, from the same statistics the report recomputes. */
static void stats(const double *v, size_t n, Kfleet__ProfileStats *ps)
{
    kf_stats st;
    if (kf_stats_compute(v, n, &st) != KF_OK)
        return;
    ps->samples = (uint32_t)n;
    ps->median_s = st.median;
    ps->mean_s = st.mean;
    ps->min_s = st.min;
    ps->max_s = st.max;
    ps->stddev_s = isfinite(st.stddev) ? st.stddev : 0;
    ps->noise_pct = st.noise_pct;
}

/* NVML at 20 Hz beside the profile; without NVML the profile still runs,
 * with no telemetry and nothing flagged (the summary says 0 readings). */
static void start_telemetry(hctx *h)
{
    kf_err err;
    if (kf_cudrv_uuid(h->cu, h->uuid, sizeof h->uuid) != KF_OK) {
        fprintf(stderr, "runner: no GPU UUID from the driver: no telemetry\n");
        return;
    }
    if (kf_nvml_open(h->uuid, &h->nv, &err) != KF_OK) {
        fprintf(stderr, "runner: %s: no telemetry\n", err.msg);
        return;
    }
    if (kf_nvml_start(h->nv, 50, &err) != KF_OK) {
        fprintf(stderr, "runner: %s\n", err.msg);
        kf_nvml_close(&h->nv);
    }
}

/* Streams what the sampler read after the last sample batch. */
static int drain_telemetry(hctx *h)
{
    while (h->nv) {
        kf_nvml_reading one;
        if (kf_nvml_readings(h->nv, h->tel_sent, &one, 1) == 0)
            return KF_OK;
        int rc = flush_samples(h);
        if (rc != KF_OK)
            return rc;
    }
    return KF_OK;
}

static void minmax(uint32_t *lo, uint32_t *hi, uint32_t v)
{
    if (v < *lo)
        *lo = v;
    if (v > *hi)
        *hi = v;
}

static void summarize_telemetry(hctx *h, Kfleet__TelemetrySummary *ts)
{
    ts->gpu_uuid = h->uuid;
    kf_nvml_reading r[256];
    size_t from = 0, k;
    uint64_t first = 0, last = 0;
    while (h->nv && (k = kf_nvml_readings(h->nv, from, r, 256)) > 0) {
        for (size_t i = 0; i < k; i++) {
            if (ts->readings == 0) {
                ts->sm_clock_min_mhz = ts->sm_clock_max_mhz = r[i].sm_mhz;
                ts->mem_clock_min_mhz = ts->mem_clock_max_mhz = r[i].mem_mhz;
                first = r[i].mono_ns;
            }
            minmax(&ts->sm_clock_min_mhz, &ts->sm_clock_max_mhz, r[i].sm_mhz);
            minmax(&ts->mem_clock_min_mhz, &ts->mem_clock_max_mhz, r[i].mem_mhz);
            if (r[i].power_mw > ts->power_max_mw)
                ts->power_max_mw = r[i].power_mw;
            if (r[i].temp_c > ts->temp_max_c)
                ts->temp_max_c = r[i].temp_c;
            ts->reasons_seen |= r[i].reasons;
            ts->throttled_readings += (uint32_t)r[i].throttled;
            ts->readings++;
            last = r[i].mono_ns;
        }
        from += k;
    }
    ts->period_s = ts->readings > 1 ? (double)(last - first) / 1e9 / (ts->readings - 1) : 0;
}

#define NOISE_HIST 20
#define KF_MAX_INPUT_SETS 16

/* The host's largest cache level, for hot-sample input rotation. */
static size_t host_cache_bytes(void)
{
    long c = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (c <= 0)
        c = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return c > 0 ? (size_t)c : 32u << 20;
}

/* Whether the last NOISE_HIST noise estimates agree within 5 % of their
 * mean, or within two timer quanta when those are wider: the estimate has
 * settled. */
static int noise_settled(const double *hist, double quantum_pct)
{
    double lo = hist[0], hi = hist[0], sum = 0;
    for (size_t i = 0; i < NOISE_HIST; i++) {
        lo = hist[i] < lo ? hist[i] : lo;
        hi = hist[i] > hi ? hist[i] : hi;
        sum += hist[i];
    }
    return hi - lo <= fmax(0.05 * sum / NOISE_HIST, 2 * quantum_pct);
}

static int do_profile(hctx *h, const loaded *L, Kfleet__ProfileStats *ps)
{
    const Kfleet__MeasureSettings *m = h->spec->measure;
    uint32_t min_samples = m && m->min_samples ? m->min_samples : KF_DEFAULT_MIN_SAMPLES;
    double min_time = m && m->min_time_s > 0 ? m->min_time_s : KF_DEFAULT_MIN_TIME_S;
    double max_noise = m && m->max_noise_pct > 0 ? m->max_noise_pct : KF_DEFAULT_MAX_NOISE_PCT;
    double timeout = m && m->timeout_s > 0 ? m->timeout_s : KF_DEFAULT_TIMEOUT_S;
    uint32_t warmup = m && m->warmup ? m->warmup : 1;
    uint32_t batch = m && m->batch > 1 ? m->batch : 1;
    int hot = m && m->hot;
    /* Hot samples of a kernel whose working set fits in the cache would
     * time the cache holding the last sample's data: rotate among input
     * sets (different seeds) that together are twice the cache. Cold
     * samples need none: the flush evicts everything first. */
    void *states[KF_MAX_INPUT_SETS] = {NULL};
    size_t nsets = 1;
    double wbytes = L->k->bytes ? L->k->bytes(&L->params) : 0;
    size_t cache = h->cu ? kf_cudrv_l2_bytes(h->cu) : host_cache_bytes();
    if (hot && wbytes > 0 && wbytes < (double)cache) {
        nsets = (size_t)ceil(2.0 * (double)cache / wbytes);
        nsets = nsets > KF_MAX_INPUT_SETS ? KF_MAX_INPUT_SETS : nsets;
    }
    for (size_t i = 0; i < nsets; i++) {
        if (do_setup(h, L, 1 + i, &states[i]) != 0) {
            for (size_t j = 0; j <= i; j++)
                L->k->teardown(states[j]);
            return -1;
        }
    }
    for (uint32_t i = 0; i < warmup * nsets; i++) {
        if (run_once(h, L, states[i % nsets]) != 0) {
            for (size_t j = 0; j < nsets; j++)
                L->k->teardown(states[j]);
            return -1;
        }
    }
    /* Cold samples: write a buffer of twice the private cache between runs
     * (L2 on the device; per-core L2 on the host — a VM's shared LLC of
     * hundreds of MB would make per-sample flushing dominate the run). */
    size_t flush_n = 0;
    char *flush = NULL;
    if (!hot && !h->cu) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        flush_n = 2 * (size_t)(l2 > 0 ? l2 : 4 << 20);
        flush = malloc(flush_n);
    }
    if (h->cu)
        start_telemetry(h);
    size_t cap = 1024, n = 0;
    double *times = malloc(cap * sizeof *times);
    uint64_t start = kf_mono_ns();
    double elapsed = 0, total_timed = 0;
    int converged = 0, rc = 0;
    double hist[NOISE_HIST];
    size_t nhist = 0, next_check = 0;
    while (times) {
        void *state = states[n % nsets];
        if (flush) {
            memset(flush, (int)(n & 0xFF), flush_n);
            __asm__ volatile("" : : "r"(flush) : "memory");
        }
        double secs = 0;
        int throttled = 0;
        if (h->cu) {
            kf_err err;
            kf_cudrv_timing tm;
            uint64_t t0 = kf_mono_ns();
            if (kf_cudrv_time(h->cu, hot, batch, L->k->run, state, &tm, &err) != KF_OK) {
                rc = fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s: %s", h->spec->kernel, err.msg);
                break;
            }
            secs = tm.seconds;
            throttled = h->nv && kf_nvml_throttled(h->nv, t0, kf_mono_ns());
            h->throttled_samples += (uint32_t)throttled;
        } else {
            uint64_t t0 = kf_mono_ns();
            char kerr[512] = "";
            for (uint32_t b = 0; b < batch; b++) {
                if (L->k->run(state, kerr, sizeof kerr) != 0) {
                    rc = fail(h, KFLEET__TASK_STATE__FAILED, "kernel %s failed: %s",
                              h->spec->kernel, kerr);
                    break;
                }
            }
            if (rc)
                break;
            secs = (double)(kf_mono_ns() - t0) / 1e9 / batch;
        }
        if (n == cap) {
            cap *= 2;
            double *nt = realloc(times, cap * sizeof *times);
            if (!nt)
                break;
            times = nt;
        }
        times[n++] = secs;
        total_timed += secs * batch;
        if (add_sample(h, secs, throttled) != KF_OK) {
            rc = fail(h, KFLEET__TASK_STATE__FAILED, "cannot stream samples to the agent");
            break;
        }
        elapsed = (double)(kf_mono_ns() - start) / 1e9;
        /* The noise check sorts: do it at most ~every 1% of the samples.
         * (As `n % (1 + n / 100) == 0` it never fired again past 10,000
         * samples, so short kernels always ran to the timeout.) */
        if (n >= min_samples && total_timed >= min_time && n >= next_check) {
            next_check = n + 1 + n / 100;
            double noise, quantum;
            noise_of(times, n, &noise, &quantum);
            if (noise <= max_noise) {
                converged = 1;
                break;
            }
            /* As nvbench's stdrel criterion: when the noise estimate has
             * stopped moving, more samples will not bring it under the
             * limit — they only heat the GPU into its power cap. Stop,
             * flagged noisy (not converged), instead of running to the
             * timeout. */
            hist[nhist++ % NOISE_HIST] = noise;
            if (nhist >= NOISE_HIST && total_timed >= 2 * min_time && noise_settled(hist, quantum))
                break;
        }
        if (elapsed >= timeout)
            break;
    }
    free(flush);
    if (h->nv)
        kf_nvml_stop(h->nv);
    if (rc == 0 && (flush_samples(h) != KF_OK || drain_telemetry(h) != KF_OK))
        rc = fail(h, KFLEET__TASK_STATE__FAILED, "cannot stream samples to the agent");
    if (rc == 0 && n > 0) {
        stats(times, n, ps);
        ps->converged = converged;
        ps->bytes = L->k->bytes ? L->k->bytes(&L->params) : 0;
        ps->flops = L->k->flops ? L->k->flops(&L->params) : 0;
        ps->hot = hot;
        ps->batch = batch;
        ps->input_sets = (uint32_t)nsets;
    }
    free(times);
    for (size_t i = 0; i < nsets; i++)
        L->k->teardown(states[i]);
    return rc;
}

/* ---- entry points ---- */

int kf_harness_run(const Kfleet__TaskAssign *ta, const char *workdir, int out_fd)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    kf_build_info binfo = {0};
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    Kfleet__TelemetrySummary tsum = KFLEET__TELEMETRY_SUMMARY__INIT;
    Kfleet__Sample pending[SAMPLE_BATCH];
    hctx h = {0};
    h.ta = ta;
    h.spec = ta->spec;
    h.workdir = workdir;
    h.out_fd = out_fd;
    h.res = &res;
    h.pending = pending;
    h.last_flush = kf_mono_ns();
    res.task_id = ta->task_id;
    res.attempt = ta->attempt;
    res.state = KFLEET__TASK_STATE__SUCCEEDED;
    uint64_t t0 = kf_mono_ns();
    loaded L = {0};
    if (!h.spec) {
        fail(&h, KFLEET__TASK_STATE__FAILED, "task without a spec");
    } else if (h.spec->kind == KFLEET__TASK_KIND__BUILD) {
        res.build = &bi;
        do_build(&h, &bi, &binfo);
    } else if (h.spec->kind == KFLEET__TASK_KIND__VALIDATE ||
               h.spec->kind == KFLEET__TASK_KIND__PROFILE) {
        const Kfleet__MeasureSettings *ms = h.spec->measure;
        if (load_kernel(&h, &L) != 0) {
            /* the Result says why */
        } else if (h.spec->ncu_pass) {
            do_nested(&h, &L, h.spec->kind == KFLEET__TASK_KIND__PROFILE ? KF_TOOLS_NCU_RUNS : 1);
        } else if (h.spec->kind == KFLEET__TASK_KIND__VALIDATE) {
            if (do_validate(&h, &L) == 0 && ms && ms->sanitize)
                do_sanitize(&h);
        } else {
            res.profile = &ps;
            if (do_profile(&h, &L, &ps) == 0 && ms && ms->n_ncu_metrics > 0)
                do_ncu(&h);
            if (h.cu) {
                summarize_telemetry(&h, &tsum);
                res.telemetry = &tsum;
                res.throttled_samples = h.throttled_samples;
                res.gpu_uuid = h.uuid;
            }
        }
    } else {
        fail(&h, KFLEET__TASK_STATE__FAILED, "unsupported task kind %d", h.spec->kind);
    }
    res.elapsed_s = (double)(kf_mono_ns() - t0) / 1e9;
    res.sample_count = h.seq;
    res.finished_ns = kf_now_ns();
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    int rc = kf_harness_write_frame(out_fd, &env);
    for (size_t i = 0; i < res.n_trials; i++)
        free(res.trials[i]);
    free(res.trials);
    kf_tools_free_metrics(res.ncu, res.n_ncu);
    kf_build_info_release(&binfo);
    kf_nvml_close(&h.nv);
    kf_cudrv_close(&h.cu);
    /* The kernel's library stays loaded: the runner exits right after, and
     * unloading a CUDA library with live runtime state can crash at exit. */
    return rc;
}

int kf_runner_main(const char *workdir)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    kf_buf in = KF_BUF_INIT;
    char buf[65536];
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0)
        kf_buf_add(&in, buf, (size_t)n);
    Kfleet__TaskAssign *ta = kfleet__task_assign__unpack(NULL, in.len, (const uint8_t *)in.data);
    kf_buf_release(&in);
    if (!ta) {
        fprintf(stderr, "runner: the task on stdin does not decode\n");
        return 1;
    }
    int rc = kf_harness_run(ta, workdir, 1);
    kfleet__task_assign__free_unpacked(ta, NULL);
    return rc == KF_OK ? 0 : 1;
}
