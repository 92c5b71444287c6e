/* report_rows — a sweep's stored records collected into the rows every
 * report format renders; see report_rows.h.
 *
 * How: one read pass collects the sweep, its tasks (copied), each task's
 * terminal Result and, for profiles, the samples of the attempt that Result
 * names; then the agents involved and, per row, the build on that node.
 * Every store error on the way is returned; only "not found" is an answer
 * (a task not ended yet, an agent that never registered).
 *
 * Rows: one per (kernel, configuration, node), joining the configuration's
 * validate and profile tasks. With `nodes: all` the node is the pin; with
 * `nodes: any` it is the agent that ran the profile (or the validation when
 * there is no profile), and a baseline's tasks pinned to an agent where a
 * candidate of the configuration ran (sched_baseline.c) make that node's
 * row: the submitted pair's tasks come first, so its validation, pinned
 * nowhere, joins the row of its own profile. Statistics are recomputed from the stored samples
 * (stats.h); the count shown is the stored one, and a profile whose agent
 * claimed another count is flagged samples-mismatch. A row faster than its
 * node can move its declared bytes or do its declared FLOPs
 * (kf_rep_judge_possible) is flagged impossible. Speedups against the baseline on
 * each row's node are report_speedup.c's, after the collection.
 *
 * The renderers (report_text.c, report_json.c) read these rows and nothing
 * else, so the formats cannot disagree; report.c picks the renderer. */
#include "report/report_rows.h"
#include "common/taskkind.h"
#include "common/xalloc.h"
#include "common/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ---- */

const char *kf_rep_nz(const char *s)
{
    return s ? s : "";
}

const Kfleet__KernelRef *kf_rep_kref(const rep *r, uint32_t ki)
{
    return ki < r->sw->n_kernels ? r->sw->kernels[ki] : NULL;
}

const char *kf_rep_kernel_name(const rep *r, uint32_t ki)
{
    const Kfleet__KernelRef *k = kf_rep_kref(r, ki);
    return k ? kf_rep_nz(k->name) : "?";
}

/* The state that counts: the terminal record's when there is one. */
int kf_rep_state_of(const rtask *rt)
{
    return rt->res ? (int)rt->res->state : (int)rt->task->state;
}

const char *kf_rep_err_of(const rtask *rt)
{
    return rt->res && rt->res->error && *rt->res->error ? rt->res->error
                                                        : kf_rep_nz(rt->task->error);
}

int kf_rep_is_failure(int state)
{
    return state == KFLEET__TASK_STATE__FAILED || state == KFLEET__TASK_STATE__TIMED_OUT;
}

/* Lower-case names: JSON's; the text formats write "timed out". */
static const char *const state_names[] = {
    [KFLEET__TASK_STATE__PENDING] = "pending",     [KFLEET__TASK_STATE__ASSIGNED] = "assigned",
    [KFLEET__TASK_STATE__RUNNING] = "running",     [KFLEET__TASK_STATE__SUCCEEDED] = "succeeded",
    [KFLEET__TASK_STATE__FAILED] = "failed",       [KFLEET__TASK_STATE__TIMED_OUT] = "timed_out",
    [KFLEET__TASK_STATE__CANCELLED] = "cancelled", [KFLEET__TASK_STATE__SKIPPED] = "skipped",
};

const char *kf_rep_state_name(int st)
{
    size_t n = sizeof state_names / sizeof state_names[0];
    return st >= 0 && (size_t)st < n && state_names[st] ? state_names[st] : "unknown";
}

const char *kf_rep_declared_name(const rep *r, const rrow *w)
{
    const rtask *both[2] = {w->validate, w->profile};
    const char *sweep_name = kf_rep_kernel_name(r, w->kernel);
    for (int i = 0; i < 2; i++) {
        const Kfleet__Result *res = both[i] ? both[i]->res : NULL;
        if (res && res->kernel_name && *res->kernel_name &&
            strcmp(res->kernel_name, sweep_name) != 0)
            return res->kernel_name;
    }
    return NULL;
}

