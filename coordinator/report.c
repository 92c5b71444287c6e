/* report — a sweep's records turned into the report people read; see
 * report.h.
 *
 * The model: one row per kernel configuration and node, joining the
 * configuration's validate and profile tasks (for `nodes: all` the node is
 * the pin; for `nodes: any` it is the agent that profiled it). Statistics
 * are recomputed from the stored samples of the profile's terminal attempt.
 * Builds and failures get their own sections. The same collected rows feed
 * all three renderers, so the formats never disagree. */
#include "report.h"
#include "stats.h"
#include "util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct rtask {
    Kfleet__Task *task;
    Kfleet__Result *res;       /* NULL while not ended */
    double *samples;           /* stored sample times of the terminal attempt */
    int *throttled;
    size_t nsamples;
} rtask;

typedef struct rrow {
    uint32_t kernel, config;
    char node[128];
    rtask *validate, *profile;
    kf_stats st;
    double gbps, gflops, speedup;
    int mismatch, throttled, noisy;
} rrow;

typedef struct rep {
    kf_txn *t;
    Kfleet__Sweep *sw;
    rtask *tasks;
    size_t ntasks, cap;
    rrow *rows;
    size_t nrows;
    Kfleet__AgentInfo **agents;
    size_t nagents;
    uint32_t counts[16];
} rep;

int kf_report_parse_format(const char *s)
{
    if (strcmp(s, "table") == 0)
        return KF_REPORT_TABLE;
    if (strcmp(s, "md") == 0 || strcmp(s, "markdown") == 0)
        return KF_REPORT_MD;
    if (strcmp(s, "json") == 0)
        return KF_REPORT_JSON;
    return -1;
}

/* ---- collecting ---- */

static int sample_cb(void *ctx, const Kfleet__Sample *s)
{
    rtask *rt = ctx;
    if ((rt->nsamples & (rt->nsamples - 1)) == 0) {
        size_t cap = rt->nsamples ? rt->nsamples * 2 : 16;
        rt->samples = realloc(rt->samples, cap * sizeof *rt->samples);
        rt->throttled = realloc(rt->throttled, cap * sizeof *rt->throttled);
        if (!rt->samples || !rt->throttled)
            abort();
    }
    rt->samples[rt->nsamples] = s->seconds;
    rt->throttled[rt->nsamples] = s->throttled;
    rt->nsamples++;
    return 0;
}

static int task_cb(void *ctx, const Kfleet__Task *task)
{
    rep *r = ctx;
    if (r->ntasks == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->tasks = realloc(r->tasks, r->cap * sizeof *r->tasks);
        if (!r->tasks)
            abort();
    }
    rtask *rt = &r->tasks[r->ntasks++];
    memset(rt, 0, sizeof *rt);
    size_t n = kfleet__task__get_packed_size(task);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        abort();
    kfleet__task__pack(task, b);
    rt->task = kfleet__task__unpack(NULL, n, b);
    free(b);
    r->counts[task->state & 15]++;
    if (kf_store_get_result(r->t, task->task_id, &rt->res) != KF_OK)
        rt->res = NULL;
    if (rt->res && task->kind == KFLEET__TASK_KIND__PROFILE)
        kf_store_foreach_sample(r->t, task->task_id, rt->res->attempt, sample_cb, rt);
    return 0;
}

static const char *node_of(const rtask *rt)
{
    if (rt->task->pin_agent && *rt->task->pin_agent)
        return rt->task->pin_agent;
    if (rt->res && rt->res->agent_id && *rt->res->agent_id)
        return rt->res->agent_id;
    return rt->task->agent_id ? rt->task->agent_id : "";
}

static rrow *row_for(rep *r, const rtask *rt, int create)
{
    const char *node = node_of(rt);
    int pinned = rt->task->pin_agent && *rt->task->pin_agent;
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        if (w->kernel == rt->task->kernel_index && w->config == rt->task->config_index &&
            (!pinned || strcmp(w->node, node) == 0))
            return w;
    }
    if (!create)
        return NULL;
    rrow *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    w->kernel = rt->task->kernel_index;
    w->config = rt->task->config_index;
    snprintf(w->node, sizeof w->node, "%s", node);
    w->speedup = NAN;
    return w;
}

