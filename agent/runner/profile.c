/* profile — a profile task: warm-up (to a steady SM clock on a GPU:
 * thermal.h), then timed samples (caches flushed between cold samples)
 * until the median is known to the precision asked for (95 % interval,
 * common/stats.h kf_stats_stop_precise) past floors of samples and time,
 * or the timeout; every sample streamed. Every run goes to the
 * next of K >= 2 input sets from secret seeds, and every sample is guarded
 * (guard.c: outputs poisoned before it, spot-checked after it, untimed), so
 * work a kernel skips is never timed as fast. Device kernels are timed by
 * the CUDA driver through cudrv, host kernels by CLOCK_MONOTONIC; NVML
 * telemetry is read alongside. */
#include "runner/compare.h"
#include "runner/fresh.h"
#include "runner/guard.h"
#include "runner/hctx.h"
#include "runner/harness.h"
#include "runner/hostlock.h"
#include "runner/thermal.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include "common/stats.h"

#include <time.h>
#include <unistd.h>

/* The stored summary, from the same statistics the report recomputes. */
static void stats(const double *v, const uint32_t *set, size_t n, Kfleet__ProfileStats *ps)
{
    kf_stats st;
    if (kf_stats_compute_sets(v, set, n, &st) != KF_OK)
        return;
    ps->samples = (uint32_t)n;
    ps->median_s = st.median;
    ps->mean_s = st.mean;
    ps->min_s = st.min;
    ps->max_s = st.max;
    ps->stddev_s = isfinite(st.stddev) ? st.stddev : 0;
    ps->noise_pct = st.noise_pct;
}

#define KF_MAX_INPUT_SETS HCTX_MAX_SETS

/* The host's largest cache level, for hot-sample input rotation. */
static size_t host_cache_bytes(void)
{
    long c = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (c <= 0)
        c = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return c > 0 ? (size_t)c : 32u << 20;
}

/* The memory the input sets may take together: a quarter of the device's
 * free memory, or an eighth of the host's. */
static double sets_budget(hctx *h)
{
    if (h->cu) {
        size_t fr = 0, tot = 0;
        kf_err err;
        if (kf_cudrv_mem_info(h->cu, &fr, &tot, &err) == KF_OK && fr > 0)
            return (double)fr / 4;
        return 4.0 * (1u << 30);
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (double)pages * (double)psz / 8 : 4.0 * (1u << 30);
}

/* How many input sets the profile rotates among. At least two, so that no
 * run sees the inputs of the run before it (a kernel memoizing on its
 * inputs' identity has nothing to reuse), and one per run of a batch, so
 * that every run of a sample starts from poison; for hot samples of a
 * working set that fits in the cache, enough to be twice the cache (the
 * cache must not hold the last sample's data). Bounded by
 * KF_MAX_INPUT_SETS and by the memory budget, counting each set as the
 * kernel's declared bytes: a kernel too big for two sets gets one, and
 * only the poison before each sample (docs/benchmarks.md). */
static size_t input_sets(hctx *h, double wbytes, int hot, uint32_t batch)
{
    size_t cache = h->cu ? kf_cudrv_l2_bytes(h->cu) : host_cache_bytes();
    size_t want = 2;
    if (batch > want)
        want = batch;
    if (hot && wbytes > 0 && wbytes < (double)cache) {
        size_t c = (size_t)ceil(2.0 * (double)cache / wbytes);
        want = c > want ? c : want;
    }
    want = want > KF_MAX_INPUT_SETS ? KF_MAX_INPUT_SETS : want;
    if (wbytes > 0) {
        double fit = floor(sets_budget(h) / wbytes);
        if (fit < (double)want)
            want = fit >= 1 ? (size_t)fit : 1;
    }
    return want;
}

/* A batch's runs, each on the next input set: the run function handed to
 * cudrv's timer (and the host loop), over the profile's sets. For a device
 * kernel each run is followed by the kernel's output() inside the timed
 * bracket: work a kernel hands to a host thread of its own and joins in
 * output() is then enqueued before the stop event, so it is timed. An
 * honest output() only names its buffer, on the host, while the blocking
 * kernel holds the stream: it adds no device time. (Host kernels are
 * probed for that instead: probe_host_outside.) */
typedef struct rotation {
    const kf_kernel *k;
    void *const *states;
    size_t nsets, next;
    int with_output;
} rotation;

static int rotation_run(void *arg, char *err, size_t errlen)
{
    rotation *r = arg;
    void *state = r->states[r->next++ % r->nsets];
    kf_view v = {0};
    if (r->k->run(state, err, errlen) != 0)
        return -1;
    if (r->with_output && r->k->output(state, &v) != 0) {
        snprintf(err, errlen, "output() failed after run()");
        return -1;
    }
    return 0;
}

/* One untimed run of the profile's own inputs checked against the
 * reference: a kernel that computes right when validated and skips work
 * when timed (memoizes, returns zeros, detects the profile) fails here,
 * and with it the profile. 0, or -1 with the task failed. */
static int recheck(hctx *h, const loaded *L, void *const *states, size_t set,
                   const hctx_guard *guard, const char *when)
{
    void *state = states[set];
    kf_view v = {0};
    if (L->k->output(state, &v) != 0 || !v.data || v.count == 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s has no output view", hctx_who(h),
                         h->spec->kernel);
    hctx_check chk;
    void *out = NULL;
    int owned = 0;
    /* The set's reference as the guard computed it before any run on these
     * inputs, where it kept it: the same values, computed once. */
    const double *known = hctx_guard_reference(guard, set, &v);
    if (hctx_run_and_check(h, L, state, &v, known, &chk, &out, &owned) != 0)
        return -1;
    if (owned)
        free(out);
    if (chk.passed)
        return 0;
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                     "profile re-check failed %s: on the profile's own inputs the output had "
                     "%llu non-finite or unwritten elements of %zu, max abs error %.3g (tolerance "
                     "%.3g), relative error %.3g (tolerance %.3g). The kernel passed validation "
                     "but not while timed (does it skip work it thinks was done, or detect the "
                     "profile?): its timings are not a measurement",
                     when, (unsigned long long)chk.nonfinite, v.count, chk.max_abs, h->tol.abs,
                     chk.rel, h->tol.rel);
}