/* The node a task belongs to: its pin, else the agent that ran it. */
const char *kf_rep_node_of(const rtask *rt)
{
    if (rt->task->pin_agent && *rt->task->pin_agent)
        return rt->task->pin_agent;
    if (rt->res && rt->res->agent_id && *rt->res->agent_id)
        return rt->res->agent_id;
    return kf_rep_nz(rt->task->agent_id);
}

void kf_rep_fmt_iso(uint64_t ns, char *out, size_t len)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!ns || !gmtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, len, "-");
}

/* ---- collecting ---- */

static int sample_cb(void *ctx, const Kfleet__Sample *s)
{
    rtask *rt = ctx;
    /* A sample the throttle policy discarded is evidence, not a
     * measurement: counted, never in the statistics; so is an audit (a
     * candidate's sample on a pool seed's inputs put back and checked:
     * agent/runner/fresh.h). */
    if (s->discarded || s->audit) {
        rt->ndiscarded += s->discarded;
        rt->naudit += s->audit;
        return 0;
    }
    if (rt->nsamples == rt->cap) {
        size_t cap = rt->cap ? rt->cap * 2 : 64;
        rt->samples = kf_xrealloc(rt->samples, cap * sizeof *rt->samples);
        rt->clk = kf_xrealloc(rt->clk, cap * sizeof *rt->clk);
        rt->pw = kf_xrealloc(rt->pw, cap * sizeof *rt->pw);
        rt->set = kf_xrealloc(rt->set, cap * sizeof *rt->set);
        rt->cap = cap;
    }
    rt->set[rt->nsamples] = s->input_set;
    rt->clk[rt->nsamples] = s->sm_clock_mhz;
    rt->pw[rt->nsamples] = s->power_mw;
    rt->samples[rt->nsamples++] = s->seconds;
    rt->nthrottled += s->throttled != 0;
    return 0;
}

struct attempt_ctx {
    rep *r;
    int gpu;
    rtask *rt;
};

static char *dup_or_null(const char *s)
{
    return s && *s ? kf_xstrdup(s) : NULL;
}

/* Every attempt is counted; its details are kept (and freed again in
 * task_cb when the task had one quiet attempt). */
static void keep_attempt(rtask *rt, const Kfleet__Attempt *a)
{
    rt->att = kf_xrealloc(rt->att, (rt->natt + 1) * sizeof *rt->att);
    rattempt *x = &rt->att[rt->natt++];
    x->attempt = a->attempt;
    x->state = a->state;
    x->agent = dup_or_null(a->agent_id);
    x->note = dup_or_null(a->note);
}

static void drop_attempts(rtask *rt)
{
    for (size_t i = 0; i < rt->natt; i++) {
        free(rt->att[i].agent);
        free(rt->att[i].note);
    }
    free(rt->att);
    rt->att = NULL;
    rt->natt = 0;
}

static int attempt_cb(void *ctx, const Kfleet__Attempt *a)
{
    struct attempt_ctx *ac = ctx;
    rschedule *s = &ac->r->sched;
    ac->rt->nattempts++;
    keep_attempt(ac->rt, a);
    if (!a->assigned_ns || a->ended_ns < a->assigned_ns)
        return 0;
    double d = (double)(a->ended_ns - a->assigned_ns) / 1e9;
    if (!s->first_assign_ns || a->assigned_ns < s->first_assign_ns)
        s->first_assign_ns = a->assigned_ns;
    if (a->ended_ns > s->last_end_ns)
        s->last_end_ns = a->ended_ns;
    if (s->nspans == s->capspans) {
        s->capspans = s->capspans ? s->capspans * 2 : 64;
        s->spans = kf_xrealloc(s->spans, s->capspans * sizeof *s->spans);
    }
    s->spans[s->nspans++] =
        (rspan){kf_xstrdup(a->agent_id ? a->agent_id : ""), a->assigned_ns, a->ended_ns, ac->gpu};
    if (ac->gpu) {
        s->gpu_busy_s += d;
        s->gpu_attempts++;
        if (!s->first_gpu_assign_ns || a->assigned_ns < s->first_gpu_assign_ns)
            s->first_gpu_assign_ns = a->assigned_ns;
    } else {
        s->cpu_busy_s += d;
        s->cpu_attempts++;
    }
    return 0;
}

