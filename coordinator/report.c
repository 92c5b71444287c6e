/* report — a sweep's stored records turned into the report people read and
 * the JSON scripts read; see report.h and docs/report-json.md.
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
 * there is no profile). Statistics are recomputed from the stored samples
 * (stats.h); the count shown is the stored one, and a profile whose agent
 * claimed another count is flagged samples-mismatch. Speedup compares a row
 * with the baseline kernel's row of the same configuration on the same node
 * (every axis of the baseline present with the same value); a kernel with
 * other axes has no speedup rather than one against a different problem.
 *
 * The renderers — aligned table, Markdown, JSON — all read the same
 * collected rows, so the formats cannot disagree; HTML (report_html.c) and
 * CSV (report_csv.c) are rendered from the JSON. */
#include "report_int.h"
#include "report_csv.h"
#include "report_html.h"
#include "stats.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kf_report_parse_format(const char *s)
{
    if (!s)
        return -1;
    if (strcmp(s, "table") == 0)
        return KF_REPORT_TABLE;
    if (strcmp(s, "md") == 0 || strcmp(s, "markdown") == 0)
        return KF_REPORT_MD;
    if (strcmp(s, "json") == 0)
        return KF_REPORT_JSON;
    if (strcmp(s, "html") == 0)
        return KF_REPORT_HTML;
    if (strcmp(s, "csv") == 0)
        return KF_REPORT_CSV;
    return -1;
}

int kf_report_parse_group(const char *s)
{
    static const char *const names[] = {"kernel", "gpu", "node"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

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
    [KFLEET__TASK_STATE__CANCELLED] = "cancelled",
};

const char *kf_rep_state_name(int st)
{
    size_t n = sizeof state_names / sizeof state_names[0];
    return st >= 0 && (size_t)st < n && state_names[st] ? state_names[st] : "unknown";
}

static const char *state_text(int st)
{
    return st == KFLEET__TASK_STATE__TIMED_OUT ? "timed out" : kf_rep_state_name(st);
}

const char *kf_rep_kind_name(int k)
{
    static const char *const names[] = {
        [KFLEET__TASK_KIND__BUILD] = "build",
        [KFLEET__TASK_KIND__VALIDATE] = "validate",
        [KFLEET__TASK_KIND__PROFILE] = "profile",
        [KFLEET__TASK_KIND__DOCTOR] = "doctor",
    };
    return k > 0 && (size_t)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
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

static void params_str(const Kfleet__Task *t, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < t->n_params && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", i ? " " : "",
                                kf_rep_nz(t->params[i]->name), (long long)t->params[i]->value);
}

/* Copies the first line of s, cut to at most max bytes on a UTF-8 boundary
 * with "..." when cut, so one long compiler message cannot widen a column
 * past the screen. */
static void first_line(const char *s, char *out, size_t len, size_t max)
{
    s = kf_rep_nz(s);
    size_t n = strcspn(s, "\r\n"), cut = 0;
    if (max + 4 > len)
        max = len - 4;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
        cut = 1;
    }
    memcpy(out, s, n);
    strcpy(out + n, cut ? "..." : "");
}

static int display_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* Times with the unit a person reads best: ns, µs, ms or s. */
static double unit_of(double s, const char **name)
{
    if (s < 1e-6) {
        *name = "ns";
        return 1e9;
    }
    if (s < 1e-3) {
        *name = "\xC2\xB5s";
        return 1e6;
    }
    if (s < 1) {
        *name = "ms";
        return 1e3;
    }
    *name = "s";
    return 1;
}

static void fmt_time(double s, char *out, size_t len)
{
    const char *u;
    if (!isfinite(s) || s < 0) {
        snprintf(out, len, "-");
        return;
    }
    double k = unit_of(s, &u);
    snprintf(out, len, "%.3f %s", s * k, u);
}

/* Three significant digits without an exponent: 1.23, 12.3, 123, 12345. */
static void fmt_short(double v, char *out, size_t len)
{
    int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    snprintf(out, len, "%.*f", decimals, v);
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
    if (rt->nsamples == rt->cap) {
        size_t cap = rt->cap ? rt->cap * 2 : 64;
        double *p = realloc(rt->samples, cap * sizeof *p);
        if (!p)
            return KF_ENOMEM;
        rt->samples = p;
        rt->cap = cap;
    }
    rt->samples[rt->nsamples++] = s->seconds;
    rt->nthrottled += s->throttled != 0;
    return 0;
}

struct attempt_ctx {
    rep *r;
    int gpu;
};