/* Work a kernel leaves on a stream of its own (a non-blocking one, as
 * torch.cuda.Stream() makes) is not between the events on the legacy
 * stream, so it would go untimed: a known way for generated kernels to look
 * fast. Before the samples, a few are timed also until the whole context is
 * idle (kf_cudrv_until_idle) and compared with the same with nothing run;
 * when the kernel's device work outlasts its events by more than 20 us and
 * 10 %, *excess is that (median, per launch) and *over the empty interval,
 * and every sample is then timed until idle. 0 when it stays on its stream,
 * or when the GPU cannot be stamped. */
#define OUTSIDE_PROBES 9
static int probe_outside(hctx *h, const loaded *L, rotation *rot, int hot, unsigned batch,
                         double *excess, double *over)
{
    kf_err err;
    double ex[OUTSIDE_PROBES], ev[OUTSIDE_PROBES];
    *excess = 0;
    if (kf_cudrv_idle_overhead(h->cu, OUTSIDE_PROBES, over, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h), h->spec->kernel,
                         err.msg);
    if (*over <= 0)
        return 0;
    kf_cudrv_until_idle(h->cu, 1);
    for (unsigned i = 0; i < OUTSIDE_PROBES; i++) {
        kf_cudrv_timing tm;
        if (kf_cudrv_time(h->cu, hot, batch, rotation_run, rot, &tm, &err) != KF_OK) {
            kf_cudrv_until_idle(h->cu, 0);
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h),
                             h->spec->kernel, err.msg);
        }
        ev[i] = tm.seconds;
        ex[i] = tm.idle_s > 0 ? (tm.idle_s - *over) / batch - tm.seconds : 0;
    }
    kf_cudrv_until_idle(h->cu, 0);
    kf_stats_sort(ex, OUTSIDE_PROBES);
    kf_stats_sort(ev, OUTSIDE_PROBES);
    double m = kf_stats_quantile(ex, OUTSIDE_PROBES, 0.5),
           e = kf_stats_quantile(ev, OUTSIDE_PROBES, 0.5);
    if (m > 20e-6 && m > 0.1 * e) {
        *excess = m;
        kf_cudrv_until_idle(h->cu, 1);
    }
    return 0;
}

/* The host's side stream: a kernel whose run() hands its work to a thread
 * of its own and returns, joining it only when output() is asked for, is
 * not between run()'s clock reads. A few runs are timed also through an
 * output() call, and compared with a second output() call made at once
 * (an honest kernel's output() only describes its buffer, so the two
 * match); when the first outlasts the second by more than 20 us and 10 %
 * of run(), *excess is that (median, per run), *over the second's fastest
 * (a median read under load cut an honest run of 200 us to 155), and
 * every sample is then timed through output(), less *over. */