static int task_cb(void *ctx, const Kfleet__Task *task)
{
    rep *r = ctx;
    if (r->ntasks == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        rtask *p = kf_xrealloc(r->tasks, cap * sizeof *p);
        r->tasks = p;
        r->cap = cap;
    }
    /* The walk lends the record. */
    Kfleet__Task *copy = kf_pb_copy(&task->base);
    rtask *rt = &r->tasks[r->ntasks++];
    memset(rt, 0, sizeof *rt);
    rt->task = copy;
    rt->kind = kf_task_kind_at(task->kind);
    int rc = kf_store_get_result(r->t, task->task_id, &rt->res);
    if (rc == KF_ENOTFOUND) {
        rt->res = NULL;
        rc = 0;
    }
    if (rc == 0 && rt->res && rt->kind->report == KF_REPORT_TIMING)
        rc = kf_store_foreach_sample(r->t, task->task_id, rt->res->attempt, sample_cb, rt);
    if (rc == 0) {
        const Kfleet__KernelRef *k = kf_rep_kref(r, task->kernel_index);
        struct attempt_ctx ac = {r, k && k->cuda && !rt->kind->builds, rt};
        rc = kf_store_foreach_attempt(r->t, task->task_id, attempt_cb, &ac);
        if (rt->natt == 1 && !rt->att[0].note)
            drop_attempts(rt);
    }
    int st = kf_rep_state_of(rt);
    if (st >= 0 && st <= KFLEET__TASK_STATE__SKIPPED)
        r->counts[st]++;
    return rc;
}

static int add_agent(rep *r, const char *id)
{
    if (!id || !*id)
        return 0;
    for (size_t k = 0; k < r->nagents; k++)
        if (strcmp(r->agents[k]->agent_id, id) == 0)
            return 0;
    Kfleet__AgentInfo *a = NULL;
    int rc = kf_store_get_agent(r->t, id, &a);
    if (rc == KF_ENOTFOUND)
        return 0; /* a pin to an agent that never registered: shown as "?" */
    if (rc)
        return rc;
    if (r->nagents == r->capagents) {
        size_t cap = r->capagents ? r->capagents * 2 : 8;
        r->agents = kf_xrealloc(r->agents, cap * sizeof *r->agents);
        r->capagents = cap;
    }
    r->agents[r->nagents++] = a;
    return 0;
}

static int collect_agents(rep *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->ntasks && !rc; i++) {
        rc = add_agent(r, kf_rep_node_of(&r->tasks[i]));
        if (!rc && r->tasks[i].res)
            rc = add_agent(r, r->tasks[i].res->agent_id);
    }
    return rc;
}

const Kfleet__AgentInfo *kf_rep_agent(const rep *r, const char *id)
{
    for (size_t k = 0; k < r->nagents; k++)
        if (strcmp(r->agents[k]->agent_id, id) == 0)
            return r->agents[k];
    return NULL;
}

const char *kf_rep_device_of(const rep *r, const char *node)
{
    const Kfleet__AgentInfo *a = kf_rep_agent(r, node);
    if (!a)
        return "?";
    return a->n_gpus ? kf_rep_nz(a->gpus[0]->name) : "cpu";
}

static rrow *row_for(rep *r, rtask *rt)
{
    const char *node = kf_rep_node_of(rt);
    int pinned = rt->task->pin_agent && *rt->task->pin_agent;
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        /* An unpinned task (`nodes: any`) joins its configuration's row
         * wherever the other task of the pair ran. */
        if (w->kernel == rt->task->kernel_index && w->config == rt->task->config_index &&
            (!pinned || strcmp(w->node, node) == 0)) {
            /* A task that never ran (a skipped profile) has no node: the
             * row's is its partner's. */
            if (!*w->node)
                w->node = node;
            return w;
        }
    }
    rrow *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    w->kernel = rt->task->kernel_index;
    w->config = rt->task->config_index;
    w->node = node;
    w->gbps = w->gflops = w->speedup = w->base_median = NAN;
    w->pct_bw = w->pct_mma = NAN;
    w->impossible_x = NAN;
    w->impossible_of = NULL;
    w->speedup_err = w->outlier_pct = NAN;
    w->host_call_s = w->speedup_host = NAN;
    kf_stats_compute(NULL, 0, &w->st);
    return w;
}