static void params_str(const Kfleet__Task *t, char *out, size_t len)
{
    out[0] = '\0';
    size_t off = 0;
    for (size_t i = 0; i < t->n_params && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", i ? " " : "",
                                t->params[i]->name, (long long)t->params[i]->value);
}

static const char *kernel_name(const rep *r, uint32_t ki)
{
    return ki < r->sw->n_kernels ? r->sw->kernels[ki]->name : "?";
}

static void build_rows(rep *r)
{
    r->rows = calloc(r->ntasks ? r->ntasks : 1, sizeof *r->rows);
    if (!r->rows)
        abort();
    /* Profiles first, so a row's node is where it was measured. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < r->ntasks; i++) {
            rtask *rt = &r->tasks[i];
            int kind = rt->task->kind;
            if (pass == 0 && kind != KFLEET__TASK_KIND__PROFILE)
                continue;
            if (pass == 1 && kind != KFLEET__TASK_KIND__VALIDATE)
                continue;
            rrow *w = row_for(r, rt, 1);
            if (kind == KFLEET__TASK_KIND__PROFILE)
                w->profile = rt;
            else
                w->validate = rt;
            if (!w->node[0])
                snprintf(w->node, sizeof w->node, "%s", node_of(rt));
        }
    }
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        rtask *p = w->profile;
        if (!p || !p->res || p->res->state != KFLEET__TASK_STATE__SUCCEEDED)
            continue;
        double *copy = malloc((p->nsamples ? p->nsamples : 1) * sizeof *copy);
        if (!copy)
            abort();
        memcpy(copy, p->samples, p->nsamples * sizeof *copy);
        kf_stats_compute(copy, p->nsamples, &w->st);
        free(copy);
        for (size_t k = 0; k < p->nsamples; k++)
            w->throttled |= p->throttled[k];
        w->mismatch = p->nsamples != p->res->sample_count;
        const Kfleet__ProfileStats *ps = p->res->profile;
        w->noisy = ps && !ps->converged;
        if (ps && w->st.median > 0) {
            w->gbps = ps->bytes / w->st.median / 1e9;
            w->gflops = ps->flops / w->st.median / 1e9;
        }
    }
    /* Speedup: the baseline kernel's row with the same parameters on the
     * same node, divided by this row's median. */
    if (r->sw->baseline && *r->sw->baseline) {
        for (size_t i = 0; i < r->nrows; i++) {
            rrow *w = &r->rows[i];
            if (w->st.median <= 0 || !w->profile)
                continue;
            char pw[256], pb[256];
            params_str(w->profile->task, pw, sizeof pw);
            for (size_t j = 0; j < r->nrows; j++) {
                rrow *b = &r->rows[j];
                if (!b->profile || b->st.median <= 0 ||
                    strcmp(kernel_name(r, b->kernel), r->sw->baseline) != 0 ||
                    strcmp(b->node, w->node) != 0)
                    continue;
                params_str(b->profile->task, pb, sizeof pb);
                if (strcmp(pw, pb) == 0)
                    w->speedup = b->st.median / w->st.median;
            }
        }
    }
}

static void collect_agents(rep *r)
{
    r->agents = calloc(r->nrows + r->ntasks + 1, sizeof *r->agents);
    if (!r->agents)
        abort();
    for (size_t i = 0; i < r->ntasks; i++) {
        const char *id = node_of(&r->tasks[i]);
        if (!*id)
            continue;
        int seen = 0;
        for (size_t k = 0; k < r->nagents; k++)
            seen |= strcmp(r->agents[k]->agent_id, id) == 0;
        Kfleet__AgentInfo *a = NULL;
        if (!seen && kf_store_get_agent(r->t, id, &a) == KF_OK)
            r->agents[r->nagents++] = a;
    }
}

static const Kfleet__AgentInfo *agent(const rep *r, const char *id)
{
    for (size_t k = 0; k < r->nagents; k++)
        if (strcmp(r->agents[k]->agent_id, id) == 0)
            return r->agents[k];
    return NULL;
}

static void device_of(const rep *r, const char *node, char *out, size_t len)
{
    const Kfleet__AgentInfo *a = agent(r, node);
    if (!a)
        snprintf(out, len, "?");
    else if (a->n_gpus)
        snprintf(out, len, "%s", a->gpus[0]->name);
    else
        snprintf(out, len, "cpu");
}