static int attempt_cb(void *ctx, const Kfleet__Attempt *a)
{
    struct attempt_ctx *ac = ctx;
    rschedule *s = &ac->r->sched;
    if (!a->assigned_ns || a->ended_ns < a->assigned_ns)
        return 0;
    double d = (double)(a->ended_ns - a->assigned_ns) / 1e9;
    if (!s->first_assign_ns || a->assigned_ns < s->first_assign_ns)
        s->first_assign_ns = a->assigned_ns;
    if (a->ended_ns > s->last_end_ns)
        s->last_end_ns = a->ended_ns;
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
        rtask *p = realloc(r->tasks, cap * sizeof *p);
        if (!p)
            return KF_ENOMEM;
        r->tasks = p;
        r->cap = cap;
    }
    /* The walk lends the record; a pack/unpack round trip is the deep copy
     * protobuf-c offers. */
    size_t n = kfleet__task__get_packed_size(task);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return KF_ENOMEM;
    kfleet__task__pack(task, b);
    Kfleet__Task *copy = kfleet__task__unpack(NULL, n, b);
    free(b);
    if (!copy)
        return KF_ENOMEM;
    rtask *rt = &r->tasks[r->ntasks++];
    memset(rt, 0, sizeof *rt);
    rt->task = copy;
    int rc = kf_store_get_result(r->t, task->task_id, &rt->res);
    if (rc == KF_ENOTFOUND) {
        rt->res = NULL;
        rc = 0;
    }
    if (rc == 0 && rt->res && task->kind == KFLEET__TASK_KIND__PROFILE)
        rc = kf_store_foreach_sample(r->t, task->task_id, rt->res->attempt, sample_cb, rt);
    if (rc == 0) {
        const Kfleet__KernelRef *k = kf_rep_kref(r, task->kernel_index);
        struct attempt_ctx ac = {r, k && k->cuda && task->kind != KFLEET__TASK_KIND__BUILD};
        rc = kf_store_foreach_attempt(r->t, task->task_id, attempt_cb, &ac);
    }
    int st = kf_rep_state_of(rt);
    if (st >= 0 && st <= KFLEET__TASK_STATE__CANCELLED)
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
        Kfleet__AgentInfo **p = realloc(r->agents, cap * sizeof *p);
        if (!p) {
            kfleet__agent_info__free_unpacked(a, NULL);
            return KF_ENOMEM;
        }
        r->agents = p;
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
            (!pinned || strcmp(w->node, node) == 0))
            return w;
    }
    rrow *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    w->kernel = rt->task->kernel_index;
    w->config = rt->task->config_index;
    w->node = node;
    w->gbps = w->gflops = w->speedup = w->base_median = NAN;
    w->pct_bw = w->pct_mma = NAN;
    w->speedup_err = w->outlier_pct = NAN;
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
        if (rt->task->kind == KFLEET__TASK_KIND__BUILD && rt->task->kernel_index == w->kernel &&
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

/* The parameters of a row's task (profile, else validation). */
static const Kfleet__Task *task_of(const rrow *w)
{
    return (w->profile ? w->profile : w->validate)->task;
}

/* Whether baseline row b runs the configuration row w runs: every axis of
 * b is an axis of w with the same value, and they share at least one. So
 * gemm_bf16 {m, n, k, impl} compares with gemm_cublas {m, n, k}, and a
 * kernel with other axes (copy {bytes}) has no baseline rather than a
 * meaningless one. */
static int same_config(const rrow *b, const rrow *w)
{
    const Kfleet__Task *tb = task_of(b), *tw = task_of(w);
    if (tb->n_params == 0)
        return 0;
    for (size_t i = 0; i < tb->n_params; i++) {
        size_t j = 0;
        while (j < tw->n_params && strcmp(tw->params[j]->name, tb->params[i]->name) != 0)
            j++;
        if (j == tw->n_params || tw->params[j]->value != tb->params[i]->value)
            return 0;
    }
    return 1;
}

/* The standard error of a median relative to it, from the robust noise:
 * 1.2533 sigma / sqrt(n), sigma = noise * median. */
static double median_rel_se(const kf_stats *st)
{
    return st->n >= 2 && isfinite(st->noise_pct)
               ? 1.2533 * st->noise_pct / 100 / sqrt((double)st->n)
               : NAN;
}

/* Speedup of each row against the baseline kernel's row of the same
 * configuration on the same node, with the uncertainty of the ratio. The
 * baseline's rows are gathered first: rows x baseline rows, not rows^2. */
static void compare_baseline(rep *r)
{
    const rrow **base = malloc((r->nrows ? r->nrows : 1) * sizeof *base);
    size_t nb = 0;
    if (!base)
        return; /* no speedups: the report stands without them */
    for (size_t j = 0; j < r->nrows; j++) {
        const rrow *b = &r->rows[j];
        if (b->st.n && b->st.median > 0 &&
            strcmp(kf_rep_kernel_name(r, b->kernel), r->sw->baseline) == 0)
            base[nb++] = b;
    }
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        if (!w->st.n || !(w->st.median > 0))
            continue;
        for (size_t j = 0; j < nb; j++) {
            const rrow *b = base[j];
            if (strcmp(b->node, w->node) != 0 || !same_config(b, w))
                continue;
            w->base_median = b->st.median;
            w->speedup = b->st.median / w->st.median;
            double eb = median_rel_se(&b->st), ew = median_rel_se(&w->st);
            /* The baseline against itself is the same samples: exactly 1. */
            w->speedup_err = b == w ? 0 : w->speedup * sqrt(eb * eb + ew * ew);
            break;
        }
    }
    free(base);
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
            if (slower > fmax(0.02, 3 * median_rel_se(&w->st)))
                w->outlier_pct = 100 * slower;
        }
    }
    free(m);
}