static int probe_host_outside(hctx *h, const loaded *L, rotation *rot, unsigned batch,
                              double *excess, double *over)
{
    double ex[OUTSIDE_PROBES], ev[OUTSIDE_PROBES], ov[OUTSIDE_PROBES];
    char kerr[HCTX_KERR_LEN] = "";
    *excess = *over = 0;
    for (unsigned i = 0; i < OUTSIDE_PROBES; i++) {
        void *state = rot->states[rot->next % rot->nsets];
        kf_view v = {0};
        uint64_t t0 = kf_mono_ns();
        for (unsigned b = 0; b < batch; b++)
            if (rotation_run(rot, kerr, sizeof kerr) != 0)
                return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s failed: %s", hctx_who(h),
                                 h->spec->kernel, kerr);
        uint64_t t1 = kf_mono_ns();
        int orc = L->k->output(state, &v);
        uint64_t t2 = kf_mono_ns();
        orc |= L->k->output(state, &v);
        uint64_t t3 = kf_mono_ns();
        if (orc != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: output() failed", hctx_who(h),
                             h->spec->kernel);
        ev[i] = (double)(t1 - t0) / 1e9 / batch;
        ov[i] = (double)(t3 - t2) / 1e9;
        ex[i] = ((double)(t2 - t1) / 1e9 - ov[i]) / batch;
    }
    kf_stats_sort(ex, OUTSIDE_PROBES);
    kf_stats_sort(ev, OUTSIDE_PROBES);
    kf_stats_sort(ov, OUTSIDE_PROBES);
    double m = kf_stats_quantile(ex, OUTSIDE_PROBES, 0.5),
           e = kf_stats_quantile(ev, OUTSIDE_PROBES, 0.5);
    if (m > 20e-6 && m > 0.1 * e) {
        *excess = m;
        *over = ov[0];
    }
    return 0;
}

/* One warm-up sample for the thermal protocol: timed as a sample is, its
 * clock from the stamps; not guarded or kept (it is no measurement). */
typedef struct warm_arg {
    hctx *h;
    rotation *rot;
    int hot;
    uint32_t batch;
    const kf_thermal *tp;
} warm_arg;

static int warm_sample(void *arg, double *seconds, double *sm_mhz)
{
    warm_arg *w = arg;
    kf_err err;
    kf_cudrv_timing tm;
    if (kf_cudrv_time(w->h->cu, w->hot, w->batch, rotation_run, w->rot, &tm, &err) != KF_OK)
        return hctx_fail(w->h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(w->h),
                         w->h->spec->kernel, err.msg);
    *seconds = tm.seconds * w->batch;
    *sm_mhz = tm.sm_mhz;
    kf_cudrv_rest(w->h->cu, kf_thermal_rest(w->tp, *seconds));
    return 0;
}

/* One profile in its phases (hctx_profile): the settings, the input sets
 * and their guard (sets_open), the warm-up and probes (warm_up), the
 * samples (sample_loop, one sample_device or sample_host each), the
 * stored summary (summarize), and prof_close. */
typedef struct prof {
    hctx *h;
    const loaded *L;
    const char *out_dtype; /* its output's (ProfileStats.output_dtype) */
    /* The settings, from the sweep's measure block. */
    kf_stop_rule rule;
    double timeout, min_span; /* min_span: the samples' least wall time */
    uint32_t warmup, batch;
    int hot;
    kf_thermal tp;
    double thr_pct;
    /* The input sets, their guard and the rotation among them. */
    void *states[KF_MAX_INPUT_SETS];
    size_t nsets;
    hctx_fresh fresh; /* a candidate's fresh inputs (fresh.h) */
    hctx_guard *guard;
    rotation rot;
    /* What the probes found (probe_outside, probe_host_outside). */
    double outside, idle_over;
    /* The host's cold-sample flush buffer (NULL: hot, or a device kernel). */
    char *flush;
    size_t flush_n;
    /* The kept samples: times, the input set each began on (the median is
     * over sets: kf_stats_compute_sets), SM clock and power at each. */
    double *times;
    uint32_t *set, *clk, *pw;
    size_t n, cap;
    /* Each kept sample's event-pair time (the report's event_median_s), and
     * how many were timed by CUPTI's records instead (cudrv.h). */
    double *evt, last_event_s;
    size_t ntraced;
    int last_traced;
    uint32_t discarded;
    int converged;
    double achieved, total_timed, span;
    /* Where the loop's time went, samples and steps (the slot time). */
    double timed_all, enq_s, sync_s, nvml_s, recheck_s;
} prof;