/* The build this row's code came from: the sweep's own build task for the
 * kernel on the node, else the store's build record for (node, kernel hash),
 * which may name a build of an earlier sweep. */
static int find_build(rep *r, rrow *w)
{
    const Kfleet__KernelRef *k = kf_rep_kref(r, w->kernel);
    for (size_t i = 0; i < r->ntasks; i++) {
        rtask *rt = &r->tasks[i];
        if (rt->kind->report == KF_REPORT_BUILD && rt->task->kernel_index == w->kernel &&
            strcmp(kf_rep_node_of(rt), w->node) == 0 && rt->res &&
            rt->res->state == KFLEET__TASK_STATE__SUCCEEDED) {
            w->build_task = rt->task->task_id;
            w->build = rt->res->build;
            return 0;
        }
    }
    if (!k || !k->hash || !*k->hash || !*w->node)
        return 0;
    Kfleet__BuildRecord *br = NULL;
    int rc = kf_store_get_build(r->t, w->node, k->hash, &br);
    if (rc)
        return rc == KF_ENOTFOUND ? 0 : rc;
    rc = kf_store_get_result(r->t, br->task_id, &w->own_build);
    if (rc == 0 && w->own_build->state == KFLEET__TASK_STATE__SUCCEEDED) {
        w->build_task = br->task_id;
        w->build = w->own_build->build;
    }
    kfleet__build_record__free_unpacked(br, NULL);
    return rc == KF_ENOTFOUND ? 0 : rc;
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
    const rrow *x = a, *y = b;
    const rep *r = ctx;
    int g = r->group_by == KF_GROUP_GPU
                ? strcmp(kf_rep_device_of(r, x->node), kf_rep_device_of(r, y->node))
            : r->group_by == KF_GROUP_NODE ? strcmp(x->node, y->node)
                                           : 0;
    if (g)
        return g;
    if (x->kernel != y->kernel)
        return x->kernel < y->kernel ? -1 : 1;
    if (x->config != y->config)
        return x->config < y->config ? -1 : 1;
    return strcmp(x->node, y->node);
}

double kf_rep_median_rel_se(const kf_stats *st)
{
    return st->n >= 2 && isfinite(st->noise_pct)
               ? 1.2533 * st->noise_pct / 100 / sqrt((double)st->n)
               : NAN;
}

/* Past a ceiling by this factor a row is impossible. The ceilings are the
 * doctor's measurements (one median each), below the hardware's peak: a
 * device memcpy reaches ~85-90 % of HBM peak, so a well-tuned kernel may
 * pass it by ~15 %; cuBLAS bf16 reaches ~75-80 % of the bf16 peak, and fp8
 * tensor cores double it. A host kernel's data may sit in caches that the
 * DRAM memcpy ceiling does not describe (L1/L2 move ~10x DRAM); its FLOP
 * ceiling is already a peak (every core's every lane). The factors
 * leave that and the measurements' noise room; what passes them is no
 * measurement of work done (docs/report-json.md). */
#define IMPOSSIBLE_COPY_X 1.5
#define IMPOSSIBLE_FLOPS_X 2.5
#define IMPOSSIBLE_HOST_COPY_X 20.0

/* TF32 keeps 10 of fp32's 23 mantissa bits: its unit roundoff is 2^-11.
 * An fp32 output whose tolerance admits that error may have come from
 * TF32 tensor cores; one held tighter (KernelBench's atol = rtol = 1e-4)
 * cannot have, and is judged by the fp32 FMA rate (issue 43). */
#define TF32_ROUNDOFF 4.8828125e-4

/* The matrix rate a GPU row's FLOP rate is judged by: its output's
 * dtype's (ProfileStats.output_dtype); bf16's for fp16, bf16, integer
 * outputs and an older agent's rows, as before. *of names it. */