static void rep_free(rep *r)
{
    for (size_t i = 0; i < r->ntasks; i++) {
        kfleet__task__free_unpacked(r->tasks[i].task, NULL);
        if (r->tasks[i].res)
            kfleet__result__free_unpacked(r->tasks[i].res, NULL);
        free(r->tasks[i].samples);
        free(r->tasks[i].throttled);
    }
    free(r->tasks);
    free(r->rows);
    for (size_t k = 0; k < r->nagents; k++)
        kfleet__agent_info__free_unpacked(r->agents[k], NULL);
    free(r->agents);
    if (r->sw)
        kfleet__sweep__free_unpacked(r->sw, NULL);
}

/* ---- formatting helpers ---- */

static void fmt_time(double s, char *out, size_t len)
{
    if (s <= 0)
        snprintf(out, len, "-");
    else if (s < 1e-6)
        snprintf(out, len, "%.1f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(out, len, "%.2f us", s * 1e6);
    else if (s < 1)
        snprintf(out, len, "%.3f ms", s * 1e3);
    else
        snprintf(out, len, "%.3f s", s);
}

static void fmt_iso(uint64_t ns, char *out, size_t len)
{
    if (!ns) {
        snprintf(out, len, "-");
        return;
    }
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *state_name(int st)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&kfleet__task_state__descriptor, st);
    return v ? v->name : "?";
}

static const char *kind_name(int k)
{
    switch (k) {
    case KFLEET__TASK_KIND__BUILD: return "build";
    case KFLEET__TASK_KIND__VALIDATE: return "validate";
    case KFLEET__TASK_KIND__PROFILE: return "profile";
    case KFLEET__TASK_KIND__DOCTOR: return "doctor";
    default: return "?";
    }
}

static void first_line(const char *s, char *out, size_t len)
{
    size_t n = strcspn(s ? s : "", "\n");
    if (n >= len)
        n = len - 1;
    memcpy(out, s ? s : "", n);
    out[n] = '\0';
}

static void validation_str(const rrow *w, char *out, size_t len)
{
    const rtask *v = w->validate;
    if (!v)
        snprintf(out, len, "-");
    else if (!v->res)
        snprintf(out, len, "pending");
    else if (v->res->state == KFLEET__TASK_STATE__SUCCEEDED) {
        double mx = 0;
        for (size_t i = 0; i < v->res->n_trials; i++)
            if (v->res->trials[i]->max_abs_err > mx)
                mx = v->res->trials[i]->max_abs_err;
        snprintf(out, len, "pass %.1e/%zu", mx, v->res->n_trials);
    } else
        snprintf(out, len, "FAIL");
}

static void flags_str(const rrow *w, char *out, size_t len)
{
    out[0] = '\0';
    size_t off = 0;
#define ADDF(s) off += (size_t)snprintf(out + off, off < len ? len - off : 0, "%s%s", off ? "," : "", s)
    if (w->noisy)
        ADDF("noisy");
    if (w->throttled)
        ADDF("throttled");
    if (w->mismatch)
        ADDF("samples-mismatch");
    const rtask *p = w->profile;
    if (p && p->res && p->res->state != KFLEET__TASK_STATE__SUCCEEDED)
        ADDF(p->res->state == KFLEET__TASK_STATE__TIMED_OUT ? "profile-timed-out"
                                                             : "profile-failed");
    if (p && !p->res)
        ADDF("profile-pending");
#undef ADDF
}

/* ---- table and markdown ---- */

enum { C_KERNEL, C_PARAMS, C_NODE, C_DEVICE, C_VALID, C_SAMPLES, C_MEDIAN, C_RANGE, C_NOISE,
       C_GBPS, C_GFLOPS, C_SPEEDUP, C_FLAGS, C_N };
static const char *col_names[C_N] = {"kernel", "params",  "node",   "device", "validation",
                                     "samples", "median", "min-max", "noise", "GB/s",
                                     "GFLOP/s", "speedup", "flags"};
static const int col_right[C_N] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0};

