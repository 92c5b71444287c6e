/* compare — two sweeps side by side, correctness first; see compare.h for
 * the rules. */
#include "report/compare.h"
#include "common/json.h"
#include "common/stats.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "core/sweep.h"
#include "report/report_json.h"
#include "report/report_model.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One configuration of a sweep (kernel, parameters, node). */
typedef struct cfg {
    const char *kernel, *node, *device;
    char key[512];    /* "k=v k=v", keys sorted: what matches across sweeps */
    char params[512]; /* as the report orders them: what is shown */
    int ok;           /* every task of it succeeded */
    int pending;      /* a task of it has not ended */
    char why[300];    /* when !ok: which task ended how, and its first line */
    const char *vstate;
    double median, noise; /* the profile's; NAN when none */
    int matched;
    char impossible[96]; /* "2.4x the node's copy bandwidth"; "" when possible */
    char tol[64];        /* "tol_abs 1e-06 tol_rel 1e-05"; "" when not known */
    const char *hash;    /* the kernel's source hash, "" when not known */
    /* A problem sweep's row (docs/problems.md): a candidate, judged by the
     * problem of that hash (the side's). */
    int candidate;
    const char *problem_hash;
    /* A row of a `nodes: any` sweep's baseline, which runs on every agent
     * that ran a candidate of its configuration (sched_baseline.c). */
    int baseline_any;
    /* Where it ran, from its provenance: "" when not known. */
    const char *hostname, *cpu_model, *gpu_uuid, *driver, *agent_version, *artifact;
} cfg;