static double mma_ceiling(const rrow *w, const Kfleet__AgentInfo *a, const char **of)
{
    const Kfleet__ProfileStats *ps =
        w->profile && w->profile->res ? w->profile->res->profile : NULL;
    const char *dt = ps && ps->output_dtype ? ps->output_dtype : "";
    const Kfleet__Result *vr = w->validate ? w->validate->res : NULL;
    double rel = vr ? (vr->rtol > 0 ? vr->rtol : vr->tol_rel) : 0;
    if (strcmp(dt, "f64") == 0 && a->ceiling_f64_tflops > 0) {
        *of = "fp64 matrix rate";
        return a->ceiling_f64_tflops;
    }
    if (strcmp(dt, "f32") == 0 && rel >= TF32_ROUNDOFF && a->ceiling_tf32_tflops > 0) {
        *of = "TF32 matrix rate";
        return a->ceiling_tf32_tflops;
    }
    if (strcmp(dt, "f32") == 0 && a->ceiling_f32_tflops > 0) {
        *of = "fp32 FMA rate";
        return a->ceiling_f32_tflops;
    }
    *of = "bf16 matrix rate";
    return a->ceiling_bf16_tflops;
}

void kf_rep_judge_possible(rrow *w, int cuda, const Kfleet__AgentInfo *a)
{
    if (!a)
        return;
    double host_ceiling = a->ceiling_host_copy_gbps > 0 ? a->ceiling_host_copy_gbps
                          : a->n_gpus == 0              ? a->ceiling_copy_gbps
                                                        : 0;
    const char *mma_of = NULL;
    double mma = cuda ? mma_ceiling(w, a, &mma_of) : 0;
    struct {
        double got, ceiling, x;
        const char *of;
    } checks[] = {
        {cuda ? w->gbps : NAN, a->ceiling_copy_gbps, IMPOSSIBLE_COPY_X, "copy bandwidth"},
        {cuda ? w->gflops / 1e3 : NAN, mma, IMPOSSIBLE_FLOPS_X, mma_of},
        {cuda ? NAN : w->gbps, host_ceiling, IMPOSSIBLE_HOST_COPY_X, "host copy bandwidth"},
        {cuda ? NAN : w->gflops, a->ceiling_host_gflops, IMPOSSIBLE_FLOPS_X, "host FLOP rate"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        double x = checks[i].got / checks[i].ceiling;
        if (checks[i].ceiling > 0 && isfinite(x) && x > checks[i].x && !(x <= w->impossible_x)) {
            w->impossible_x = x;
            w->impossible_of = checks[i].of;
        }
    }
}

/* Outlier nodes: a configuration that ran on three or more nodes, and a
 * node whose median is slower than the nodes' median by more than its
 * noise allows (3 standard errors of its median, and at least 2 %). Rows
 * are sorted by (kernel, configuration, node), so each configuration's
 * nodes are one run of rows. */
static void mark_outliers(rep *r)
{
    double *m = malloc((r->nrows ? r->nrows : 1) * sizeof *m);
    if (!m)
        return; /* the flag is an extra: the report stands without it */
    for (size_t g = 0, e; g < r->nrows; g = e) {
        size_t n = 0;
        for (e = g; e < r->nrows && r->rows[e].kernel == r->rows[g].kernel &&
                    r->rows[e].config == r->rows[g].config;
             e++)
            if (r->rows[e].st.n)
                m[n++] = r->rows[e].st.median;
        if (n < 3)
            continue;
        kf_stats_sort(m, n);
        double fleet = kf_stats_quantile(m, n, 0.5);
        for (size_t i = g; i < e; i++) {
            rrow *w = &r->rows[i];
            double slower = w->st.n ? w->st.median / fleet - 1 : NAN;
            if (slower > fmax(0.02, 3 * kf_rep_median_rel_se(&w->st)))
                w->outlier_pct = 100 * slower;
        }
    }
    free(m);
}

static int build_rows(rep *r)
{
    r->rows = kf_xcalloc(r->ntasks ? r->ntasks : 1, sizeof *r->rows);
    /* Profiles first, so that an unpinned row's node is where it was
     * measured and its validation joins it. */
    for (int pass = 0; pass < 2; pass++) {
        kf_report_as want = pass == 0 ? KF_REPORT_TIMING : KF_REPORT_VALIDATION;
        for (size_t i = 0; i < r->ntasks; i++) {
            rtask *rt = &r->tasks[i];
            if (rt->kind->report != want)
                continue;
            rrow *w = row_for(r, rt);
            if (want == KF_REPORT_TIMING && !w->profile)
                w->profile = rt;
            else if (want == KF_REPORT_VALIDATION && !w->validate)
                w->validate = rt;
        }
    }
    qsort_r(r->rows, r->nrows, sizeof *r->rows, cmp_rows, r);
    int rc = 0;
    for (size_t i = 0; i < r->nrows && !rc; i++) {
        rrow *w = &r->rows[i];
        rc = find_build(r, w);
        rtask *p = w->profile;
        if (rc || !p || !p->res || p->res->state != KFLEET__TASK_STATE__SUCCEEDED)
            continue;
        rc = kf_stats_compute_sets(p->samples, p->set, p->nsamples, &w->st);
        w->mismatch = p->nsamples + p->ndiscarded + p->naudit != p->res->sample_count;
        const Kfleet__ProfileStats *ps = p->res->profile;
        /* Noisy is the spread (issue 32), judged against the sweep's
         * max_noise; whether the median reached the precision asked for
         * is imprecise. A result from before the precision rule (no
         * target) is judged as then: not converged, noisy. */
        const Kfleet__MeasureSettings *ms = r->sw->measure;
        double limit = ms && ms->max_noise_pct > 0 ? ms->max_noise_pct : KF_REP_MAX_NOISE_PCT;
        if (ps && ps->precision_target_pct > 0) {
            w->noisy = isfinite(w->st.noise_pct) && w->st.noise_pct > limit;
            w->imprecise = !ps->converged;
        } else {
            w->noisy = ps && !ps->converged;
        }
        w->waits_capped = ps ? ps->waits_skipped : 0;
        w->sm_clock_mhz = kf_stats_median_u32(p->clk, p->nsamples);
        w->power_mw = kf_stats_median_u32(p->pw, p->nsamples);
        w->at_power_cap =
            ps && ps->throttle_keep && p->nsamples && 2 * p->nthrottled >= p->nsamples;
        w->outside_stream_s = ps ? ps->outside_stream_s : 0;
        if (ps && ps->host_call_s > 0)
            w->host_call_s = ps->host_call_s;
        if (ps && w->st.n && w->st.median > 0) {
            if (ps->bytes > 0)
                w->gbps = ps->bytes / w->st.median / 1e9;
            if (ps->flops > 0)
                w->gflops = ps->flops / w->st.median / 1e9;
        }
        /* GPU rows only: a GPU sample starts from a flushed L2, so the copy
         * ceiling bounds it; a host kernel's working set may sit in a last-
         * level cache that the DRAM memcpy ceiling does not describe. */
        const Kfleet__KernelRef *k = kf_rep_kref(r, w->kernel);
        const Kfleet__AgentInfo *a = k && k->cuda ? kf_rep_agent(r, w->node) : NULL;
        if (a && a->ceiling_copy_gbps > 0 && isfinite(w->gbps))
            w->pct_bw = 100 * w->gbps / a->ceiling_copy_gbps;
        if (a && a->ceiling_bf16_tflops > 0 && isfinite(w->gflops))
            w->pct_mma = 100 * w->gflops / 1e3 / a->ceiling_bf16_tflops;
        kf_rep_judge_possible(w, k && k->cuda, kf_rep_agent(r, w->node));
    }
    if (rc)
        return rc;
    mark_outliers(r);
    return 0;
}

void kf_rep_release(rep *r)
{
    for (size_t i = 0; i < r->ntasks; i++) {
        kfleet__task__free_unpacked(r->tasks[i].task, NULL);
        if (r->tasks[i].res)
            kfleet__result__free_unpacked(r->tasks[i].res, NULL);
        free(r->tasks[i].samples);
        free(r->tasks[i].clk);
        free(r->tasks[i].set);
        free(r->tasks[i].pw);
        drop_attempts(&r->tasks[i]);
    }
    free(r->tasks);
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].own_build)
            kfleet__result__free_unpacked(r->rows[i].own_build, NULL);
    free(r->rows);
    for (size_t i = 0; i < r->sched.nspans; i++)
        free(r->sched.spans[i].agent);
    free(r->sched.spans);
    for (size_t k = 0; k < r->nagents; k++)
        kfleet__agent_info__free_unpacked(r->agents[k], NULL);
    free(r->agents);
    if (r->sw)
        kfleet__sweep__free_unpacked(r->sw, NULL);
    memset(r, 0, sizeof *r);
}