static void row_cells(const rep *r, const rrow *w, char cells[C_N][160])
{
    snprintf(cells[C_KERNEL], 160, "%s", kernel_name(r, w->kernel));
    const rtask *any = w->profile ? w->profile : w->validate;
    params_str(any->task, cells[C_PARAMS], 160);
    snprintf(cells[C_NODE], 160, "%s", w->node);
    device_of(r, w->node, cells[C_DEVICE], 160);
    validation_str(w, cells[C_VALID], 160);
    if (w->st.n) {
        char a[32], b[32];
        snprintf(cells[C_SAMPLES], 160, "%zu", w->st.n);
        fmt_time(w->st.median, cells[C_MEDIAN], 160);
        fmt_time(w->st.min, a, sizeof a);
        fmt_time(w->st.max, b, sizeof b);
        snprintf(cells[C_RANGE], 160, "%s-%s", a, b);
        snprintf(cells[C_NOISE], 160, "%.2f%%", w->st.noise_pct);
        snprintf(cells[C_GBPS], 160, "%.2f", w->gbps);
        snprintf(cells[C_GFLOPS], 160, "%.2f", w->gflops);
    } else {
        for (int c = C_SAMPLES; c <= C_GFLOPS; c++)
            snprintf(cells[c], 160, "-");
    }
    if (isnan(w->speedup))
        snprintf(cells[C_SPEEDUP], 160, "-");
    else
        snprintf(cells[C_SPEEDUP], 160, "%.2fx", w->speedup);
    flags_str(w, cells[C_FLAGS], 160);
}