typedef struct side {
    kf_report_model *m;
    json_t *report; /* the JSON printer's tree of its model */
    cfg *c;
    size_t n;
    uint32_t id;
    const char *name;
    const char *problem_hash; /* "" unless a problem sweep */
} side;

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The parameters as shown (the report's order) and as matched (sorted). */
static void params_of(const json_t *params, char *shown, char *key, size_t len)
{
    const char *keys[64];
    size_t n = 0, off = 0;
    const char *k;
    json_t *v;
    shown[0] = '\0';
    json_object_foreach((json_t *)params, k, v)
    {
        if (n < 64)
            keys[n++] = k;
        if (off < len)
            off += (size_t)snprintf(shown + off, len - off, "%s%s=%lld", off ? " " : "", k,
                                    (long long)json_integer_value(v));
    }
    qsort(keys, n, sizeof *keys, cmp_keys);
    off = 0;
    key[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(key + off, len - off, "%s%s=%lld", i ? " " : "", keys[i],
                                (long long)json_integer_value(json_object_get(params, keys[i])));
}

/* Whether a task of the row ended well, and if not, why (first line). */
static void task_state(const json_t *task, const char *what, cfg *c)
{
    if (!json_is_object(task))
        return;
    const char *st = str_of(task, "state");
    if (strcmp(st, "succeeded") == 0)
        return;
    if (strcmp(st, "pending") == 0 || strcmp(st, "assigned") == 0 || strcmp(st, "running") == 0) {
        c->pending = 1;
        c->ok = 0;
        if (!c->why[0])
            snprintf(c->why, sizeof c->why, "%s %s", what, st);
        return;
    }
    c->ok = 0;
    if (c->why[0])
        return;
    const char *e = str_of(task, "error");
    size_t n = strcspn(e, "\n");
    const char *name = strcmp(st, "timed_out") == 0 ? "timed out" : st;
    if (n && strncmp(e, what, strlen(what)) == 0) /* "validation failed (seed ...)" says it */
        snprintf(c->why, sizeof c->why, "%.*s", (int)(n > 250 ? 250 : n), e);
    else
        snprintf(c->why, sizeof c->why, "%s %s%s%.*s", what, name, n ? ": " : "",
                 (int)(n > 200 ? 200 : n), e);
}

/* A tolerance as the report writes it: a number, or "inf"/"nan". */
static void tol_text(const json_t *v, char *out, size_t len)
{
    if (json_is_number(v))
        snprintf(out, len, "%g", json_number_value(v));
    else
        snprintf(out, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* The row's judgement facts: impossible, its tolerances, its kernel's hash. */
static void judgement_of(const json_t *report, const json_t *row, cfg *c)
{
    const json_t *im = json_object_get(row, "impossible");
    if (json_is_object(im))
        snprintf(c->impossible, sizeof c->impossible, "%.1fx the node's %s",
                 json_number_value(json_object_get(im, "times_ceiling")), str_of(im, "of"));
    const json_t *v = json_object_get(row, "validation");
    char ta[24], tr[24];
    tol_text(json_object_get(v, "tol_abs"), ta, sizeof ta);
    tol_text(json_object_get(v, "tol_rel"), tr, sizeof tr);
    if (*ta || *tr)
        snprintf(c->tol, sizeof c->tol, "tol_abs %s tol_rel %s", *ta ? ta : "?", *tr ? tr : "?");
    c->hash = "";
    size_t i;
    const json_t *k;
    json_array_foreach(json_object_get(json_object_get(report, "sweep"), "kernels"), i, k)
    {
        if (strcmp(str_of(k, "name"), c->kernel) == 0)
            c->hash = str_of(k, "hash");
    }
}

static int load_side(kf_txn *t, uint32_t id, side *s, kf_err *err)
{
    kf_report_opts o = {.fmt = KF_REPORT_JSON, .omit_samples = 1};
    int rc = kf_report_model_new(t, id, &o, &s->m, err);
    if (rc != KF_OK)
        return rc;
    s->report = kf_rep_json_doc(kf_report_model_rows(s->m), 0);
    if (!s->report)
        return kf_err_set(err, KF_ENOMEM, "sweep %u: out of memory building its report", id);
    s->id = id;
    s->name = json_string_value(json_object_get(json_object_get(s->report, "sweep"), "name"));
    const json_t *prob = json_object_get(s->report, "problem");
    s->problem_hash = json_is_object(prob) ? str_of(prob, "hash") : "";
    const json_t *sw = json_object_get(s->report, "sweep"),
                 *rows = json_object_get(s->report, "rows");
    int any = strcmp(str_of(sw, "nodes"), "any") == 0;
    const char *baseline = str_of(sw, "baseline");
    s->c = kf_xcalloc(json_array_size(rows) + 1, sizeof *s->c);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        cfg *c = &s->c[s->n++];
        c->kernel = str_of(r, "kernel");
        c->node = str_of(r, "node");
        c->device = str_of(r, "device");
        params_of(json_object_get(r, "params"), c->params, c->key, sizeof c->key);
        c->ok = 1;
        json_t *v = json_object_get(r, "validation"), *p = json_object_get(r, "profile");
        c->vstate = json_is_object(v) ? str_of(v, "state") : "-";
        task_state(v, "validation", c);
        task_state(p, "profile", c);
        json_t *med = json_object_get(p, "median_s"), *noise = json_object_get(p, "noise_pct");
        c->median = c->ok && json_is_number(med) ? json_number_value(med) : NAN;
        c->noise = json_is_number(noise) ? json_number_value(noise) : 0;
        judgement_of(s->report, r, c);
        c->candidate = json_is_object(prob);
        c->problem_hash = s->problem_hash;
        c->baseline_any = any && kf_sweep_is_baseline(baseline, c->kernel);
        const json_t *pv = json_object_get(r, "provenance");
        c->hostname = str_of(pv, "hostname");
        c->cpu_model = str_of(pv, "cpu_model");
        c->gpu_uuid = str_of(pv, "gpu_uuid");
        c->driver = str_of(pv, "driver_version");
        c->agent_version = str_of(pv, "agent_version");
        c->artifact = str_of(pv, "artifact_hash");
    }
    return KF_OK;
}

static void free_side(side *s)
{
    json_decref(s->report);
    kf_report_model_destroy(&s->m);
    free(s->c);
}

/* How a configuration of B finds its counterpart in A, tried in this order
 * over all of B before the next: in two problem sweeps a row is a
 * candidate, and a candidate is its code: first the same name and source,
 * then the same source under another name (a candidate renamed or moved
 * between the sweeps), then the same name with another source (a candidate
 * edited). Plain kernels pair by name only, as they always have. */
enum { BY_NAME_AND_SOURCE, BY_SOURCE, BY_NAME, BY_COUNT };

static int same_cfg(const cfg *a, const cfg *b, int by)
{
    int cand = a->candidate && b->candidate;
    if (strcmp(a->key, b->key) != 0 || (!cand && by != BY_NAME))
        return 0;
    int name = strcmp(a->kernel, b->kernel) == 0;
    int source = *a->hash && strcmp(a->hash, b->hash) == 0;
    return by == BY_NAME_AND_SOURCE ? name && source : by == BY_SOURCE ? source : name;
}

/* B's counterpart in A: the same node first, else the same device. */
static cfg *match(side *a, const cfg *b, int by)
{
    for (size_t i = 0; i < a->n; i++)
        if (!a->c[i].matched && same_cfg(&a->c[i], b, by) && strcmp(a->c[i].node, b->node) == 0)
            return &a->c[i];
    for (size_t i = 0; i < a->n; i++)
        if (!a->c[i].matched && same_cfg(&a->c[i], b, by) && strcmp(a->c[i].device, b->device) == 0)
            return &a->c[i];
    return NULL;
}

/* Whether c, without a counterpart, is a further node's row of a
 * configuration compared already: a `nodes: any` baseline's, made on each
 * agent that ran a candidate of it, so that how many nodes it ran on
 * follows the fleet and the placement, not the sweep. Such a row on a node
 * the other sweep lacks is not a configuration missing (nor new), and is
 * left out. */
static int further_copy(const side *s, const cfg *c)
{
    for (size_t i = 0; c->baseline_any && i < s->n; i++)
        if (&s->c[i] != c && s->c[i].matched && strcmp(s->c[i].kernel, c->kernel) == 0 &&
            strcmp(s->c[i].key, c->key) == 0)
            return 1;
    return 0;
}

/* What a pair (or a lone configuration) comes to; the order is the table's. */
enum outcome {
    O_BROKEN,     /* passed in A, failed in B, or missing from B: a regression */
    O_SLOWER,     /* both pass, B slower beyond the noise; a regression past the threshold */
    O_IMPOSSIBLE, /* B passes, but a side's row is impossible: a regression */
    O_CHANGED,    /* B passes, but its check (tolerances, source) changed: a regression */
    O_BOTH,       /* failing in both */
    O_FIXED,      /* failed in A, passes in B */
    O_FASTER,     /* both pass, B faster beyond the noise */
    O_MOVED,      /* the same code on the same machine beyond the band: the machine's doing */
    O_SAME,       /* both pass, within the noise (or slower within the threshold) */
    O_NEW,        /* only in B */
    O_PENDING,    /* a task of it has not ended: no verdict yet */
    O_COUNT
};
static const char *const outcome_name[O_COUNT] = {
    "broken", "slower",           "impossible", "changed",   "failing in both", "fixed",
    "faster", "same code, moved", "same",       "only in B", "not ended"};

typedef struct pair {
    const cfg *a, *b; /* one may be NULL: only in one sweep */
    enum outcome o;
    /* change_pct as measured; vs_machine_pct over the machine's shift (the
     * same where none is known), which the verdict reads */
    double change_pct, vs_machine_pct, band_pct;
    int regression;
    char why[300]; /* impossible, changed: what */
} pair;

/* Whether B's pass can be called one: not when a side is impossible or the
 * check changed between A and B (compare.h). Fills p->why. */
static enum outcome judgement(pair *p, enum outcome o, unsigned flags)
{
    const cfg *a = p->a, *b = p->b;
    if (!a || !b ||
        !(o == O_SLOWER || o == O_FIXED || o == O_FASTER || o == O_MOVED || o == O_SAME))
        return o;
    if (*b->impossible || *a->impossible) {
        snprintf(p->why, sizeof p->why, "%s%s%s%s%s: not a measurement of work done",
                 *a->impossible ? "A " : "", a->impossible,
                 *a->impossible && *b->impossible ? "; " : "", *b->impossible ? "B " : "",
                 b->impossible);
        return O_IMPOSSIBLE;
    }
    if (*a->tol && *b->tol && strcmp(a->tol, b->tol) != 0) {
        snprintf(p->why, sizeof p->why, "tolerances changed: %s -> %s: not the same check", a->tol,
                 b->tol);
        return O_CHANGED;
    }
    if (a->candidate && b->candidate) {
        /* The problem judges a candidate: another candidate source is
         * another entry on the same leaderboard, another problem is
         * another check. */
        if (strcmp(a->problem_hash, b->problem_hash) != 0) {
            snprintf(p->why, sizeof p->why,
                     "problem changed (%.12s -> %.12s): the candidates were judged by another "
                     "reference",
                     a->problem_hash, b->problem_hash);
            return O_CHANGED;
        }
        if (strcmp(a->kernel, b->kernel) != 0)
            snprintf(p->why, sizeof p->why, "candidate %.100s in A, renamed (same source %.12s)",
                     a->kernel, a->hash);
        return o;
    }
    if (!(flags & KF_COMPARE_ACCEPT_SOURCE) && *a->hash && *b->hash &&
        strcmp(a->hash, b->hash) != 0) {
        snprintf(p->why, sizeof p->why,
                 "kernel source changed (%.12s -> %.12s): it brings its own reference and "
                 "inputs, so B may be judged by another check (--accept-changed-source to "
                 "time two versions with the same tolerances)",
                 a->hash, b->hash);
        return O_CHANGED;
    }
    return o;
}

/* Whether a pair can tell the machine's shift: both pass with a median and
 * the same kernel source. */
static int control(const pair *p)
{
    return p->a && p->b && p->a->ok && p->b->ok && !p->a->pending && !p->b->pending &&
           !isnan(p->a->median) && !isnan(p->b->median) && p->a->median > 0 && *p->a->hash &&
           strcmp(p->a->hash, p->b->hash) == 0;
}

/* Whether a control ran on the same machine in both sweeps, as its
 * provenance says (the host, its CPU and GPU, driver and agent; the same
 * binary where both were built): what differs between its two medians is
 * then the machine's state over time, not the code nor where it ran. A side
 * whose provenance is not known is not the same machine. */
static int same_machine(const pair *p)
{
    const cfg *a = p->a, *b = p->b;
    return control(p) && *a->hostname && strcmp(a->hostname, b->hostname) == 0 &&
           strcmp(a->cpu_model, b->cpu_model) == 0 && strcmp(a->gpu_uuid, b->gpu_uuid) == 0 &&
           strcmp(a->driver, b->driver) == 0 && strcmp(a->agent_version, b->agent_version) == 0 &&
           strcmp(a->artifact, b->artifact) == 0;
}

/* The machine's shift from A to B over the control pairs (compare.h):
 * res's machine_* fields, and *ratio the factor B's times are judged
 * over (1 with fewer than three controls, which tell nothing). */
#define MACHINE_MIN_CONTROLS 3
static void machine_shift(const pair *p, size_t np, kf_compare_result *res, double *ratio)
{
    double *l = kf_xcalloc(np + 1, sizeof *l);
    size_t n = 0;
    for (size_t i = 0; i < np; i++)
        if (control(&p[i]))
            l[n++] = log(p[i].b->median / p[i].a->median);
    *ratio = 1;
    if (n >= MACHINE_MIN_CONTROLS) {
        kf_stats_sort(l, n);
        double mid = kf_stats_quantile(l, n, 0.5);
        for (size_t i = 0; i < n; i++)
            l[i] = fabs(l[i] - mid);
        kf_stats_sort(l, n);
        double mad = kf_stats_quantile(l, n, 0.5);
        *ratio = exp(mid);
        res->machine_moved_pct = (exp(l[n - 1]) - 1) * 100;
        res->machine_controls = n;
        res->machine_shift_pct = (*ratio - 1) * 100;
        res->machine_spread_pct = (exp(1.4826 * mad) - 1) * 100;
    }
    free(l);
}

static void judge(pair *p, double threshold, unsigned flags, double ratio, double spread_pct,
                  double moved_pct)
{
    p->change_pct = p->vs_machine_pct = p->band_pct = NAN;
    if ((p->a && p->a->pending) || (p->b && p->b->pending)) {
        p->o = O_PENDING;
        return;
    }
    if (!p->b) {
        p->o = p->a->ok ? O_BROKEN : O_BOTH;
    } else if (!p->a) {
        p->o = O_NEW;
    } else if (p->a->ok && !p->b->ok) {
        p->o = O_BROKEN;
    } else if (!p->a->ok && !p->b->ok) {
        p->o = O_BOTH;
    } else if (!p->a->ok) {
        p->o = O_FIXED;
    } else if (isnan(p->a->median) || isnan(p->b->median)) {
        p->o = O_SAME; /* validated in both, nothing timed to compare */
    } else {
        p->change_pct = (p->b->median / p->a->median - 1) * 100;
        p->vs_machine_pct = (p->b->median / p->a->median / ratio - 1) * 100;
        p->band_pct =
            sqrt(p->a->noise * p->a->noise + p->b->noise * p->b->noise + spread_pct * spread_pct);
        /* A change of other code within what the same code moved between
         * these runs is not told apart from the machine (compare.h). */
        if (!control(p) && moved_pct > p->band_pct)
            p->band_pct = moved_pct;
        if (fabs(p->vs_machine_pct) <= p->band_pct)
            p->o = O_SAME;
        else if (same_machine(p))
            p->o = O_MOVED;
        else if (p->vs_machine_pct < 0)
            p->o = O_FASTER;
        else
            p->o = O_SLOWER;
    }
    p->o = judgement(p, p->o, flags);
    if (p->o == O_MOVED && !p->why[0])
        snprintf(p->why, sizeof p->why,
                 "%+.2f%% against the machine's %+.2f%%: the same code on the same machine "
                 "(%.100s), what the machine varied between the runs",
                 p->vs_machine_pct, (ratio - 1) * 100, p->b->hostname);
    if (ratio != 1 && !p->why[0] && (p->o == O_SLOWER || p->o == O_FASTER || p->o == O_SAME))
        snprintf(p->why, sizeof p->why, "%+.2f%% against the machine's %+.2f%%", p->vs_machine_pct,
                 (ratio - 1) * 100);
    p->regression = p->o == O_BROKEN || p->o == O_IMPOSSIBLE || p->o == O_CHANGED ||
                    (p->o == O_SLOWER && p->vs_machine_pct > threshold);
}

/* Times as the report writes them. */
static void fmt_s(double s, char *out, size_t len)
{
    if (isnan(s))
        snprintf(out, len, "-");
    else if (s >= 1)
        snprintf(out, len, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(out, len, "%.3f ms", s * 1e3);
    else
        snprintf(out, len, "%.3f \xC2\xB5s", s * 1e6);
}

static const cfg *any_of(const pair *p)
{
    return p->b ? p->b : p->a;
}

/* What one side says of a configuration: its validation, or why it failed. */
static void side_state(const cfg *c, char *out, size_t len)
{
    if (!c)
        snprintf(out, len, "missing");
    else if (c->ok)
        snprintf(out, len, "%s", strcmp(c->vstate, "succeeded") == 0 ? "pass" : "ok");
    else
        snprintf(out, len, "FAIL");
}

/* s made inert for the table (common/text.h): kernel names and errors come
 * from kernels, node names from agents. Valid until *b is used again. */
static const char *inert(kf_buf *b, const char *s, int md)
{
    kf_buf_reset(b);
    kf_text_inert(b, s, md ? KF_TEXT_MD : KF_TEXT_LINE);
    return b->data;
}

static void render_text(const side *a, const side *b, const pair *p, size_t np,
                        const kf_compare_result *res, double threshold, int md, kf_buf *out)
{
    kf_buf e[5] = {KF_BUF_INIT, KF_BUF_INIT, KF_BUF_INIT, KF_BUF_INIT, KF_BUF_INIT};
    if (md)
        kf_buf_addf(out,
                    "## compare: sweep %u (%s) → sweep %u (%s)\n\nregression threshold %.1f%%\n\n",
                    a->id, inert(&e[0], a->name, md), b->id, inert(&e[1], b->name, md), threshold);
    else
        kf_buf_addf(out, "compare: sweep %u (%s) -> sweep %u (%s), regression threshold %.1f%%\n\n",
                    a->id, inert(&e[0], a->name, 0), b->id, inert(&e[1], b->name, 0), threshold);
    if (res->machine_controls)
        kf_buf_addf(out,
                    "machine: the %zu configurations with the same kernel source ran %+.2f%% in "
                    "B (spread %.2f%%, the most one moved against it %.2f%%), so each change is "
                    "judged against that shift, its spread in the noise, and a change of other "
                    "code within the most the same code moved is not told apart from it\n\n",
                    res->machine_controls, res->machine_shift_pct, res->machine_spread_pct,
                    res->machine_moved_pct);
    if (md)
        kf_buf_adds(out, "| kernel | params | node A | node B | A | B | A median | B median | "
                         "change | noise | verdict |\n| --- | --- | --- | --- | --- | --- | ---: "
                         "| ---: | ---: | ---: | --- |\n");
    int wk = 6, wp = 6, wa = 6, wb = 6;
    for (size_t i = 0; i < np; i++) {
        const cfg *c = any_of(&p[i]);
        int k = (int)strlen(c->kernel), q = (int)strlen(c->params);
        int na = p[i].a ? (int)strlen(p[i].a->node) : 1,
            nb = p[i].b ? (int)strlen(p[i].b->node) : 1;
        wk = k > wk ? k : wk;
        wp = q > wp ? q : wp;
        wa = na > wa ? na : wa;
        wb = nb > wb ? nb : wb;
    }
    if (!md)
        kf_buf_addf(out, "  %-*s  %-*s  %-*s  %-*s  %-7s  %-7s  %12s  %12s  %9s  %8s  %s\n", wk,
                    "kernel", wp, "params", wa, "node A", wb, "node B", "A", "B", "A median",
                    "B median", "change", "noise", "verdict");
    /* Regressions first (broken, then slower past the threshold), then the
     * rest in the outcomes' order. */
    for (int pass = 0; pass < 2; pass++)
        for (int o = 0; o < O_COUNT; o++) {
            for (size_t i = 0; i < np; i++) {
                if ((int)p[i].o != o || p[i].regression != !pass)
                    continue;
                const cfg *c = any_of(&p[i]);
                char ma[32], mb[32], sa[16], sb[16], ch[16], bd[16];
                fmt_s(p[i].a ? p[i].a->median : NAN, ma, sizeof ma);
                fmt_s(p[i].b ? p[i].b->median : NAN, mb, sizeof mb);
                side_state(p[i].a, sa, sizeof sa);
                side_state(p[i].b, sb, sizeof sb);
                snprintf(ch, sizeof ch, isnan(p[i].change_pct) ? "-" : "%+.2f%%", p[i].change_pct);
                snprintf(bd, sizeof bd, isnan(p[i].band_pct) ? "-" : "%.2f%%", p[i].band_pct);
                const char *why = p[i].o == O_BROKEN && p[i].b ? p[i].b->why
                                  : p[i].o == O_BROKEN         ? "missing from sweep B"
                                  : p[i].o == O_BOTH && p[i].b ? p[i].b->why
                                  : p[i].o == O_PENDING        ? "a task has not ended"
                                  : p[i].why[0]                ? p[i].why
                                                               : "";
                if (md)
                    kf_buf_addf(out,
                                "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%s%s%s |\n",
                                inert(&e[0], c->kernel, 1), inert(&e[1], c->params, 1),
                                inert(&e[2], p[i].a ? p[i].a->node : "-", 1),
                                inert(&e[3], p[i].b ? p[i].b->node : "-", 1), sa, sb, ma, mb, ch,
                                bd, p[i].regression ? "**REGRESSION** " : "", outcome_name[o],
                                *why ? ": " : "", inert(&e[4], why, 1));
                else
                    kf_buf_addf(
                        out,
                        "  %-*s  %-*s  %-*s  %-*s  %-7s  %-7s  %12s  %12s  %9s  %8s  %s%s%s%s\n",
                        wk, inert(&e[0], c->kernel, 0), wp, inert(&e[1], c->params, 0), wa,
                        inert(&e[2], p[i].a ? p[i].a->node : "-", 0), wb,
                        inert(&e[3], p[i].b ? p[i].b->node : "-", 0), sa, sb, ma, mb, ch, bd,
                        p[i].regression ? "REGRESSION " : "", outcome_name[o], *why ? ": " : "",
                        inert(&e[4], why, 0));
            }
        }
    kf_buf_addf(out,
                "\n%zu configurations: %zu broken (passed in A, failed or missing in B), %zu "
                "slower, %zu impossible, %zu with a changed check, %zu failing in both, %zu "
                "fixed, %zu faster, %zu of the same code on the same machine moved, %zu within "
                "the noise, %zu only in B, %zu not ended; %zu regression%s (threshold %.1f%%)\n",
                np, res->broken, res->slower, res->impossible, res->changed, res->both_failing,
                res->fixed, res->faster, res->moved, res->same, res->only_b, res->pending,
                res->regressions, res->regressions == 1 ? "" : "s", threshold);
    for (int i = 0; i < 5; i++)
        kf_buf_release(&e[i]);
}

static json_t *jcfg(const cfg *c)
{
    if (!c)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "kernel", kf_json_str(c->kernel));
    json_object_set_new(o, "source_hash", *c->hash ? kf_json_str(c->hash) : json_null());
    json_object_set_new(o, "node", kf_json_str(c->node));
    json_object_set_new(o, "device", kf_json_str(c->device));
    json_object_set_new(o, "passed", json_boolean(c->ok));
    json_object_set_new(o, "validation", kf_json_str(c->vstate));
    json_object_set_new(o, "why", c->ok ? json_null() : kf_json_str(c->why));
    json_object_set_new(o, "median_s", isnan(c->median) ? json_null() : json_real(c->median));
    json_object_set_new(o, "noise_pct", json_real(c->noise));
    return o;
}

static int render_json(const side *a, const side *b, const pair *p, size_t np,
                       const kf_compare_result *res, double threshold, kf_buf *out, kf_err *err)
{
    json_t *o = json_object(), *rows = json_array(), *sum = json_object();
    json_object_set_new(o, "schema", json_string("kfleet.compare/2"));
    json_object_set_new(o, "sweep_a", json_integer(a->id));
    json_object_set_new(o, "sweep_b", json_integer(b->id));
    json_object_set_new(o, "threshold_pct", json_real(threshold));
    json_t *mach = json_object();
    json_object_set_new(mach, "controls", json_integer((json_int_t)res->machine_controls));
    json_object_set_new(mach, "shift_pct", json_real(res->machine_shift_pct));
    json_object_set_new(mach, "spread_pct", json_real(res->machine_spread_pct));
    json_object_set_new(mach, "moved_pct", json_real(res->machine_moved_pct));
    json_object_set_new(o, "machine",
                        res->machine_controls ? mach : (json_decref(mach), json_null()));
    for (int pass = 0; pass < 2; pass++)
        for (int oc = 0; oc < O_COUNT; oc++) {
            for (size_t i = 0; i < np; i++) {
                if ((int)p[i].o != oc || p[i].regression != !pass)
                    continue;
                const cfg *c = any_of(&p[i]);
                json_t *r = json_object();
                json_object_set_new(r, "kernel", kf_json_str(c->kernel));
                json_object_set_new(r, "params", kf_json_str(c->params));
                json_object_set_new(r, "a", jcfg(p[i].a));
                json_object_set_new(r, "b", jcfg(p[i].b));
                json_object_set_new(r, "change_pct",
                                    isnan(p[i].change_pct) ? json_null()
                                                           : json_real(p[i].change_pct));
                json_object_set_new(r, "change_vs_machine_pct",
                                    isnan(p[i].vs_machine_pct) ? json_null()
                                                               : json_real(p[i].vs_machine_pct));
                json_object_set_new(r, "noise_band_pct",
                                    isnan(p[i].band_pct) ? json_null() : json_real(p[i].band_pct));
                json_object_set_new(r, "verdict", kf_json_str(outcome_name[oc]));
                json_object_set_new(r, "why", p[i].why[0] ? kf_json_str(p[i].why) : json_null());
                json_object_set_new(r, "regression", json_boolean(p[i].regression));
                json_array_append_new(rows, r);
            }
        }
    json_object_set_new(o, "rows", rows);
    json_object_set_new(sum, "configurations", json_integer((json_int_t)np));
    json_object_set_new(sum, "broken", json_integer((json_int_t)res->broken));
    json_object_set_new(sum, "slower", json_integer((json_int_t)res->slower));
    json_object_set_new(sum, "impossible", json_integer((json_int_t)res->impossible));
    json_object_set_new(sum, "changed", json_integer((json_int_t)res->changed));
    json_object_set_new(sum, "failing_in_both", json_integer((json_int_t)res->both_failing));
    json_object_set_new(sum, "fixed", json_integer((json_int_t)res->fixed));
    json_object_set_new(sum, "faster", json_integer((json_int_t)res->faster));
    json_object_set_new(sum, "moved", json_integer((json_int_t)res->moved));
    json_object_set_new(sum, "same", json_integer((json_int_t)res->same));
    json_object_set_new(sum, "only_b", json_integer((json_int_t)res->only_b));
    json_object_set_new(sum, "not_ended", json_integer((json_int_t)res->pending));
    json_object_set_new(sum, "regressions", json_integer((json_int_t)res->regressions));
    json_object_set_new(o, "summary", sum);
    char *s = kf_json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return kf_err_set(err, KF_EIO, "cannot write the comparison as JSON");
    kf_buf_addf(out, "%s\n", s);
    free(s);
    return KF_OK;
}

int kf_compare_render(kf_txn *t, uint32_t a, uint32_t b, double threshold_pct, unsigned flags,
                      kf_compare_format fmt, kf_buf *out, kf_compare_result *res, kf_err *err)
{
    side sa = {0}, sb = {0};
    pair *p = NULL;
    memset(res, 0, sizeof *res);
    int rc = load_side(t, a, &sa, err);
    if (rc == KF_OK)
        rc = load_side(t, b, &sb, err);
    if (rc == KF_OK)
        p = kf_xcalloc(sa.n + sb.n + 1, sizeof *p);
    size_t np = 0, common = 0;
    for (size_t i = 0; rc == KF_OK && i < sb.n; i++)
        p[np++].b = &sb.c[i];
    for (int by = 0; by < BY_COUNT; by++)
        for (size_t i = 0; rc == KF_OK && i < np; i++) {
            cfg *m = p[i].a ? NULL : match(&sa, p[i].b, by);
            if (m) {
                m->matched = sb.c[i].matched = 1;
                p[i].a = m;
                common++;
            }
        }
    size_t kept = 0;
    for (size_t i = 0; i < np; i++)
        if (p[i].a || !further_copy(&sb, p[i].b))
            p[kept++] = p[i];
    np = kept;
    for (size_t i = 0; rc == KF_OK && i < sa.n; i++)
        if (!sa.c[i].matched && !further_copy(&sa, &sa.c[i]))
            p[np++].a = &sa.c[i];
    if (rc == KF_OK && common == 0)
        rc = kf_err_set(err, KF_EINVAL,
                        "sweeps %u (%s) and %u (%s) have no configuration in common (the same "
                        "kernel name and parameters): nothing to compare",
                        a, sa.name ? sa.name : "", b, sb.name ? sb.name : "");
    double ratio = 1;
    if (rc == KF_OK)
        machine_shift(p, np, res, &ratio);
    for (size_t i = 0; rc == KF_OK && i < np; i++) {
        judge(&p[i], threshold_pct, flags, ratio, res->machine_spread_pct, res->machine_moved_pct);
        size_t *count[O_COUNT] = {&res->broken,       &res->slower, &res->impossible, &res->changed,
                                  &res->both_failing, &res->fixed,  &res->faster,     &res->moved,
                                  &res->same,         &res->only_b, &res->pending};
        (*count[p[i].o])++;
        res->regressions += (size_t)p[i].regression;
    }
    res->pairs = common;
    if (rc == KF_OK) {
        if (fmt == KF_COMPARE_JSON)
            rc = render_json(&sa, &sb, p, np, res, threshold_pct, out, err);
        else
            render_text(&sa, &sb, p, np, res, threshold_pct, fmt == KF_COMPARE_MD, out);
    }
    free(p);
    free_side(&sa);
    free_side(&sb);
    return rc;
}