static int build_rows(rep *r)
{
    r->rows = calloc(r->ntasks ? r->ntasks : 1, sizeof *r->rows);
    if (!r->rows)
        return KF_ENOMEM;
    /* Profiles first, so that an unpinned row's node is where it was
     * measured and its validation joins it. */
    for (int pass = 0; pass < 2; pass++) {
        int want = pass == 0 ? KFLEET__TASK_KIND__PROFILE : KFLEET__TASK_KIND__VALIDATE;
        for (size_t i = 0; i < r->ntasks; i++) {
            rtask *rt = &r->tasks[i];
            if ((int)rt->task->kind != want)
                continue;
            rrow *w = row_for(r, rt);
            if (want == KFLEET__TASK_KIND__PROFILE && !w->profile)
                w->profile = rt;
            else if (want == KFLEET__TASK_KIND__VALIDATE && !w->validate)
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
        rc = kf_stats_compute(p->samples, p->nsamples, &w->st);
        w->mismatch = p->nsamples != p->res->sample_count;
        const Kfleet__ProfileStats *ps = p->res->profile;
        w->noisy = ps && !ps->converged;
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
    }
    if (rc)
        return rc;
    mark_outliers(r);
    if (r->sw->baseline && *r->sw->baseline)
        compare_baseline(r);
    return 0;
}

static void rep_free(rep *r)
{
    for (size_t i = 0; i < r->ntasks; i++) {
        kfleet__task__free_unpacked(r->tasks[i].task, NULL);
        if (r->tasks[i].res)
            kfleet__result__free_unpacked(r->tasks[i].res, NULL);
        free(r->tasks[i].samples);
    }
    free(r->tasks);
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].own_build)
            kfleet__result__free_unpacked(r->rows[i].own_build, NULL);
    free(r->rows);
    for (size_t k = 0; k < r->nagents; k++)
        kfleet__agent_info__free_unpacked(r->agents[k], NULL);
    free(r->agents);
    if (r->sw)
        kfleet__sweep__free_unpacked(r->sw, NULL);
}

/* ---- table and Markdown ---- */

enum { CELL = 192 };

/* A grid of cells rendered either aligned (with colour) or as a GitHub
 * table; `color_of` picks a cell's ANSI colour, NULL for none. */
typedef struct grid {
    int ncols;
    const char *const *names;
    const int *right;
    char (*cells)[CELL]; /* nrows * ncols */
    size_t nrows;
    const char *(*color_of)(int col, const char *text);
    unsigned hide; /* bit c set: column c is left out */
} grid;

static void md_cell(kf_buf *out, const char *s)
{
    kf_buf_addc(out, ' ');
    for (; *s; s++) {
        if (*s == '|')
            kf_buf_addc(out, '\\');
        kf_buf_addc(out, *s);
    }
    kf_buf_adds(out, " |");
}