static void render_text(const rep *r, int md, int color, kf_buf *out)
{
    char created[32], finished[32];
    fmt_iso(r->sw->created_ns, created, sizeof created);
    fmt_iso(r->sw->finished_ns, finished, sizeof finished);
    uint32_t ok = r->counts[KFLEET__TASK_STATE__SUCCEEDED],
             bad = r->counts[KFLEET__TASK_STATE__FAILED] +
                   r->counts[KFLEET__TASK_STATE__TIMED_OUT],
             canc = r->counts[KFLEET__TASK_STATE__CANCELLED];
    uint32_t open = (uint32_t)r->ntasks - ok - bad - canc;
    if (md)
        kf_buf_addf(out, "# Sweep %u: %s\n\n", r->sw->sweep_id, r->sw->name);
    else
        kf_buf_addf(out, "sweep %u: %s (%s)\n", r->sw->sweep_id, r->sw->name, r->sw->file);
    kf_buf_addf(out, "%screated %s, finished %s; %zu tasks: %u succeeded, %u failed, %u "
                     "cancelled, %u not ended%s\n",
                md ? "" : "  ", created, finished, r->ntasks, ok, bad, canc, open,
                md ? "  " : "");
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        kf_buf_addf(out, "%snode %s: %s, %s%s%s, cc %s%s\n", md ? "- " : "  ", a->agent_id,
                    a->hostname, a->n_gpus ? a->gpus[0]->name : a->cpu_model,
                    a->n_gpus ? ", driver " : "", a->n_gpus ? a->driver_version : "",
                    a->cc_version, a->nvcc_version && *a->nvcc_version ? ", nvcc" : "");
    }
    kf_buf_addc(out, '\n');

    char (*cells)[C_N][160] = calloc(r->nrows ? r->nrows : 1, sizeof *cells);
    if (!cells)
        abort();
    int width[C_N];
    for (int c = 0; c < C_N; c++)
        width[c] = (int)strlen(col_names[c]);
    for (size_t i = 0; i < r->nrows; i++) {
        row_cells(r, &r->rows[i], cells[i]);
        for (int c = 0; c < C_N; c++)
            if ((int)strlen(cells[i][c]) > width[c])
                width[c] = (int)strlen(cells[i][c]);
    }
    if (md) {
        kf_buf_adds(out, "|");
        for (int c = 0; c < C_N; c++)
            kf_buf_addf(out, " %s |", col_names[c]);
        kf_buf_adds(out, "\n|");
        for (int c = 0; c < C_N; c++)
            kf_buf_adds(out, col_right[c] ? " ---: |" : " --- |");
        kf_buf_addc(out, '\n');
        for (size_t i = 0; i < r->nrows; i++) {
            kf_buf_adds(out, "|");
            for (int c = 0; c < C_N; c++)
                kf_buf_addf(out, " %s |", cells[i][c]);
            kf_buf_addc(out, '\n');
        }
    } else {
        for (int c = 0; c < C_N; c++) {
            kf_buf_addpad(out, col_names[c], width[c], col_right[c]);
            kf_buf_adds(out, c + 1 < C_N ? "  " : "\n");
        }
        for (size_t i = 0; i < r->nrows; i++) {
            for (int c = 0; c < C_N; c++) {
                const char *col = "";
                if (color && c == C_VALID)
                    col = strncmp(cells[i][c], "pass", 4) == 0 ? "\033[32m"
                          : strcmp(cells[i][c], "FAIL") == 0   ? "\033[31m"
                                                               : "";
                if (color && c == C_FLAGS && cells[i][c][0])
                    col = "\033[33m";
                kf_buf_adds(out, col);
                kf_buf_addpad(out, cells[i][c], width[c], col_right[c]);
                if (*col)
                    kf_buf_adds(out, "\033[0m");
                kf_buf_adds(out, c + 1 < C_N ? "  " : "\n");
            }
        }
    }
    free(cells);

    /* Builds. */
    kf_buf_adds(out, md ? "\n## Builds\n\n| kernel | node | status | cached | compile | artifact |\n"
                          "| --- | --- | --- | --- | ---: | --- |\n"
                        : "\nbuilds:\n");
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        if (rt->task->kind != KFLEET__TASK_KIND__BUILD)
            continue;
        const Kfleet__BuildInfo *b = rt->res ? rt->res->build : NULL;
        char ct[32], line[200];
        fmt_time(b ? b->compile_s : 0, ct, sizeof ct);
        first_line(rt->res ? rt->res->error : "", line, sizeof line);
        const char *st = rt->res ? state_name(rt->res->state) : state_name(rt->task->state);
        char art[16];
        snprintf(art, sizeof art, "%.12s", b && b->artifact_hash ? b->artifact_hash : "-");
        if (md)
            kf_buf_addf(out, "| %s | %s | %s | %s | %s | %s |\n", kernel_name(r, rt->task->kernel_index),
                        node_of(rt), st, b && b->cached ? "yes" : "no", ct, art);
        else
            kf_buf_addf(out, "  %-16s %-16s %-10s %-6s %10s  %s%s%s\n",
                        kernel_name(r, rt->task->kernel_index), node_of(rt), st,
                        b && b->cached ? "cached" : "", ct, art, *line ? "  " : "", line);
    }
    /* Failures. */
    int any = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        int s = rt->task->state;
        if (s != KFLEET__TASK_STATE__FAILED && s != KFLEET__TASK_STATE__TIMED_OUT)
            continue;
        if (!any)
            kf_buf_adds(out, md ? "\n## Failures\n\n" : "\nfailures:\n");
        any = 1;
        char params[256];
        params_str(rt->task, params, sizeof params);
        kf_buf_addf(out, "%s%s %s %s%s%s on %s (task %llx): %s\n", md ? "- " : "  ",
                    kind_name(rt->task->kind), kernel_name(r, rt->task->kernel_index),
                    *params ? "[" : "", params, *params ? "]" : "", node_of(rt),
                    (unsigned long long)rt->task->task_id, state_name(s));
        const char *e = rt->res && rt->res->error ? rt->res->error : rt->task->error;
        /* The first three lines of the error, indented. */
        for (int l = 0; l < 3 && e && *e; l++) {
            size_t n = strcspn(e, "\n");
            kf_buf_addf(out, "%s%.*s\n", md ? "    " : "      ", (int)n, e);
            e += n;
            if (*e == '\n')
                e++;
        }
    }
}

/* ---- json ---- */

static json_t *jstr(const char *s)
{
    return json_string(s ? s : "");
}

