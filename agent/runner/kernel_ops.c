/* kernel_ops — the runner's common ground (hctx.h): the frame stream back
 * to the agent (samples in batches, with the NVML readings taken meanwhile),
 * ending a task with its reason, and loading and driving a kernel: setup
 * from a seed, one run waited for (device faults surface with the driver's
 * name), the output view fetched to the host, poisoned before a run. */
#include "runner/hctx.h"
#include "runner/compare.h"
#include "runner/harness.h"
#include "common/taskkind.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/wire.h"
#include "runner/build.h"
#include "runner/pyext.h"
#include "runner/pyfiles.h"
#include "runner/pykernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <unistd.h>

int kf_harness_write_frame(int fd, Kfleet__Envelope *env)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    uint8_t len[4];
    kf_frame_len_put(len, (uint32_t)b.len);
    int rc = kf_write_all(fd, len, 4);
    if (rc == KF_OK)
        rc = kf_write_all(fd, b.data, b.len);
    kf_buf_release(&b);
    return rc;
}

#define TEL_BATCH 128

int hctx_flush_samples(hctx *h)
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

int hctx_add_sample(hctx *h, double seconds, uint32_t input_set, int throttled, int discarded,
                    uint32_t sm_mhz, uint32_t power_mw)
{
    Kfleet__Sample *s = &h->pending[h->npending++];
    kfleet__sample__init(s);
    s->seq = h->seq++;
    s->seconds = seconds;
    s->input_set = input_set;
    s->t_ns = kf_now_ns();
    s->throttled = throttled;
    s->discarded = discarded == HCTX_SAMPLE_THROTTLED;
    s->audit = discarded == HCTX_SAMPLE_AUDIT;
    s->sm_clock_mhz = sm_mhz;
    s->power_mw = power_mw;
    if (h->npending == SAMPLE_BATCH || kf_mono_ns() - h->last_flush > 100000000ull)
        return hctx_flush_samples(h);
    return KF_OK;
}

int hctx_fail(hctx *h, int state, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
    h->res->state = (Kfleet__TaskState)state;
    h->res->error = h->err;
    return -1;
}

const char *hctx_who(const hctx *h)
{
    if (kf_task_kind_at(h->spec->kind)->references)
        return "problem";
    return h->spec->problem_hash && *h->spec->problem_hash ? "candidate" : "kernel";
}

const char *hctx_problem_of(const hctx *h, char *buf, size_t len)
{
    if (!(h->spec->problem_kernel && *h->spec->problem_kernel) || strcmp(hctx_who(h), "candidate"))
        return "";
    snprintf(buf, len, " of problem %s", h->spec->problem_kernel);
    return buf;
}

void hctx_set_params(const hctx *h, loaded *L)
{
    L->params.count = 0;
    for (size_t i = 0; i < h->spec->n_params && i < KF_KERNEL_MAX_PARAMS; i++) {
        L->params.names[L->params.count] = h->spec->params[i]->name;
        L->params.values[L->params.count++] = h->spec->params[i]->value;
    }
}