static void grid_render(const grid *g, int md, int color, kf_buf *out)
{
    if (md) {
        kf_buf_addc(out, '|');
        for (int c = 0; c < g->ncols; c++)
            if (!(g->hide >> c & 1))
                md_cell(out, g->names[c]);
        kf_buf_adds(out, "\n|");
        for (int c = 0; c < g->ncols; c++)
            if (!(g->hide >> c & 1))
                kf_buf_adds(out, g->right[c] ? " ---: |" : " --- |");
        kf_buf_addc(out, '\n');
        for (size_t i = 0; i < g->nrows; i++) {
            kf_buf_addc(out, '|');
            for (int c = 0; c < g->ncols; c++)
                if (!(g->hide >> c & 1))
                    md_cell(out, g->cells[i * (size_t)g->ncols + (size_t)c]);
            kf_buf_addc(out, '\n');
        }
        return;
    }
    int width[16] = {0};
    for (int c = 0; c < g->ncols; c++) {
        width[c] = display_width(g->names[c]);
        for (size_t i = 0; i < g->nrows; i++) {
            int w = display_width(g->cells[i * (size_t)g->ncols + (size_t)c]);
            width[c] = w > width[c] ? w : width[c];
        }
    }
    for (int c = 0; c < g->ncols; c++) {
        if (g->hide >> c & 1)
            continue;
        kf_buf_adds(out, "  ");
        kf_buf_addpad(out, g->names[c], c + 1 < g->ncols ? width[c] : 0, g->right[c]);
    }
    kf_buf_addc(out, '\n');
    for (size_t i = 0; i < g->nrows; i++) {
        for (int c = 0; c < g->ncols; c++) {
            if (g->hide >> c & 1)
                continue;
            const char *s = g->cells[i * (size_t)g->ncols + (size_t)c];
            const char *col = color && g->color_of ? g->color_of(c, s) : NULL;
            kf_buf_adds(out, "  ");
            if (col)
                kf_buf_adds(out, col);
            /* The last column is not padded: no trailing blanks. */
            kf_buf_addpad(out, s, c + 1 < g->ncols ? width[c] : 0, g->right[c]);
            if (col)
                kf_buf_adds(out, "\033[0m");
        }
        /* An empty last cell would leave the separator dangling. */
        while (out->len && out->data[out->len - 1] == ' ')
            out->data[--out->len] = '\0';
        kf_buf_addc(out, '\n');
    }
}

#define GREEN "\033[32m"
#define RED "\033[31m"
#define YELLOW "\033[33m"

enum {
    R_KERNEL,
    R_PARAMS,
    R_NODE,
    R_DEVICE,
    R_VALID,
    R_SAMPLES,
    R_MEDIAN,
    R_SPREAD,
    R_NOISE,
    R_GBPS,
    R_GFLOPS,
    R_CEIL,
    R_SPEEDUP,
    R_FLAGS,
    R_N
};
static const char *const row_names[R_N] = {"kernel",  "params",   "node",    "device", "validation",
                                           "samples", "median",   "min-max", "noise",  "GB/s",
                                           "GFLOP/s", "%ceiling", "speedup", "flags"};
static const int row_right[R_N] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0};

static const char *row_color(int col, const char *s)
{
    if (col == R_VALID)
        return strncmp(s, "pass", 4) == 0 ? GREEN : strncmp(s, "FAIL", 4) == 0 ? RED : NULL;
    if (col == R_FLAGS && *s)
        return strstr(s, "failed") || strstr(s, "timed out") ? RED : YELLOW;
    return NULL;
}

static void validation_str(const rrow *w, char *out, size_t len)
{
    const rtask *v = w->validate;
    if (!v) {
        snprintf(out, len, "-");
        return;
    }
    if (!kf_state_terminal(kf_rep_state_of(v))) {
        snprintf(out, len, "%s", kf_rep_state_name(kf_rep_state_of(v)));
        return;
    }
    if (kf_rep_state_of(v) == KFLEET__TASK_STATE__CANCELLED) {
        snprintf(out, len, "cancelled");
        return;
    }
    double mx = 0;
    size_t n = v->res ? v->res->n_trials : 0;
    for (size_t i = 0; i < n; i++)
        mx = v->res->trials[i]->max_abs_err > mx ? v->res->trials[i]->max_abs_err : mx;
    const char *word = kf_rep_state_of(v) == KFLEET__TASK_STATE__SUCCEEDED ? "pass" : "FAIL";
    if (n)
        snprintf(out, len, "%s %.1e/%zu seed%s", word, mx, n, n == 1 ? "" : "s");
    else
        snprintf(out, len, "%s", word);
}

/* The flags of a row, for people: "failed: <first line>" names the task that
 * failed and why. */
static void flags_str(const rrow *w, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (off < len)                                                                             \
            off += (size_t)snprintf(out + off, len - off, "%s", off ? ", " : "");                  \
        if (off < len)                                                                             \
            off += (size_t)snprintf(out + off, len - off, __VA_ARGS__);                            \
    } while (0)
    if (w->noisy)
        ADD("noisy");
    if (isfinite(w->outlier_pct))
        ADD("outlier node +%.0f%%", w->outlier_pct);
    if (w->profile && w->profile->nthrottled)
        ADD("throttled");
    if (w->mismatch)
        ADD("samples-mismatch");
    if (w->build && w->build->jit_fallback)
        ADD("jit-fallback");
    const Kfleet__ProfileStats *hp =
        w->profile && w->profile->res ? w->profile->res->profile : NULL;
    if (hp && hp->hot)
        ADD("hot");
    if (hp && hp->batch > 1)
        ADD("batch %u", hp->batch);
    const rtask *both[2] = {w->validate, w->profile};
    for (int i = 0; i < 2; i++) {
        const rtask *t = both[i];
        if (!t)
            continue;
        int st = kf_rep_state_of(t);
        char line[96];
        first_line(kf_rep_err_of(t), line, sizeof line, 60);
        if (kf_rep_is_failure(st))
            ADD("%s failed: %s", kf_rep_kind_name((int)t->task->kind),
                *line ? line : state_text(st));
        else if (st == KFLEET__TASK_STATE__CANCELLED && i == 1)
            ADD("profile cancelled");
        else if (!kf_state_terminal(st) && i == 1)
            ADD("profile %s", kf_rep_state_name(st));
    }