static json_t *json_row(const rep *r, const rrow *w)
{
    json_t *o = json_object();
    const rtask *any = w->profile ? w->profile : w->validate;
    json_object_set_new(o, "kernel", jstr(kernel_name(r, w->kernel)));
    json_t *params = json_object();
    for (size_t i = 0; i < any->task->n_params; i++)
        json_object_set_new(params, any->task->params[i]->name,
                            json_integer(any->task->params[i]->value));
    json_object_set_new(o, "params", params);
    json_object_set_new(o, "config_index", json_integer(w->config));
    json_object_set_new(o, "node", jstr(w->node));
    const Kfleet__AgentInfo *a = agent(r, w->node);
    json_t *prov = json_object();
    json_object_set_new(prov, "hostname", jstr(a ? a->hostname : ""));
    json_object_set_new(prov, "device", jstr(a && a->n_gpus ? a->gpus[0]->name : "cpu"));
    json_object_set_new(prov, "gpu_uuid", jstr(a && a->n_gpus ? a->gpus[0]->uuid : ""));
    json_object_set_new(prov, "cpu_model", jstr(a ? a->cpu_model : ""));
    json_object_set_new(prov, "driver_version", jstr(a ? a->driver_version : ""));
    json_object_set_new(prov, "compiler", jstr(a ? (r->sw->kernels[w->kernel]->cuda ? a->nvcc_version : a->cc_version) : ""));
    json_object_set_new(prov, "kernel_hash", jstr(r->sw->kernels[w->kernel]->hash));
    Kfleet__BuildRecord *br = NULL;
    Kfleet__Result *bres = NULL;
    if (kf_store_get_build(r->t, w->node, r->sw->kernels[w->kernel]->hash, &br) == KF_OK) {
        if (kf_store_get_result(r->t, br->task_id, &bres) == KF_OK && bres->build)
            json_object_set_new(prov, "artifact_hash", jstr(bres->build->artifact_hash));
        if (bres)
            kfleet__result__free_unpacked(bres, NULL);
        kfleet__build_record__free_unpacked(br, NULL);
    }
    json_object_set_new(prov, "kfleet_version", jstr(KF_VERSION));
    json_object_set_new(o, "provenance", prov);
    if (w->validate) {
        json_t *v = json_object();
        const rtask *vt = w->validate;
        json_object_set_new(v, "task_id", json_integer((json_int_t)vt->task->task_id));
        json_object_set_new(v, "state", jstr(vt->res ? state_name(vt->res->state) : state_name(vt->task->state)));
        if (vt->res) {
            json_object_set_new(v, "attempt", json_integer(vt->res->attempt));
            json_object_set_new(v, "agent", jstr(vt->res->agent_id));
            json_object_set_new(v, "deterministic", json_boolean(vt->res->deterministic));
            json_object_set_new(v, "error", jstr(vt->res->error));
            json_t *trials = json_array();
            for (size_t i = 0; i < vt->res->n_trials; i++) {
                const Kfleet__ValidateTrial *t = vt->res->trials[i];
                json_t *jt = json_object();
                json_object_set_new(jt, "seed", json_integer((json_int_t)t->seed));
                json_object_set_new(jt, "max_abs_err", json_real(t->max_abs_err));
                json_object_set_new(jt, "rel_err", json_real(t->rel_err));
                json_object_set_new(jt, "nonfinite", json_integer((json_int_t)t->nonfinite));
                json_object_set_new(jt, "passed", json_boolean(t->passed));
                json_array_append_new(trials, jt);
            }
            json_object_set_new(v, "trials", trials);
        }
        json_object_set_new(o, "validation", v);
    }
    if (w->profile) {
        const rtask *pt = w->profile;
        json_t *p = json_object();
        json_object_set_new(p, "task_id", json_integer((json_int_t)pt->task->task_id));
        json_object_set_new(p, "state", jstr(pt->res ? state_name(pt->res->state) : state_name(pt->task->state)));
        if (pt->res) {
            const Kfleet__ProfileStats *ps = pt->res->profile;
            json_object_set_new(p, "attempt", json_integer(pt->res->attempt));
            json_object_set_new(p, "agent", jstr(pt->res->agent_id));
            json_object_set_new(p, "error", jstr(pt->res->error));
            json_object_set_new(p, "samples", json_integer((json_int_t)w->st.n));
            json_object_set_new(p, "samples_reported", json_integer(pt->res->sample_count));
            json_object_set_new(p, "median_s", json_real(w->st.median));
            json_object_set_new(p, "mean_s", json_real(w->st.mean));
            json_object_set_new(p, "min_s", json_real(w->st.min));
            json_object_set_new(p, "max_s", json_real(w->st.max));
            json_object_set_new(p, "stddev_s", json_real(w->st.stddev));
            json_object_set_new(p, "p10_s", json_real(w->st.p10));
            json_object_set_new(p, "p90_s", json_real(w->st.p90));
            json_object_set_new(p, "noise_pct", json_real(w->st.noise_pct));
            json_object_set_new(p, "rsd_pct", json_real(w->st.rsd_pct));
            json_object_set_new(p, "converged", json_boolean(ps && ps->converged));
            json_object_set_new(p, "bytes", json_real(ps ? ps->bytes : 0));
            json_object_set_new(p, "flops", json_real(ps ? ps->flops : 0));
            json_object_set_new(p, "gbps", json_real(w->gbps));
            json_object_set_new(p, "gflops", json_real(w->gflops));
            json_object_set_new(p, "hot", json_boolean(ps && ps->hot));
            json_object_set_new(p, "batch", json_integer(ps ? ps->batch : 0));
            json_t *times = json_array();
            for (size_t i = 0; i < pt->nsamples; i++)
                json_array_append_new(times, json_real(pt->samples[i]));
            json_object_set_new(p, "sample_seconds", times);
        }
        json_object_set_new(o, "profile", p);
    }
    if (!isnan(w->speedup))
        json_object_set_new(o, "speedup", json_real(w->speedup));
    json_t *flags = json_array();
    if (w->noisy)
        json_array_append_new(flags, json_string("noisy"));
    if (w->throttled)
        json_array_append_new(flags, json_string("throttled"));
    if (w->mismatch)
        json_array_append_new(flags, json_string("samples-mismatch"));
    json_object_set_new(o, "flags", flags);
    return o;
}