static void prof_settings(prof *p, hctx *h, const loaded *L)
{
    const Kfleet__MeasureSettings *m = h->spec->measure;
    p->h = h;
    p->L = L;
    /* The stopping rule: the median known to +-precision % at 95 %. The
     * noise limit (max_noise) is the report's, for its noisy flag. */
    p->rule = (kf_stop_rule){
        .min_samples = m && m->min_samples ? m->min_samples : KF_DEFAULT_MIN_SAMPLES,
        .min_time_s = m && m->min_time_s > 0 ? m->min_time_s : KF_DEFAULT_MIN_TIME_S,
        .time_floor_samples = m && m->min_time_s > 0 ? 0 : KF_DEFAULT_TIME_FLOOR_SAMPLES,
        .precision_pct = m && m->precision_pct > 0 ? m->precision_pct : KF_DEFAULT_PRECISION_PCT,
        .by_tick = 1,
    };
    p->timeout = m && m->timeout_s > 0 ? m->timeout_s : KF_DEFAULT_TIMEOUT_S;
    /* No least span unless the sweep sets one (harness.h says why). */
    p->min_span = m && m->min_span_s > 0 ? m->min_span_s : 0;
    p->warmup = m && m->warmup ? m->warmup : 1;
    p->batch = m && m->batch > 1 ? m->batch : 1;
    p->hot = m && m->hot;
    p->tp = (kf_thermal){
        .keep = m && m->throttle_keep,
        /* No blocker (the runner's PTX did not load): nothing spins through
         * a rest, so the samples run back to back and the row says so. */
        .sustained = (m && m->thermal_sustained) || (h->cu && !kf_cudrv_blocking(h->cu)),
        .recovery_s = m && m->throttle_recovery_s > 0 ? m->throttle_recovery_s : 0.05,
        .slot_warm = h->ta && h->ta->slot_warm};
    p->thr_pct = m && m->throttle_threshold_pct > 0 ? m->throttle_threshold_pct
                                                    : KF_DEFAULT_THROTTLE_THRESHOLD_PCT;
    hctx_telemetry_clocks(h, &p->tp, p->thr_pct);
    p->achieved = INFINITY;
}

/* Hot samples of a kernel whose working set fits in the cache would time
 * the cache holding the last sample's data: rotate among input sets
 * (different seeds) that together are twice the cache. Cold samples need
 * none: the flush evicts everything first. The sets come from seeds the
 * kernel cannot know in advance (never the validation's): a kernel that
 * memoizes on its inputs or recognises a profile's has nothing to
 * recognise. 0, or -1 with the task failed. */
static int sets_open(prof *p)
{
    const loaded *L = p->L;
    double wbytes = L->k->bytes ? L->k->bytes(&L->params) : 0;
    size_t nsets = input_sets(p->h, wbytes, p->hot, p->batch);
    uint64_t seeds[KF_MAX_INPUT_SETS];
    for (size_t i = 0; i < nsets; i++) /* a candidate's: its problem's pool (candidate.c) */
        seeds[i] = p->h->judge && !p->h->refresh ? p->h->spec->seeds[i % p->h->spec->n_seeds]
                                                 : kf_unpredictable_u64();
    for (size_t i = 0; i < nsets; i++) {
        p->nsets = i + 1; /* a failed setup's partial state is torn down too */
        if (hctx_setup(p->h, L, seeds[i], &p->states[i]) != 0)
            return -1;
    }
    /* The bounds the guard and the re-checks judge by: this
     * configuration's, for its output's dtype (a candidate's: its
     * checker's). */
    kf_view v0 = {0};
    int have_out = L->k->output(p->states[0], &v0) == 0 && v0.data;
    p->out_dtype = have_out ? kf_cmp_dtype_name(v0.dtype) : "";
    if (!p->h->judge && (!have_out || hctx_tolerances(p->h, L, v0.dtype) != 0))
        return p->h->res->state == KFLEET__TASK_STATE__SUCCEEDED
                   ? hctx_fail(p->h, KFLEET__TASK_STATE__FAILED, "%s %s has no output view",
                               hctx_who(p->h), p->h->spec->kernel)
                   : -1;
    if (hctx_guard_new(p->h, L, p->states, nsets, &p->guard) != 0)
        return -1;
    hctx_fresh_start(&p->fresh, p->h->refresh ? nsets : 0);
    /* Every run of the profile, from the warm-up on, goes to the next set
     * (run r on set r % nsets): no two runs in a row share inputs, so a
     * kernel memoizing on its last inputs never hits. */
    p->rot = (rotation){L->k, p->states, nsets, 0, p->h->cu != NULL};
    return 0;
}

/* The warm-up runs (phase "first runs"), the outside-stream probe, and on
 * a GPU the thermal protocol's run to a steady SM clock (thermal.h; within
 * a fifth of the timeout, at most 1 s). 0, or -1 with the task failed. */
static int warm_up(prof *p)
{
    hctx *h = p->h;
    uint64_t tw0 = kf_mono_ns();
    for (uint32_t i = 0; i < p->warmup * p->nsets; i++)
        if (hctx_run_once(h, p->L, p->states[p->rot.next++ % p->nsets]) != 0)
            return -1;
    hctx_phase_add(h, HCTX_PH_FIRST, tw0);
    tw0 = kf_mono_ns();
    /* Cold samples: write a buffer of twice the private cache between runs
     * (L2 on the device; per-core L2 on the host — a VM's shared LLC of
     * hundreds of MB would make per-sample flushing dominate the run). */
    if (!p->hot && !h->cu) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        p->flush_n = 2 * (size_t)(l2 > 0 ? l2 : 4 << 20);
        p->flush = malloc(p->flush_n);
    }
    if (h->cu ? probe_outside(h, p->L, &p->rot, p->hot, p->batch, &p->outside, &p->idle_over)
              : probe_host_outside(h, p->L, &p->rot, p->batch, &p->outside, &p->idle_over))
        return -1;
    if (h->cu) {
        warm_arg wa = {h, &p->rot, p->hot, p->batch, &p->tp};
        if (kf_thermal_warm(&p->tp, fmin(1.0, p->timeout / 5), warm_sample, &wa) != 0)
            return -1;
    }
    hctx_phase_add(h, HCTX_PH_WARMUP, tw0);
    return 0;
}