#undef ADD
}

static void row_cells(const rep *r, const rrow *w, char (*cells)[CELL])
{
    const rtask *any = w->profile ? w->profile : w->validate;
    snprintf(cells[R_KERNEL], CELL, "%s", kf_rep_kernel_name(r, w->kernel));
    params_str(any->task, cells[R_PARAMS], CELL);
    snprintf(cells[R_NODE], CELL, "%s", *w->node ? w->node : "-");
    snprintf(cells[R_DEVICE], CELL, "%s", kf_rep_device_of(r, w->node));
    validation_str(w, cells[R_VALID], CELL);
    for (int c = R_SAMPLES; c <= R_SPEEDUP; c++)
        snprintf(cells[c], CELL, "-");
    if (w->st.n) {
        const char *u;
        double k = unit_of(w->st.median, &u);
        snprintf(cells[R_SAMPLES], CELL, "%zu", w->st.n);
        fmt_time(w->st.median, cells[R_MEDIAN], CELL);
        /* Both ends in the median's unit, so the range reads at a glance. */
        char lo[32], hi[32];
        fmt_short(w->st.min * k, lo, sizeof lo);
        fmt_short(w->st.max * k, hi, sizeof hi);
        snprintf(cells[R_SPREAD], CELL, "%s\xE2\x80\x93%s %s", lo, hi, u);
        if (isfinite(w->st.noise_pct))
            snprintf(cells[R_NOISE], CELL, "%.1f%%", w->st.noise_pct);
    } else if (w->profile && w->profile->nsamples) {
        snprintf(cells[R_SAMPLES], CELL, "%zu", w->profile->nsamples);
    }
    if (isfinite(w->gbps))
        snprintf(cells[R_GBPS], CELL, "%.2f", w->gbps);
    if (isfinite(w->gflops))
        snprintf(cells[R_GFLOPS], CELL, "%.2f", w->gflops);
    /* The nearer ceiling says what bounds the kernel: bandwidth or matrix. */
    int bw = isfinite(w->pct_bw) && !(w->pct_mma > w->pct_bw);
    if (bw || isfinite(w->pct_mma))
        snprintf(cells[R_CEIL], CELL, "%.0f%% %s", bw ? w->pct_bw : w->pct_mma, bw ? "bw" : "mma");
    if (isfinite(w->speedup) && isfinite(w->speedup_err))
        snprintf(cells[R_SPEEDUP], CELL, "%.2fx \xC2\xB1%.2f", w->speedup, w->speedup_err);
    else if (isfinite(w->speedup))
        snprintf(cells[R_SPEEDUP], CELL, "%.2fx", w->speedup);
    flags_str(w, cells[R_FLAGS], CELL);
}

enum { B_KERNEL, B_NODE, B_STATUS, B_CACHED, B_COMPILE, B_ARTIFACT, B_ERROR, B_N };
static const char *const build_names[B_N] = {"kernel",  "node",     "status", "cached",
                                             "compile", "artifact", "error"};
static const int build_right[B_N] = {0, 0, 0, 0, 1, 0, 0};

static const char *build_color(int col, const char *s)
{
    if (col != B_STATUS)
        return NULL;
    if (strcmp(s, "succeeded") == 0)
        return GREEN;
    return strcmp(s, "failed") == 0 || strcmp(s, "timed out") == 0 ? RED : YELLOW;
}