/* The slots an agent gave the sweep (report_rows.h): GPU slots in a sweep with GPU tasks,
 * else CPU slots. */
uint32_t kf_rep_agent_slots(const Kfleet__AgentInfo *a, int gpu)
{
    return gpu ? (a->gpu_slots ? a->gpu_slots : (uint32_t)a->n_gpus)
               : (a->cpu_slots ? a->cpu_slots : 1);
}

void kf_rep_measured(const rep *r, const Kfleet__AgentInfo *a, double *timed_s, double *pct)
{
    int gpu = r->sched.gpu_attempts > 0;
    double t = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *w = &r->rows[i];
        if (!w->profile || (a && (!w->node || strcmp(w->node, a->agent_id) != 0)))
            continue;
        for (size_t k = 0; k < w->profile->nsamples; k++)
            t += w->profile->samples[k];
    }
    uint32_t slots = 0;
    for (size_t k = 0; k < r->nagents; k++)
        if (!a || r->agents[k] == a)
            slots += kf_rep_agent_slots(r->agents[k], gpu);
    *timed_s = t;
    *pct = NAN;
    if (slots && r->sw->finished_ns > r->sw->created_ns)
        *pct = t / ((double)(r->sw->finished_ns - r->sw->created_ns) / 1e9 * slots) * 100;
}