int hctx_load_kernel(hctx *h, loaded *L)
{
    char key[65], so[PATH_MAX];
    kf_err berr;
    /* A problem (a reference task's, or the one a candidate is judged by)
     * needs no run(): its candidates bring the computation. */
    int problem = h->loading_problem || kf_task_kind_at(h->spec->kind)->references;
    if (kf_build_artifact(h->workdir, h->spec->kernel_hash, kf_build_lang(h->spec), key, so,
                          sizeof so, &berr) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", berr.msg);
    if (access(so, R_OK) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "artifact %s of kernel %s not in cache; the build must run first", key,
                         h->spec->kernel);
    if (h->spec->python) {
        const kf_pyenv *py;
        char file[256], perr[HCTX_KERR_LEN], ext[PATH_MAX] = "", mod[256] = "",
                                             files[PATH_MAX] = "";
        kf_pyenv_get(&py, NULL); /* memoized by the key above: cannot fail now */
        snprintf(file, sizeof file, "%s.py", h->spec->kernel);
        if (h->spec->n_extension) {
            kf_build_ext_dir(so, ext, sizeof ext);
            kf_pyext_module(h->spec, mod, sizeof mod);
        }
        if (h->spec->n_files)
            kf_pyfiles_dir(so, files, sizeof files);
        if (kf_pyk_load(py, so, file, h->spec->kernel, h->spec->device_cuda, ext, mod, files,
                        problem, &L->k, perr, sizeof perr) != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", perr);
        if (kf_pyk_per_config()) /* atol, rtol, tolerances(): the glue's */
            L->tolfn = kf_pyk_tolerances;
        L->reference_f32 = kf_pyk_reference_f32;
    } else {
        L->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        if (!L->dl)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "cannot load %s: %s", so, dlerror());
        kf_kernel_get_fn get = (kf_kernel_get_fn)dlsym(L->dl, KF_KERNEL_SYMBOL);
        if (!get)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s does not define %s()", so,
                             KF_KERNEL_SYMBOL);
        L->k = get();
        /* Optional (kf_kernel.h): absent, the host reference as before. */
        *(void **)&L->refdev = dlsym(L->dl, KF_REFERENCE_DEVICE_SYMBOL);
        *(void **)&L->tolfn = dlsym(L->dl, KF_TOLERANCES_SYMBOL);
    }
    if (!L->k || L->k->abi_version != KF_KERNEL_ABI_VERSION)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "kernel ABI version %u, this agent speaks %d",
                         L->k ? L->k->abi_version : 0, KF_KERNEL_ABI_VERSION);
    if (!L->k->setup || (!L->k->run && !problem) || !L->k->output || !L->k->reference ||
        !L->k->teardown)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s lacks a required callback",
                         hctx_who(h), h->spec->kernel);
    hctx_set_params(h, L);
    if (h->spec->device_cuda && !h->cu) { /* opened before the sandbox's last step, or now */
        kf_err err;
        uint64_t t0 = kf_mono_ns();
        int rc = kf_cudrv_open(&h->cu, hctx_cubins_read(h), &err);
        hctx_phase_add(h, HCTX_PH_CONTEXT, t0);
        if (rc != KF_OK)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    }
    return 0;
}

size_t hctx_dtype_size(kf_dtype t)
{
    return kf_cmp_dtype_size(t);
}

double hctx_elem(const void *data, kf_dtype t, size_t i)
{
    return kf_cmp_elem(data, t, i);
}

void *hctx_host_buffer(void **buf, size_t *cap, size_t n)
{
    if (*buf && *cap >= n)
        return *buf;
    free(*buf); /* no realloc: the old content is not wanted */
    *buf = malloc(n ? n : 1);
    *cap = *buf ? n : 0;
    return *buf;
}

/* Copies the kernel's output after a run to host memory (a device view is
 * fetched through the driver). output() is asked again first: a kernel
 * that finishes its work there (a thread of its own joined) has finished
 * it before a byte is read, so the check is never a race; and the view
 * must be the one poisoned before the run, or a kernel could hand over a
 * buffer computed earlier. A device output lands in h->host_out (reused
 * by the next fetch); *owned is 0 for both kinds. */
int hctx_output_same(hctx *h, const loaded *L, void *state, const kf_view *v)
{
    kf_view now = {0};
    char whose[256];
    const char *of = hctx_problem_of(h, whose, sizeof whose);
    if (L->k->output(state, &now) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: output()%s failed after run()",
                         hctx_who(h), h->spec->kernel, of);
    if (now.data != v->data || now.count != v->count || now.dtype != v->dtype ||
        now.location != v->location)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s: output()%s after run() describes another buffer (%zu "
                         "elements) than before it (%zu): the harness poisons the output before "
                         "each run and reads the same buffer after, so %s",
                         hctx_who(h), h->spec->kernel, of, now.count, v->count,
                         *of ? "a candidate's run(s) writes into the output buffer of the state "
                               "the problem's setup made, and may not replace it"
                             : "output() must return one view for a state");
    return 0;
}