static void build_cells(const rep *r, const rtask *rt, char (*cells)[CELL])
{
    const Kfleet__BuildInfo *b = rt->res ? rt->res->build : NULL;
    int ok = kf_rep_state_of(rt) == KFLEET__TASK_STATE__SUCCEEDED;
    snprintf(cells[B_KERNEL], CELL, "%s", kf_rep_kernel_name(r, rt->task->kernel_index));
    snprintf(cells[B_NODE], CELL, "%s", *kf_rep_node_of(rt) ? kf_rep_node_of(rt) : "-");
    snprintf(cells[B_STATUS], CELL, "%s", state_text(kf_rep_state_of(rt)));
    snprintf(cells[B_CACHED], CELL, "%s", b && ok ? (b->cached ? "yes" : "no") : "-");
    if (b && ok)
        fmt_time(b->compile_s, cells[B_COMPILE], CELL);
    else
        snprintf(cells[B_COMPILE], CELL, "-");
    snprintf(cells[B_ARTIFACT], CELL, "%.12s",
             b && b->artifact_hash && *b->artifact_hash ? b->artifact_hash : "-");
    if (kf_rep_is_failure(kf_rep_state_of(rt)) ||
        kf_rep_state_of(rt) == KFLEET__TASK_STATE__CANCELLED)
        first_line(kf_rep_err_of(rt), cells[B_ERROR], CELL, 100);
    else
        cells[B_ERROR][0] = '\0';
}

void kf_rep_schedule_figures(const rep *r, double *makespan_s, double *startup_s, double *ideal_s,
                             double *over_pct)
{
    const rschedule *s = &r->sched;
    int gpu = s->gpu_attempts > 0;
    uint32_t slots = 0;
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        slots += gpu ? (a->gpu_slots ? a->gpu_slots : (uint32_t)a->n_gpus)
                     : (a->cpu_slots ? a->cpu_slots : 1);
    }
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

static void render_schedule(const rep *r, int md, kf_buf *out)
{
    double makespan, startup, ideal, over;
    kf_rep_schedule_figures(r, &makespan, &startup, &ideal, &over);
    if (isnan(makespan))
        return;
    const rschedule *s = &r->sched;
    kf_buf_addf(out, "%sschedule: makespan %.2f s; CPU tasks %.2f s (%u attempts)",
                md ? "- " : "  ", makespan, s->cpu_busy_s, s->cpu_attempts);
    if (s->gpu_attempts)
        kf_buf_addf(out, ", GPU tasks %.2f s (%u attempts)", s->gpu_busy_s, s->gpu_attempts);
    if (!isnan(ideal))
        kf_buf_addf(out, "; ideal %.2f s = start-up %.2f s + %s task time / %s slots: %+.1f%%",
                    ideal, startup, s->gpu_attempts ? "GPU" : "CPU",
                    s->gpu_attempts ? "GPU" : "CPU", over);
    kf_buf_addc(out, '\n');
}

static void render_header(const rep *r, int md, kf_buf *out)
{
    char created[32], finished[32];
    kf_rep_fmt_iso(r->sw->created_ns, created, sizeof created);
    kf_rep_fmt_iso(r->sw->finished_ns, finished, sizeof finished);
    if (md)
        kf_buf_addf(out, "# Sweep %u: %s\n\n- file: `%s`\n- created %s, finished %s\n- tasks: ",
                    r->sw->sweep_id, kf_rep_nz(r->sw->name), kf_rep_nz(r->sw->file), created,
                    r->sw->finished_ns ? finished : "not yet");
    else
        kf_buf_addf(out, "sweep %u: %s (%s)\n  created %s, finished %s\n  tasks: ", r->sw->sweep_id,
                    kf_rep_nz(r->sw->name), kf_rep_nz(r->sw->file), created,
                    r->sw->finished_ns ? finished : "not yet");
    kf_buf_addf(out, "%zu", r->ntasks);
    const char *sep = " (";
    for (int st = KFLEET__TASK_STATE__SUCCEEDED; st <= KFLEET__TASK_STATE__CANCELLED; st++) {
        kf_buf_addf(out, "%s%u %s", sep, r->counts[st], state_text(st));
        sep = ", ";
    }
    for (int st = KFLEET__TASK_STATE__PENDING; st <= KFLEET__TASK_STATE__RUNNING; st++)
        if (r->counts[st])
            kf_buf_addf(out, ", %u %s", r->counts[st], state_text(st));
    kf_buf_adds(out, ")\n");
    render_schedule(r, md, out);
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        kf_buf_addf(out, "%snode %s: %s, %s", md ? "- " : "  ", kf_rep_nz(a->agent_id),
                    kf_rep_nz(a->hostname),
                    a->n_gpus ? kf_rep_nz(a->gpus[0]->name) : kf_rep_nz(a->cpu_model));
        if (a->n_gpus > 1)
            kf_buf_addf(out, " (x%zu)", a->n_gpus);
        if (a->driver_version && *a->driver_version)
            kf_buf_addf(out, ", driver %s", a->driver_version);
        kf_buf_addc(out, '\n');
    }
    if (r->sw->baseline && *r->sw->baseline)
        kf_buf_addf(out,
                    "%sspeedup: against %s in the same configuration on the same node "
                    "(\xC2\xB1 one standard error)\n",
                    md ? "- " : "  ", r->sw->baseline);
}