/* One device sample: timed by cudrv, judged against the thermal policy,
 * its sets spot-checked. *secs per run; *throttled a KF_THERMAL_ value.
 * 0, or -1 with the task failed. */
static int sample_device(prof *p, size_t first, size_t iter, double *secs, int *throttled,
                         kf_nvml_reading *at)
{
    hctx *h = p->h;
    kf_err err;
    kf_cudrv_timing tm;
    uint64_t t0 = kf_mono_ns();
    if (kf_cudrv_time(h->cu, p->hot, p->batch, rotation_run, &p->rot, &tm, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h), h->spec->kernel,
                         err.msg);
    *secs = tm.seconds;
    p->tp.rest_s += tm.rest_s;
    kf_cudrv_rest(h->cu, kf_thermal_rest(&p->tp, tm.seconds * p->batch));
    p->last_event_s = tm.event_s;
    p->last_traced = tm.traced;
    p->enq_s += tm.enqueue_s;
    p->sync_s += tm.wait_s > *secs * p->batch ? tm.wait_s - *secs * p->batch : 0;
    /* Work outside the timed stream counts: the sample runs until the
     * device is idle (probe_outside). CUPTI's span has every stream's. */
    if (!tm.traced && p->outside > 0 && tm.idle_s > 0 &&
        (tm.idle_s - p->idle_over) / p->batch > *secs)
        *secs = (tm.idle_s - p->idle_over) / p->batch;
    p->timed_all += *secs * p->batch;
    uint64_t t1 = kf_mono_ns();
    if (h->nv) {
        *throttled = kf_thermal_judge(&p->tp, h->nv, t0, t1, tm.sm_mhz, at);
        h->throttled_samples += (uint32_t)(*throttled != 0);
        p->nvml_s += (double)(kf_mono_ns() - t1) / 1e9;
    }
    return hctx_guard_after(p->guard, h, p->L, p->states, first, p->batch, iter);
}

/* One host sample: the batch's runs between clock reads, through output()
 * where the probe found work on a thread of the kernel's (it still counts),
 * its sets spot-checked. 0, or -1 with the task failed. */
static int sample_host(prof *p, size_t first, size_t iter, double *secs)
{
    hctx *h = p->h;
    const loaded *L = p->L;
    uint64_t t0 = kf_mono_ns();
    char kerr[HCTX_KERR_LEN] = "";
    for (uint32_t b = 0; b < p->batch; b++)
        if (rotation_run(&p->rot, kerr, sizeof kerr) != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s failed: %s", hctx_who(h),
                             h->spec->kernel, kerr);
    kf_view v = {0};
    for (uint32_t b = 0; p->outside > 0 && b < p->batch && b < p->nsets; b++)
        if (L->k->output(p->states[(first + b) % p->nsets], &v) != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: output() failed", hctx_who(h),
                             h->spec->kernel);
    *secs = (double)(kf_mono_ns() - t0) / 1e9;
    *secs = (p->outside > 0 && *secs > p->idle_over ? *secs - p->idle_over : *secs) / p->batch;
    p->timed_all += *secs * p->batch;
    return hctx_guard_after(p->guard, h, L, p->states, first, p->batch, iter);
}

/* Keeps one sample (and streams it). 0, or -1 with the task failed. */
static int keep_sample(prof *p, double secs, size_t first, int throttled, const kf_nvml_reading *at)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 1024;
        p->times = kf_xrealloc(p->times, p->cap * sizeof *p->times);
        p->set = kf_xrealloc(p->set, p->cap * sizeof *p->set);
        p->clk = kf_xrealloc(p->clk, p->cap * sizeof *p->clk);
        p->pw = kf_xrealloc(p->pw, p->cap * sizeof *p->pw);
        p->evt = kf_xrealloc(p->evt, p->cap * sizeof *p->evt);
    }
    p->evt[p->n] = p->h->cu ? p->last_event_s : secs;
    p->ntraced += p->h->cu && p->last_traced;
    p->clk[p->n] = at->sm_mhz;
    p->pw[p->n] = at->power_mw;
    p->set[p->n] = (uint32_t)first;
    p->times[p->n++] = secs;
    p->total_timed += secs * p->batch;
    if (hctx_add_sample(p->h, secs, (uint32_t)first, throttled != 0, HCTX_SAMPLE_KEPT, at->sm_mhz,
                        at->power_mw) != KF_OK)
        return hctx_fail(p->h, KFLEET__TASK_STATE__FAILED, "cannot stream samples to the agent");
    return 0;
}

