/* compare — two sweeps side by side; see compare.h for the rules. */
#include "report/compare.h"
#include "common/xalloc.h"
#include "report/report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One profiled configuration of a sweep. */
typedef struct cfg {
    const char *kernel, *node, *device;
    char params[512]; /* "k=v k=v", keys sorted */
    double median, noise;
    int matched;
} cfg;

typedef struct side {
    json_t *report;
    cfg *c;
    size_t n;
    uint32_t id;
    const char *name;
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

static void params_of(const json_t *params, char *out, size_t len)
{
    const char *keys[64];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v)
    {
        if (n < 64)
            keys[n++] = k;
    }
    qsort(keys, n, sizeof *keys, cmp_keys);
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", i ? " " : "", keys[i],
                                (long long)json_integer_value(json_object_get(params, keys[i])));
}

static int load_side(kf_txn *t, uint32_t id, side *s, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    kf_report_opts o = {.fmt = KF_REPORT_JSON, .omit_samples = 1};
    int rc = kf_report_render_opts(t, id, &o, &b, err);
    if (rc != KF_OK) {
        kf_buf_release(&b);
        return rc;
    }
    json_error_t je;
    s->report = json_loadb(b.data, b.len, 0, &je);
    kf_buf_release(&b);
    if (!s->report)
        return kf_err_set(err, KF_EINVAL, "sweep %u: the report does not parse: %s", id, je.text);
    s->id = id;
    s->name = json_string_value(json_object_get(json_object_get(s->report, "sweep"), "name"));
    json_t *rows = json_object_get(s->report, "rows");
    s->c = kf_xcalloc(json_array_size(rows) + 1, sizeof *s->c);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        json_t *p = json_object_get(r, "profile");
        json_t *med = json_object_get(p, "median_s");
        if (!json_is_number(med) || strcmp(str_of(p, "state"), "succeeded") != 0)
            continue; /* nothing measured to compare */
        cfg *c = &s->c[s->n++];
        c->kernel = str_of(r, "kernel");
        c->node = str_of(r, "node");
        c->device = str_of(r, "device");
        params_of(json_object_get(r, "params"), c->params, sizeof c->params);
        c->median = json_number_value(med);
        json_t *noise = json_object_get(p, "noise_pct");
        c->noise = json_is_number(noise) ? json_number_value(noise) : 0;
    }
    return KF_OK;
}

static void free_side(side *s)
{
    json_decref(s->report);
    free(s->c);
}

static int same_cfg(const cfg *a, const cfg *b)
{
    return strcmp(a->kernel, b->kernel) == 0 && strcmp(a->params, b->params) == 0;
}

/* B's counterpart in A: the same node first, else the same device. */
static cfg *match(side *a, const cfg *b)
{
    for (size_t i = 0; i < a->n; i++)
        if (!a->c[i].matched && same_cfg(&a->c[i], b) && strcmp(a->c[i].node, b->node) == 0)
            return &a->c[i];
    for (size_t i = 0; i < a->n; i++)
        if (!a->c[i].matched && same_cfg(&a->c[i], b) && strcmp(a->c[i].device, b->device) == 0)
            return &a->c[i];
    return NULL;
}

typedef struct pair {
    const cfg *a, *b;
    double change_pct, band_pct;
    const char *verdict;
    int regression;
} pair;

static void judge(pair *p, double threshold)
{
    p->change_pct = (p->b->median / p->a->median - 1) * 100;
    p->band_pct = sqrt(p->a->noise * p->a->noise + p->b->noise * p->b->noise);
    if (fabs(p->change_pct) <= p->band_pct)
        p->verdict = "same";
    else
        p->verdict = p->change_pct < 0 ? "faster" : "slower";
    p->regression = p->change_pct > 0 && p->change_pct > p->band_pct && p->change_pct > threshold;
}