/* --provenance: where each row's numbers come from, one line each. */
static void render_provenance(const rep *r, int md, kf_buf *out)
{
    kf_buf_adds(out, md ? "\n## Provenance\n\n" : "\nprovenance:\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *w = &r->rows[i];
        const rtask *any = w->profile ? w->profile : w->validate;
        const Kfleet__AgentInfo *a = kf_rep_agent(r, w->node);
        const Kfleet__KernelRef *k = kf_rep_kref(r, w->kernel);
        const Kfleet__TelemetrySummary *ts =
            w->profile && w->profile->res ? w->profile->res->telemetry : NULL;
        char params[256];
        params_str(any->task, params, sizeof params);
        kf_buf_addf(out, "%s%s %s on %s:", md ? "- " : "  ", kf_rep_kernel_name(r, w->kernel),
                    params, *w->node ? w->node : "-");
        if (a && a->n_gpus)
            kf_buf_addf(out, " %s %s,", kf_rep_nz(a->gpus[0]->name), kf_rep_nz(a->gpus[0]->uuid));
        else if (a)
            kf_buf_addf(out, " %s,", kf_rep_nz(a->cpu_model));
        if (a && a->driver_version && *a->driver_version)
            kf_buf_addf(out, " driver %s,", a->driver_version);
        if (ts && ts->readings)
            kf_buf_addf(out, " SM %u-%u MHz, mem %u-%u MHz over %u readings,", ts->sm_clock_min_mhz,
                        ts->sm_clock_max_mhz, ts->mem_clock_min_mhz, ts->mem_clock_max_mhz,
                        ts->readings);
        if (w->build && w->build->compiler && *w->build->compiler)
            kf_buf_addf(out, " %s,", w->build->compiler);
        kf_buf_addf(out, " source %.12s, binary %.12s, kfleet %s\n", k ? kf_rep_nz(k->hash) : "-",
                    w->build ? kf_rep_nz(w->build->artifact_hash) : "-",
                    a && a->version && *a->version ? a->version : KF_VERSION);
    }
}

static int render_text(const rep *r, int md, int color, kf_buf *out)
{
    render_header(r, md, out);
    size_t nb = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        nb += r->tasks[i].task->kind == KFLEET__TASK_KIND__BUILD;
    size_t n = (r->nrows > nb ? r->nrows : nb) + 1;
    char(*cells)[CELL] = calloc(n * R_N, sizeof *cells);
    if (!cells)
        return KF_ENOMEM;

    kf_buf_adds(out, md ? "\n## Results\n\n" : "\nresults:\n");
    for (size_t i = 0; i < r->nrows; i++)
        row_cells(r, &r->rows[i], &cells[i * R_N]);
    /* Without a baseline the speedup column would be all dashes. */
    unsigned hide = r->sw->baseline && *r->sw->baseline ? 0 : 1u << R_SPEEDUP;
    /* Likewise %ceiling on a sweep of host kernels (see the ceilings above). */
    int any_ceil = 0;
    for (size_t i = 0; i < r->nrows; i++)
        any_ceil |= isfinite(r->rows[i].pct_bw) || isfinite(r->rows[i].pct_mma);
    if (!any_ceil)
        hide |= 1u << R_CEIL;
    grid g = {R_N, row_names, row_right, cells, r->nrows, row_color, hide};
    if (r->nrows)
        grid_render(&g, md, color, out);
    else
        kf_buf_adds(out,
                    md ? "No validate or profile tasks.\n" : "  (no validate or profile tasks)\n");

    if (r->provenance)
        render_provenance(r, md, out);

    if (nb) {
        kf_buf_adds(out, md ? "\n## Builds\n\n" : "\nbuilds:\n");
        size_t k = 0;
        for (size_t i = 0; i < r->ntasks; i++)
            if (r->tasks[i].task->kind == KFLEET__TASK_KIND__BUILD)
                build_cells(r, &r->tasks[i], &cells[k++ * B_N]);
        grid gb = {B_N, build_names, build_right, cells, nb, build_color, 0};
        grid_render(&gb, md, color, out);
    }
    free(cells);

    int any = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        int st = kf_rep_state_of(rt);
        if (!kf_rep_is_failure(st))
            continue;
        if (!any)
            kf_buf_adds(out, md ? "\n## Failures\n" : "\nfailures:\n");
        any = 1;
        char params[256];
        params_str(rt->task, params, sizeof params);
        kf_buf_addf(out, "%s%s %s%s%s%s on %s, task %llx: %s\n", md ? "\n- " : "  ",
                    kf_rep_kind_name((int)rt->task->kind),
                    kf_rep_kernel_name(r, rt->task->kernel_index), *params ? " [" : "", params,
                    *params ? "]" : "", *kf_rep_node_of(rt) ? kf_rep_node_of(rt) : "no node",
                    (unsigned long long)rt->task->task_id, state_text(st));
        /* The first three lines: enough to see the cause; the whole error
         * is in the JSON. */
        const char *e = kf_rep_err_of(rt);
        if (md && *e)
            kf_buf_adds(out, "\n  ```\n");
        for (int l = 0; l < 3 && *e; l++) {
            size_t len = strcspn(e, "\n");
            kf_buf_addf(out, "%s%.*s\n", md ? "  " : "      ", (int)len, e);
            e += len + (e[len] == '\n');
        }
        if (md && *kf_rep_err_of(rt))
            kf_buf_adds(out, "  ```\n");
    }
    return 0;
}