double kf_rep_runner_s(const Kfleet__Result *res)
{
    double s = res->elapsed_s;
    for (size_t p = 0; p < res->n_phases; p++)
        if (res->phases[p]->name && strcmp(res->phases[p]->name, "start") == 0)
            s += res->phases[p]->seconds;
    return s;
}

size_t kf_rep_slot_time(const rep *r, kf_rep_phase *out, double *total_s, double *outside_s,
                        double *idle_s)
{
    int gpu = r->sched.gpu_attempts > 0;
    uint32_t slots = 0;
    for (size_t k = 0; k < r->nagents; k++)
        slots += kf_rep_agent_slots(r->agents[k], gpu);
    *total_s = *outside_s = *idle_s = 0;
    if (!slots || r->sw->finished_ns <= r->sw->created_ns)
        return 0;
    size_t n = 0;
    double in_runners = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        const Kfleet__KernelRef *k = kf_rep_kref(r, rt->task->kernel_index);
        int on_gpu = !rt->kind->builds && k && k->cuda;
        if (!rt->res || on_gpu != gpu)
            continue;
        in_runners += kf_rep_runner_s(rt->res);
        for (size_t p = 0; p < rt->res->n_phases; p++) {
            const Kfleet__Phase *ph = rt->res->phases[p];
            size_t j = 0;
            while (j < n && strcmp(out[j].name, ph->name) != 0)
                j++;
            if (j == n && n == KF_REP_MAX_PHASES)
                continue;
            if (j == n)
                out[n++] = (kf_rep_phase){ph->name, 0};
            out[j].s += ph->seconds;
        }
    }
    double phased = 0;
    for (size_t j = 0; j < n; j++)
        phased += out[j].s;
    if (n < KF_REP_MAX_PHASES && in_runners > phased)
        out[n++] = (kf_rep_phase){"other in runners", in_runners - phased};
    double busy = gpu ? r->sched.gpu_busy_s : r->sched.cpu_busy_s;
    *total_s = (double)(r->sw->finished_ns - r->sw->created_ns) / 1e9 * slots;
    *outside_s = busy > in_runners ? busy - in_runners : 0;
    *idle_s = *total_s > busy ? *total_s - busy : 0;
    return n;
}