static void fmt_s(double s, char *out, size_t len)
{
    if (s >= 1)
        snprintf(out, len, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(out, len, "%.3f ms", s * 1e3);
    else
        snprintf(out, len, "%.3f us", s * 1e6);
}

static void render_table(const side *a, const side *b, const pair *p, size_t np,
                         const kf_compare_result *res, double threshold, kf_buf *out)
{
    kf_buf_addf(out, "compare: sweep %u (%s) -> sweep %u (%s), regression threshold %.1f%%\n\n",
                a->id, a->name ? a->name : "", b->id, b->name ? b->name : "", threshold);
    int wk = 6, wp = 6, wn = 4;
    for (size_t i = 0; i < np; i++) {
        int k = (int)strlen(p[i].b->kernel), q = (int)strlen(p[i].b->params),
            n = (int)strlen(p[i].b->node);
        wk = k > wk ? k : wk;
        wp = q > wp ? q : wp;
        wn = n > wn ? n : wn;
    }
    kf_buf_addf(out, "  %-*s  %-*s  %-*s  %12s  %12s  %9s  %8s  %s\n", wk, "kernel", wp, "params",
                wn, "node", "A median", "B median", "change", "noise", "verdict");
    for (size_t i = 0; i < np; i++) {
        char ma[32], mb[32];
        fmt_s(p[i].a->median, ma, sizeof ma);
        fmt_s(p[i].b->median, mb, sizeof mb);
        kf_buf_addf(out, "  %-*s  %-*s  %-*s  %12s  %12s  %+8.2f%%  %7.2f%%  %s%s\n", wk,
                    p[i].b->kernel, wp, p[i].b->params, wn, p[i].b->node, ma, mb, p[i].change_pct,
                    p[i].band_pct, p[i].verdict, p[i].regression ? "  REGRESSION" : "");
    }
    for (size_t i = 0; i < a->n; i++)
        if (!a->c[i].matched)
            kf_buf_addf(out, "  %s %s on %s: only in sweep %u\n", a->c[i].kernel, a->c[i].params,
                        a->c[i].node, a->id);
    for (size_t i = 0; i < b->n; i++)
        if (!b->c[i].matched)
            kf_buf_addf(out, "  %s %s on %s: only in sweep %u\n", b->c[i].kernel, b->c[i].params,
                        b->c[i].node, b->id);
    kf_buf_addf(out,
                "\n%zu configurations compared: %zu faster, %zu slower, %zu within the noise; "
                "%zu only in A, %zu only in B; %zu regression%s beyond %.1f%%\n",
                res->pairs, res->faster, res->slower, res->same, res->only_a, res->only_b,
                res->regressions, res->regressions == 1 ? "" : "s", threshold);
}

static int render_json(const side *a, const side *b, const pair *p, size_t np,
                       const kf_compare_result *res, double threshold, kf_buf *out, kf_err *err)
{
    json_t *o = json_object(), *rows = json_array(), *sum = json_object();
    json_object_set_new(o, "schema", json_string("kfleet.compare/1"));
    json_object_set_new(o, "sweep_a", json_integer(a->id));
    json_object_set_new(o, "sweep_b", json_integer(b->id));
    json_object_set_new(o, "threshold_pct", json_real(threshold));
    for (size_t i = 0; i < np; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "kernel", json_string(p[i].b->kernel));
        json_object_set_new(r, "params", json_string(p[i].b->params));
        json_object_set_new(r, "node_a", json_string(p[i].a->node));
        json_object_set_new(r, "node_b", json_string(p[i].b->node));
        json_object_set_new(r, "median_a_s", json_real(p[i].a->median));
        json_object_set_new(r, "median_b_s", json_real(p[i].b->median));
        json_object_set_new(r, "change_pct", json_real(p[i].change_pct));
        json_object_set_new(r, "noise_band_pct", json_real(p[i].band_pct));
        json_object_set_new(r, "verdict", json_string(p[i].verdict));
        json_object_set_new(r, "regression", json_boolean(p[i].regression));
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    json_object_set_new(sum, "pairs", json_integer((json_int_t)res->pairs));
    json_object_set_new(sum, "faster", json_integer((json_int_t)res->faster));
    json_object_set_new(sum, "slower", json_integer((json_int_t)res->slower));
    json_object_set_new(sum, "same", json_integer((json_int_t)res->same));
    json_object_set_new(sum, "only_a", json_integer((json_int_t)res->only_a));
    json_object_set_new(sum, "only_b", json_integer((json_int_t)res->only_b));
    json_object_set_new(sum, "regressions", json_integer((json_int_t)res->regressions));
    json_object_set_new(o, "summary", sum);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return kf_err_set(err, KF_ENOMEM, "out of memory for the comparison");
    kf_buf_addf(out, "%s\n", s);
    free(s);
    return KF_OK;
}

int kf_compare_render(kf_txn *t, uint32_t a, uint32_t b, double threshold_pct, int json,
                      kf_buf *out, kf_compare_result *res, kf_err *err)
{
    side sa = {0}, sb = {0};
    pair *p = NULL;
    memset(res, 0, sizeof *res);
    int rc = load_side(t, a, &sa, err);
    if (rc == KF_OK)
        rc = load_side(t, b, &sb, err);
    if (rc == KF_OK)
        p = kf_xcalloc(sb.n + 1, sizeof *p);
    size_t np = 0;
    for (size_t i = 0; rc == KF_OK && i < sb.n; i++) {
        cfg *m = match(&sa, &sb.c[i]);
        if (!m)
            continue;
        m->matched = sb.c[i].matched = 1;
        p[np].a = m;
        p[np].b = &sb.c[i];
        judge(&p[np], threshold_pct);
        res->faster += strcmp(p[np].verdict, "faster") == 0;
        res->slower += strcmp(p[np].verdict, "slower") == 0;
        res->same += strcmp(p[np].verdict, "same") == 0;
        res->regressions += (size_t)p[np].regression;
        np++;
    }
    res->pairs = np;
    for (size_t i = 0; rc == KF_OK && i < sa.n; i++)
        res->only_a += !sa.c[i].matched;
    for (size_t i = 0; rc == KF_OK && i < sb.n; i++)
        res->only_b += !sb.c[i].matched;
    if (rc == KF_OK) {
        if (json)
            rc = render_json(&sa, &sb, p, np, res, threshold_pct, out, err);
        else
            render_table(&sa, &sb, p, np, res, threshold_pct, out);
    }
    free(p);
    free_side(&sa);
    free_side(&sb);
    return rc;
}