int hctx_fetch_output(hctx *h, const loaded *L, void *state, const kf_view *v, void **host,
                      int *owned)
{
    if (hctx_output_same(h, L, state, v) != 0)
        return -1;
    if (v->location == KF_LOC_HOST) {
        *host = v->data;
        *owned = 0;
        return 0;
    }
    if (!h->cu)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "a device output from a host kernel");
    size_t n = v->count * hctx_dtype_size(v->dtype);
    *host = h->out_buffer ? h->out_buffer(h, n) : NULL;
    if (!*host)
        *host = hctx_host_buffer(&h->host_out, &h->host_out_cap, n);
    if (!*host)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory for %zu output bytes", n);
    *owned = 0;
    kf_err err;
    if (kf_cudrv_copy_to_host(h->cu, *host, v->data, n, &err) != KF_OK) {
        *host = NULL;
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    }
    return 0;
}

int hctx_poison(hctx *h, const kf_view *v)
{
    size_t n = v->count * hctx_dtype_size(v->dtype);
    if (v->location == KF_LOC_HOST) {
        memset(v->data, 0xFF, n);
        return 0;
    }
    kf_err err;
    /* Waited for: the memset is on stream 0, which a kernel's own
     * non-blocking stream does not wait for, so its run could write before
     * the poison lands and see its output half poisoned (seen on an H200:
     * the side-stream kernel's two runs "differed bitwise"). */
    if (kf_cudrv_memset(h->cu, v->data, 0xFF, n, &err) != KF_OK ||
        kf_cudrv_sync(h->cu, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    return 0;
}

/* Runs the kernel once and waits for it; device errors (an illegal address,
 * a trap) surface here with the driver's name for them. */
int hctx_run_once(hctx *h, const loaded *L, void *state)
{
    char kerr[HCTX_KERR_LEN] = "";
    if (L->k->run(state, kerr, sizeof kerr) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s failed: %s", hctx_who(h),
                         h->spec->kernel, kerr);
    if (h->cu) {
        kf_err err;
        if (kf_cudrv_sync(h->cu, &err) != KF_OK)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h),
                             h->spec->kernel, err.msg);
    }
    return 0;
}

const char *const hctx_phase_names[HCTX_NPHASES] = {
    "load",           "context",       "setup",       "run",         "reference",
    "compare",        "sampling",      "tools",       "build",       "samples",
    "throttle waits", "sample launch", "sample sync", "clock reads", "warm-up",
    "determinism",    "rests",         "host wait",   "first runs",  "start"};

kf_cubins *hctx_cubins_read(const hctx *h)
{
    char path[PATH_MAX];
    kf_err err;
    kf_cubins_path(path, sizeof path, h->workdir);
    kf_cubins *c = kf_cubins_read(path, &err);
    if (!c)
        kf_debug("runner.cubins", "none=\"%s\"", err.msg);
    return c;
}

int hctx_timer_open(hctx *h)
{
    kf_err err;
    uint64_t t0 = kf_mono_ns();
    int rc = kf_cudrv_trace_open(h->cu, &err);
    hctx_phase_add(h, HCTX_PH_CONTEXT, t0);
    if (rc == KF_EINVAL)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    if (rc != KF_OK)
        kf_info("runner.timer", "timer=events why=\"%s\"", err.msg);
    return 0;
}

void hctx_phase_add(hctx *h, int ph, uint64_t t0)
{
    h->phase_s[ph] += (double)(kf_mono_ns() - t0) / 1e9;
}

void hctx_phase_add_s(hctx *h, int ph, double seconds)
{
    h->phase_s[ph] += seconds > 0 ? seconds : 0;
}