/* The re-check during the samples, once: on the set the last run used, so
 * that the next sample's run still follows a run on other inputs. 0, or -1
 * with the task failed. */
static int mid_recheck(prof *p, int *rechecked)
{
    if (*rechecked)
        return 0;
    *rechecked = 1;
    uint64_t tr = kf_mono_ns();
    size_t set = (p->rot.next + p->nsets - 1) % p->nsets;
    if (hctx_fresh_audit(p->h, &p->fresh, p->states, set) != 0)
        return -1;
    int rc = recheck(p->h, p->L, p->states, set, p->guard, "during the samples");
    p->recheck_s += (double)(kf_mono_ns() - tr) / 1e9;
    return rc;
}

/* The samples, each guarded, until the median is precise enough (past the
 * floors: samples, timed seconds, and on a GPU the wall time they span) or
 * the timeout, met past a kept sample (audits alone would leave none, nor
 * the re-check after the last, which the checker counts: agent/verdict.c);
 * the re-check at a sample index the kernel cannot predict, before the
 * minimum, or at the timeout. 0, or -1 with the task failed. */
static int sample_loop(prof *p)
{
    hctx *h = p->h;
    size_t nsets = p->nsets, next_check = 0, iter = 0; /* iter: samples so far, kept or not */
    size_t recheck_at = (size_t)(kf_unpredictable_u64() % p->rule.min_samples);
    int rechecked = 0;
    uint64_t start = kf_mono_ns();
    for (;;) {
        size_t first = p->rot.next % nsets;
        if (p->n == recheck_at && mid_recheck(p, &rechecked) != 0)
            return -1;
        /* New inputs first (a candidate's), the poison next, the flush
         * after it: a cold sample finds its output out of the cache as it
         * did before the guard. */
        if (hctx_fresh_before(h, &p->fresh, p->states, nsets, first, p->batch) != 0 ||
            hctx_guard_before(p->guard, h, first, p->batch) != 0)
            return -1;
        if (p->flush) {
            memset(p->flush, (int)(p->n & 0xFF), p->flush_n);
            __asm__ volatile("" : : "r"(p->flush) : "memory");
        }
        double secs = 0;
        int throttled = 0;
        kf_nvml_reading at = {0};
        if (h->cu ? sample_device(p, first, iter++, &secs, &throttled, &at)
                  : sample_host(p, first, iter++, &secs))
            return -1;
        int audit = p->fresh.last_audit;
        p->fresh.last_audit = 0;
        if (audit || throttled == KF_THERMAL_DISCARD) {
            /* Stored and flagged, not counted: an audit (fresh.h: the guard
             * checked it; its inputs the pool's, which a memo may have seen)
             * or a sample taken while throttled, after which the GPU gets
             * time to recover before the next sample (nvbench's policy), as
             * long as the waits stay within the time measured. */
            p->discarded += !audit;
            if (hctx_add_sample(h, secs, (uint32_t)first, audit ? throttled != 0 : 1,
                                audit ? HCTX_SAMPLE_AUDIT : HCTX_SAMPLE_THROTTLED, at.sm_mhz,
                                at.power_mw) != KF_OK)
                return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                                 "cannot stream samples to the agent");
            if (!audit)
                kf_thermal_wait(&p->tp, p->timed_all);
            if ((double)(kf_mono_ns() - start) / 1e9 >= p->timeout && (p->n || p->discarded))
                return mid_recheck(p, &rechecked);
            continue;
        }
        if (keep_sample(p, secs, first, throttled, &at) != 0)
            return -1;
        p->span = (double)(kf_mono_ns() - start) / 1e9;
        /* The precision check sorts: at most ~every 1% of the samples.
         * Noisy samples are not a reason to stop: they take more samples
         * to pin the median down, up to the timeout. */
        if (kf_stats_floors_met(&p->rule, p->n, p->total_timed) && p->span >= p->min_span &&
            p->n >= next_check) {
            next_check = p->n + 1 + p->n / 100;
            if (kf_stats_stop_precise(&p->rule, p->times, p->set, p->n, p->total_timed,
                                      &p->achieved)) {
                p->converged = 1;
                return 0;
            }
        }
        if ((double)(kf_mono_ns() - start) / 1e9 >= p->timeout)
            return mid_recheck(p, &rechecked);
    }
}