void kf_rep_schedule_figures(const rep *r, double *makespan_s, double *startup_s, double *ideal_s,
                             double *over_pct)
{
    const rschedule *s = &r->sched;
    int gpu = s->gpu_attempts > 0;
    uint32_t slots = 0;
    for (size_t k = 0; k < r->nagents; k++)
        slots += kf_rep_agent_slots(r->agents[k], gpu);
    *makespan_s = r->sw->finished_ns && r->sw->finished_ns > r->sw->created_ns
                      ? (double)(r->sw->finished_ns - r->sw->created_ns) / 1e9
                      : NAN;
    *startup_s = *ideal_s = *over_pct = NAN;
    uint64_t first = gpu ? s->first_gpu_assign_ns : s->first_assign_ns;
    if (!slots || !first || first < r->sw->created_ns)
        return;
    *startup_s = (double)(first - r->sw->created_ns) / 1e9;
    *ideal_s = *startup_s + (gpu ? s->gpu_busy_s : s->cpu_busy_s) / slots;
    if (!isnan(*makespan_s))
        *over_pct = (*makespan_s / *ideal_s - 1) * 100;
}

/* --baseline: one of the sweep's kernels, which then stands as its baseline. */
static int set_baseline(rep *r, const char *name, kf_err *err)
{
    kf_buf names = KF_BUF_INIT;
    for (size_t i = 0; i < r->sw->n_kernels; i++) {
        if (strcmp(r->sw->kernels[i]->name, name) == 0) {
            char *copy = kf_xstrdup(name);
            kf_buf_release(&names);
            /* The unpacked message's own string (free_unpacked frees ours
             * with the same malloc), unless it is protobuf-c's shared "". */
            if (r->sw->baseline != protobuf_c_empty_string)
                free(r->sw->baseline);
            r->sw->baseline = copy;
            return KF_OK;
        }
        kf_buf_addf(&names, "%s%s", i ? ", " : "", r->sw->kernels[i]->name);
    }
    kf_err_set(err, KF_EINVAL, "--baseline %s is not a kernel of sweep %u; its kernels: %s", name,
               r->sw->sweep_id, names.data ? names.data : "(none)");
    kf_buf_release(&names);
    return KF_EINVAL;
}

int kf_rep_collect(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts, rep *r, kf_err *err)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->group_by = opts->group_by;
    r->provenance = opts->provenance;
    int rc = kf_store_get_sweep(t, sweep_id, &r->sw);
    if (rc == KF_ENOTFOUND)
        return kf_err_set(err, KF_ENOTFOUND,
                          "no sweep %u in this store; `kfleet status` lists the sweeps", sweep_id);
    if (rc)
        return kf_err_set(err, rc, "cannot read sweep %u from the store: %s", sweep_id,
                          kf_strerror(rc));
    if (opts->baseline && (rc = set_baseline(r, opts->baseline, err)) != KF_OK) {
        kf_rep_release(r);
        return rc;
    }
    const char *what = "reading its tasks and results";
    rc = kf_store_foreach_task(t, sweep_id, task_cb, r);
    if (!rc) {
        what = "reading its agents and builds";
        rc = collect_agents(r);
    }
    if (!rc)
        rc = build_rows(r);
    for (size_t i = 0; !rc && i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        w->kref = kf_rep_kref(r, w->kernel);
        w->agent = kf_rep_agent(r, w->node);
        w->kernel_name = kf_rep_kernel_name(r, w->kernel);
        w->declared = kf_rep_declared_name(r, w);
        w->device = kf_rep_device_of(r, w->node);
    }
    if (rc) {
        kf_rep_release(r);
        return kf_err_set(err, rc, "sweep %u: failed %s: %s", sweep_id, what, kf_strerror(rc));
    }
    return KF_OK;
}