/* "kernel K setup", or "candidate C: setup() of problem P" (the problem's
 * setup makes a candidate's inputs): what a setup failure is said of. */
static const char *setup_who(const hctx *h, char *who, size_t len)
{
    char whose[256];
    const char *of = hctx_problem_of(h, whose, sizeof whose);
    if (*of)
        snprintf(who, len, "candidate %s: setup()%s", h->spec->kernel, of);
    else
        snprintf(who, len, "%s %s setup", hctx_who(h), h->spec->kernel);
    return who;
}

static int setup_once(hctx *h, const loaded *L, uint64_t seed, void **state)
{
    char kerr[HCTX_KERR_LEN] = "", who[600];
    if (L->k->setup(state, &L->params, seed, kerr, sizeof kerr) != 0) {
        /* A problem's seeds are secret (docs/problems.md): named by their
         * place in the pool; a plain kernel's, to replay it. */
        size_t i = 0;
        while (i < h->spec->n_seeds && h->spec->seeds[i] != seed)
            i++;
        if (i < h->spec->n_seeds)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s (pool seed #%zu) failed: %s",
                             setup_who(h, who, sizeof who), i, kerr);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s (seed %llu) failed: %s",
                         setup_who(h, who, sizeof who), (unsigned long long)seed, kerr);
    }
    if (h->cu) {
        kf_err err;
        if (kf_cudrv_sync(h->cu, &err) != KF_OK)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s: %s", setup_who(h, who, sizeof who),
                             err.msg);
    }
    return 0;
}

/* A configuration that cannot fit the node fails at once, saying what it
 * needs and what the node has (issue 41), before any allocation an OOM
 * killer could end: the bytes a problem says a run moves (its inputs
 * read and its output written at least once) against the GPU's memory, or
 * the host's for a host kernel. A lower bound of what it needs, so a
 * configuration past it cannot fit; one under it may still fail its own
 * allocation, with its framework's message. 0, or -1 with the task
 * failed. */
static int fits(hctx *h, const loaded *L)
{
    /* A problem's bytes() is its owner's word; a plain kernel's is the
     * kernel's own, which may lie (cheat_bytes: it is judged impossible
     * after its run, not refused on its word before). */
    if (!(h->spec->problem_hash && *h->spec->problem_hash) &&
        !kf_task_kind_at(h->spec->kind)->references)
        return 0;
    double need = L->k->bytes ? L->k->bytes(&L->params) : 0;
    size_t free_b = 0, total_b = 0;
    kf_err err;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (h->cu && kf_cudrv_mem_info(h->cu, &free_b, &total_b, &err) != KF_OK)
        return 0; /* not known: the allocation says */
    double have = h->cu ? (double)total_b : pages > 0 && psize > 0 ? (double)pages * psize : 0;
    if (!(need > have) || have <= 0)
        return 0;
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                     "%s %s: this configuration cannot fit the node: it moves %.1f GiB a run "
                     "(its bytes(), the inputs read and the output written at least once) and the "
                     "%s has %.1f GiB in all; not run (a smaller configuration, or a node with "
                     "more memory)",
                     hctx_who(h), h->spec->kernel, need / 1073741824.0, h->cu ? "GPU" : "host",
                     have / 1073741824.0);
}

int hctx_setup(hctx *h, const loaded *L, uint64_t seed, void **state)
{
    *state = NULL;
    if (!h->fit_checked) {
        h->fit_checked = 1;
        if (fits(h, L) != 0)
            return -1;
    }
    uint64_t t0 = kf_mono_ns();
    int rc = setup_once(h, L, seed, state);
    hctx_phase_add(h, HCTX_PH_SETUP, t0);
    return rc;
}

/* The last `lines` lines of a file, for a verdict or an error. */
void hctx_tail_lines(const char *path, int lines, char *out, size_t len)
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