/* The loop's time by step into the task's phases. */
static void loop_phases(prof *p, double loop_s)
{
    hctx *h = p->h;
    hctx_phase_add_s(h, HCTX_PH_SAMPLES, p->timed_all);
    hctx_phase_add_s(h, HCTX_PH_THROTTLE, p->tp.waits_s);
    hctx_phase_add_s(h, HCTX_PH_REST, p->tp.rest_s);
    hctx_phase_add_s(h, HCTX_PH_LAUNCH, p->enq_s);
    hctx_phase_add_s(h, HCTX_PH_SYNC, p->sync_s);
    hctx_phase_add_s(h, HCTX_PH_CLOCKS, p->nvml_s);
    /* The re-check inside the loop already counts as run, reference and
     * compare (hctx_run_and_check); the guard's poison and spot checks
     * count as compare. */
    double guard_s = hctx_guard_spent_s(p->guard);
    hctx_phase_add_s(h, HCTX_PH_COMPARE, guard_s);
    hctx_phase_add_s(h, HCTX_PH_SAMPLING,
                     loop_s - p->timed_all - p->tp.waits_s - p->tp.rest_s - p->enq_s - p->sync_s -
                         p->nvml_s - p->recheck_s - guard_s);
    kf_debug("profile_guard", "kernel=%s sets=%zu checks=%llu guard_s=%.6f", h->spec->kernel,
             p->nsets, (unsigned long long)hctx_guard_checks(p->guard), guard_s);
}

/* What a caller pays per call of a GPU kernel (ProfileStats.host_call_s):
 * run() and a wait for the device, timed on the host, back to back over
 * the input sets, HOST_CALLS times or for HOST_CALL_S at most, untimed for
 * the verdict. The median goes in ps; 0 with the task failed on a fault. */
#define HOST_CALLS 64
#define HOST_CALL_S 0.2
static int host_calls(prof *p, Kfleet__ProfileStats *ps)
{
    hctx *h = p->h;
    double t[HOST_CALLS];
    uint32_t n = 0;
    char kerr[HCTX_KERR_LEN] = "";
    kf_err err;
    uint64_t start = kf_mono_ns();
    while (n < HOST_CALLS && (double)(kf_mono_ns() - start) / 1e9 < HOST_CALL_S) {
        uint64_t t0 = kf_mono_ns();
        if (rotation_run(&p->rot, kerr, sizeof kerr) != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s failed: %s", hctx_who(h),
                             h->spec->kernel, kerr);
        if (kf_cudrv_sync(h->cu, &err) != KF_OK)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h),
                             h->spec->kernel, err.msg);
        t[n++] = (double)(kf_mono_ns() - t0) / 1e9;
    }
    kf_stats_sort(t, n);
    ps->host_call_count = n;
    ps->host_call_s = n ? kf_stats_quantile(t, n, 0.5) : 0;
    return 0;
}

static void summarize(prof *p, Kfleet__ProfileStats *ps)
{
    const loaded *L = p->L;
    stats(p->times, p->set, p->n, ps);
    ps->discarded = p->discarded;
    ps->throttle_keep = p->tp.keep;
    ps->clock_threshold_mhz = p->tp.threshold_mhz;
    ps->default_sm_clock_mhz = p->tp.default_mhz;
    ps->sm_clock_median_mhz = kf_stats_median_u32(p->clk, p->n);
    ps->power_median_mw = kf_stats_median_u32(p->pw, p->n);
    /* The timeout may come between two precision checks (every ~1 %): the report, which
     * recomputes the precision, must not show precise samples "not converged". */
    if (!p->converged &&
        kf_stats_stop_precise(&p->rule, p->times, p->set, p->n, p->total_timed, &p->achieved) &&
        p->span >= p->min_span)
        p->converged = 1;
    ps->converged = p->converged;
    ps->precision_pct = isfinite(p->achieved) ? p->achieved : -1;
    ps->precision_target_pct = p->rule.precision_pct;
    ps->timer_tick_s = kf_stats_timer_tick(p->times, p->n);
    ps->thermal = (char *)kf_thermal_protocol(&p->tp, p->h->cu != NULL);
    ps->rest_s = p->tp.rest_s;
    ps->warmup_s = p->tp.warmup_s;
    ps->warmup_samples = p->tp.warmup_samples;
    ps->warmup_slot_warm = p->tp.slot_warm;
    ps->warmup_at_default = p->tp.at_default;
    ps->steady_sm_clock_mhz = p->tp.steady_mhz;
    ps->clock_steady = p->tp.steady;
    ps->measured_s = p->timed_all;
    ps->throttle_wait_s = p->tp.waits_s;
    ps->waits_skipped = p->tp.waits_skipped;
    ps->span_s = p->span;
    if (p->h->cu) {
        ps->timer = (char *)(p->ntraced == p->n ? "cupti" : p->ntraced ? "cupti+events" : "events");
        kf_stats ev;
        if (kf_stats_compute_sets(p->evt, p->set, p->n, &ev) == KF_OK)
            ps->event_median_s = ev.median;
    }
    ps->bytes = L->k->bytes ? L->k->bytes(&L->params) : 0;
    ps->flops = L->k->flops ? L->k->flops(&L->params) : 0;
    ps->output_dtype = (char *)(p->out_dtype ? p->out_dtype : "");
    ps->fresh_samples = p->fresh.fresh_samples;
    ps->audit_samples = p->fresh.audits;
    if (p->h->cu)
        hctx_launches(p->h, ps);
    ps->hot = p->hot;
    ps->batch = p->batch;
    ps->input_sets = (uint32_t)p->nsets;
    ps->outside_stream_s = p->outside;
    if (!p->h->cu) { /* a host sample is what its caller pays */
        ps->host_call_s = ps->median_s;
        ps->host_call_count = ps->samples;
    }
}