/* CSV, like HTML, is drawn from the JSON (report_csv.c). */
static int render_csv(const rep *r, kf_buf *out)
{
    kf_buf js = KF_BUF_INIT;
    int rc = kf_rep_render_json(r, 0, &js);
    json_t *root = rc ? NULL : json_loadb(js.data, js.len, 0, NULL);
    kf_buf_release(&js);
    if (!rc)
        rc = root ? kf_report_csv(root, r->provenance, out) : KF_ENOMEM;
    json_decref(root);
    return rc;
}

/* The page reads the JSON, not the rows: what it shows is what a script
 * reading the JSON sees. */
static int render_html(const rep *r, kf_buf *out)
{
    kf_buf js = KF_BUF_INIT;
    int rc = kf_rep_render_json(r, 0, &js);
    /* Our own JSON fails to load only for want of memory. */
    json_t *root = rc ? NULL : json_loadb(js.data, js.len, 0, NULL);
    kf_buf_release(&js);
    if (!rc)
        rc = root ? kf_report_html(root, out, NULL) : KF_ENOMEM;
    json_decref(root);
    return rc;
}

int kf_report_render(kf_txn *t, uint32_t sweep_id, kf_report_format fmt, int color, kf_buf *out,
                     kf_err *err)
{
    kf_report_opts o = {.fmt = fmt, .color = color};
    return kf_report_render_opts(t, sweep_id, &o, out, err);
}

/* --baseline: one of the sweep's kernels, which then stands as its baseline. */
static int set_baseline(rep *r, const char *name, kf_err *err)
{
    kf_buf names = KF_BUF_INIT;
    for (size_t i = 0; i < r->sw->n_kernels; i++) {
        if (strcmp(r->sw->kernels[i]->name, name) == 0) {
            char *copy = strdup(name);
            kf_buf_release(&names);
            if (!copy)
                return kf_err_set(err, KF_ENOMEM, "out of memory");
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

int kf_report_render_opts(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts, kf_buf *out,
                          kf_err *err)
{
    rep r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.group_by = opts->group_by;
    r.provenance = opts->provenance;
    kf_report_format fmt = opts->fmt;
    int color = opts->color;
    int rc = kf_store_get_sweep(t, sweep_id, &r.sw);
    if (rc == KF_ENOTFOUND)
        return kf_err_set(err, KF_ENOTFOUND,
                          "no sweep %u in this store; `kfleet status` lists the sweeps", sweep_id);
    if (rc)
        return kf_err_set(err, rc, "cannot read sweep %u from the store: %s", sweep_id,
                          kf_strerror(rc));
    if (opts->baseline && (rc = set_baseline(&r, opts->baseline, err)) != KF_OK) {
        rep_free(&r);
        return rc;
    }
    const char *what = "reading its tasks and results";
    rc = kf_store_foreach_task(t, sweep_id, task_cb, &r);
    if (!rc) {
        what = "reading its agents and builds";
        rc = collect_agents(&r);
    }
    if (!rc)
        rc = build_rows(&r);
    if (!rc) {
        what = "rendering the report";
        /* Rendered into a scratch buffer so a failure leaves out as it was. */
        kf_buf tmp = KF_BUF_INIT;
        rc = fmt == KF_REPORT_JSON   ? kf_rep_render_json(&r, !opts->omit_samples, &tmp)
             : fmt == KF_REPORT_HTML ? render_html(&r, &tmp)
             : fmt == KF_REPORT_CSV  ? render_csv(&r, &tmp)
                                     : render_text(&r, fmt == KF_REPORT_MD, color, &tmp);
        if (!rc)
            kf_buf_add(out, tmp.data, tmp.len);
        kf_buf_release(&tmp);
    }
    rep_free(&r);
    if (rc)
        return kf_err_set(err, rc, "sweep %u: failed %s: %s", sweep_id, what, kf_strerror(rc));
    return KF_OK;
}