static void render_json(const rep *r, kf_buf *out)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kfleet.report/1"));
    json_object_set_new(root, "kfleet_version", json_string(KF_VERSION));
    json_t *sw = json_object();
    json_object_set_new(sw, "sweep_id", json_integer(r->sw->sweep_id));
    json_object_set_new(sw, "name", jstr(r->sw->name));
    json_object_set_new(sw, "file", jstr(r->sw->file));
    json_object_set_new(sw, "created_ns", json_integer((json_int_t)r->sw->created_ns));
    json_object_set_new(sw, "finished_ns", json_integer((json_int_t)r->sw->finished_ns));
    json_object_set_new(sw, "nodes", json_string(r->sw->nodes_all ? "all" : "any"));
    json_object_set_new(sw, "baseline", jstr(r->sw->baseline));
    json_t *kernels = json_array();
    for (size_t k = 0; k < r->sw->n_kernels; k++) {
        json_t *jk = json_object();
        json_object_set_new(jk, "name", jstr(r->sw->kernels[k]->name));
        json_object_set_new(jk, "hash", jstr(r->sw->kernels[k]->hash));
        json_object_set_new(jk, "cuda", json_boolean(r->sw->kernels[k]->cuda));
        json_array_append_new(kernels, jk);
    }
    json_object_set_new(sw, "kernels", kernels);
    json_object_set_new(root, "sweep", sw);
    json_t *tot = json_object();
    json_object_set_new(tot, "tasks", json_integer((json_int_t)r->ntasks));
    json_object_set_new(tot, "succeeded", json_integer(r->counts[KFLEET__TASK_STATE__SUCCEEDED]));
    json_object_set_new(tot, "failed", json_integer(r->counts[KFLEET__TASK_STATE__FAILED]));
    json_object_set_new(tot, "timed_out", json_integer(r->counts[KFLEET__TASK_STATE__TIMED_OUT]));
    json_object_set_new(tot, "cancelled", json_integer(r->counts[KFLEET__TASK_STATE__CANCELLED]));
    json_object_set_new(root, "totals", tot);
    json_t *agents = json_array();
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        json_t *ja = json_object();
        json_object_set_new(ja, "agent_id", jstr(a->agent_id));
        json_object_set_new(ja, "hostname", jstr(a->hostname));
        json_object_set_new(ja, "cpu_model", jstr(a->cpu_model));
        json_object_set_new(ja, "cpu_count", json_integer(a->cpu_count));
        json_object_set_new(ja, "driver_version", jstr(a->driver_version));
        json_object_set_new(ja, "cuda_driver_version", json_integer(a->cuda_driver_version));
        json_object_set_new(ja, "nvcc_version", jstr(a->nvcc_version));
        json_object_set_new(ja, "cc_version", jstr(a->cc_version));
        json_t *gpus = json_array();
        for (size_t g = 0; g < a->n_gpus; g++) {
            json_t *jg = json_object();
            json_object_set_new(jg, "name", jstr(a->gpus[g]->name));
            json_object_set_new(jg, "uuid", jstr(a->gpus[g]->uuid));
            json_array_append_new(gpus, jg);
        }
        json_object_set_new(ja, "gpus", gpus);
        json_array_append_new(agents, ja);
    }
    json_object_set_new(root, "agents", agents);
    json_t *rows = json_array();
    for (size_t i = 0; i < r->nrows; i++)
        json_array_append_new(rows, json_row(r, &r->rows[i]));
    json_object_set_new(root, "rows", rows);
    json_t *builds = json_array(), *failures = json_array();
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        if (rt->task->kind == KFLEET__TASK_KIND__BUILD) {
            json_t *b = json_object();
            const Kfleet__BuildInfo *bi = rt->res ? rt->res->build : NULL;
            json_object_set_new(b, "kind", json_string("build"));
            json_object_set_new(b, "task_id", json_integer((json_int_t)rt->task->task_id));
            json_object_set_new(b, "kernel", jstr(kernel_name(r, rt->task->kernel_index)));
            json_object_set_new(b, "node", jstr(node_of(rt)));
            json_object_set_new(b, "state", jstr(state_name(rt->task->state)));
            json_object_set_new(b, "cached", json_boolean(bi && bi->cached));
            json_object_set_new(b, "compile_s", json_real(bi ? bi->compile_s : 0));
            json_object_set_new(b, "compiler", jstr(bi ? bi->compiler : ""));
            json_object_set_new(b, "artifact_hash", jstr(bi ? bi->artifact_hash : ""));
            json_object_set_new(b, "registers", json_integer(bi ? bi->registers : 0));
            json_object_set_new(b, "shared_bytes", json_integer(bi ? bi->shared_bytes : 0));
            json_object_set_new(b, "stack_bytes", json_integer(bi ? bi->stack_bytes : 0));
            json_object_set_new(b, "spill_bytes", json_integer(bi ? bi->spill_bytes : 0));
            json_object_set_new(b, "error", jstr(rt->res ? rt->res->error : ""));
            json_array_append_new(builds, b);
        }
        int s = rt->task->state;
        if (s == KFLEET__TASK_STATE__FAILED || s == KFLEET__TASK_STATE__TIMED_OUT) {
            json_t *f = json_object();
            json_object_set_new(f, "task_id", json_integer((json_int_t)rt->task->task_id));
            json_object_set_new(f, "kind", json_string(kind_name(rt->task->kind)));
            json_object_set_new(f, "kernel", jstr(kernel_name(r, rt->task->kernel_index)));
            json_object_set_new(f, "node", jstr(node_of(rt)));
            json_object_set_new(f, "state", jstr(state_name(s)));
            json_object_set_new(f, "error", jstr(rt->res ? rt->res->error : rt->task->error));
            json_array_append_new(failures, f);
        }
    }
    json_object_set_new(root, "builds", builds);
    json_object_set_new(root, "failures", failures);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    kf_buf_adds(out, s);
    kf_buf_addc(out, '\n');
    free(s);
    json_decref(root);
}

int kf_report_render(kf_txn *t, uint32_t sweep_id, kf_report_format fmt, int color, kf_buf *out,
                     kf_err *err)
{
    rep r;
    memset(&r, 0, sizeof r);
    r.t = t;
    if (kf_store_get_sweep(t, sweep_id, &r.sw) != KF_OK)
        return kf_err_set(err, KF_ENOTFOUND,
                          "no sweep %u in this store; `kfleet status` lists the sweeps", sweep_id);
    int rc = kf_store_foreach_task(t, sweep_id, task_cb, &r);
    if (rc) {
        rep_free(&r);
        return kf_err_set(err, rc, "cannot read the tasks of sweep %u: %s", sweep_id,
                          kf_strerror(rc));
    }
    build_rows(&r);
    collect_agents(&r);
    if (fmt == KF_REPORT_JSON)
        render_json(&r, out);
    else
        render_text(&r, fmt == KF_REPORT_MD, color, out);
    rep_free(&r);
    return KF_OK;
}