static void prof_close(prof *p)
{
    if (p->h->cu) /* the runner's next task (a serving runner's) rests no more */
        kf_cudrv_rest(p->h->cu, 0);
    hctx_guard_destroy(&p->guard);
    free(p->flush);
    free(p->times);
    free(p->set);
    free(p->clk);
    free(p->pw);
    free(p->evt);
    for (size_t i = 0; i < p->nsets; i++)
        p->L->k->teardown(p->states[i]);
}

/* The machine's host-profile lock for a host kernel's profile (hostlock.h),
 * waited for at most 4 timeouts and 10 s, and 120 s (one held for ever costs
 * others that): 1 when held, 0 when not (none, or not had: said so). */
static int host_lock(prof *p, Kfleet__ProfileStats *ps)
{
    int fd = kf_hostlock_fd();
    if (fd < 0 || p->h->cu)
        return 0;
    uint64_t t0 = kf_mono_ns();
    double limit = fmin(120.0, 4 * p->timeout + 10.0);
    int held = 0;
    while (!(held = flock(fd, LOCK_EX | LOCK_NB) == 0) && (double)(kf_mono_ns() - t0) / 1e9 < limit)
        kf_sleep_s(0.005);
    ps->host_wait_s = (double)(kf_mono_ns() - t0) / 1e9;
    ps->host_shared = !held;
    hctx_phase_add(p->h, HCTX_PH_HOSTWAIT, t0);
    return held;
}

int hctx_profile(hctx *h, const loaded *L, Kfleet__ProfileStats *ps)
{
    if (hctx_refuse_vacuous(h, L) != 0)
        return -1;
    /* A runner that began with a validation opens CUPTI now. */
    if (h->cu && hctx_timer_open(h) != 0)
        return -1;
    if (h->cu) /* the warm-up may read the clock (thermal.h) */
        hctx_telemetry_open(h);
    prof p = {0};
    prof_settings(&p, h, L);
    int locked = host_lock(&p, ps);
    if (sets_open(&p) != 0 || warm_up(&p) != 0) {
        if (locked)
            flock(kf_hostlock_fd(), LOCK_UN);
        prof_close(&p);
        return -1;
    }
    if (h->cu)
        hctx_telemetry_start(h);
    uint64_t start = kf_mono_ns();
    if (h->cu) /* only the samples: the warm-up and checks stay untraced */
        kf_cudrv_trace(h->cu, 1);
    int rc = sample_loop(&p);
    if (h->cu)
        kf_cudrv_trace(h->cu, 0);
    loop_phases(&p, (double)(kf_mono_ns() - start) / 1e9);
    /* The last re-check, after the last sample. */
    if (rc == 0 && p.n > 0)
        rc = hctx_fresh_audit(h, &p.fresh, p.states, (p.n - 1) % p.nsets) != 0
                 ? -1
                 : recheck(h, L, p.states, (p.n - 1) % p.nsets, p.guard, "after the last sample");
    if (h->nv)
        kf_nvml_stop(h->nv);
    if (rc == 0 && (hctx_flush_samples(h) != KF_OK || hctx_telemetry_drain(h) != KF_OK))
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "cannot stream samples to the agent");
    if (rc == 0 && p.n == 0 && p.discarded > 0)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                       "all %u samples were taken while the GPU throttled (SM clock below %u MHz, "
                       "%.0f%% of its default %u MHz, or a thermal or hardware slowdown): none is "
                       "a measurement. Run it on a cooler GPU, or set measure: {throttle: keep} to "
                       "time it as sustained at the power cap",
                       p.discarded, p.tp.threshold_mhz, p.thr_pct, p.tp.default_mhz);
    if (rc == 0 && p.n > 0)
        summarize(&p, ps);
    if (rc == 0 && p.n > 0 && h->cu) {
        uint64_t tc = kf_mono_ns();
        rc = host_calls(&p, ps);
        hctx_phase_add(h, HCTX_PH_SAMPLING, tc);
    }
    if (h->cu)
        kf_cudrv_until_idle(h->cu, 0);
    if (locked)
        flock(kf_hostlock_fd(), LOCK_UN);
    prof_close(&p);
    return rc;
}
