/* report_svg — the charts of the HTML report; see report_svg.h.
 *
 * The charts are SVG written here, not by a charting library, because the
 * page must stand alone (no script or font from a CDN) and each chart is a
 * few dozen lines: a linear axis with 1-2-5 ticks or a log-log axis with
 * decade ticks, then bars or points. Every mark has a <title> tooltip with
 * its figures; a point label that would overlap another is left out.
 *
 * Like the page, the charts read only the report JSON, through the readers
 * report_html.c shares, and escape every string they draw. */
#include "common/text.h"
#include "report/report_page.h"
#include "report/report_svg.h"
#include "report/report_svg_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const svgi_palette[PALETTE] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                           "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#8c8c8c"};

/* ---- the rows, as the charts group them ---- */

/* A node's colour: its place among the agents. */
int svgi_node_color(const kf_rep_svg *ch, const char *node)
{
    size_t i;
    const json_t *a;
    json_array_foreach(ch->agents, i, a)
    {
        const char *id = kf_rep_str_at(a, "agent_id");
        if (id && strcmp(id, node) == 0)
            return (int)(i % (PALETTE - 1));
    }
    return GREY;
}

/* 1 when row i is the first row of its kernel. */
static int first_of_kernel(const json_t *rows, size_t i)
{
    const char *k = kf_rep_row_kernel(json_array_get(rows, i));
    for (size_t j = 0; j < i; j++)
        if (strcmp(kf_rep_row_kernel(json_array_get(rows, j)), k) == 0)
            return 0;
    return 1;
}

/* A kernel's colour: its place among the kernels, in row order. */
int svgi_kernel_color(const json_t *rows, const char *kernel)
{
    int n = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        if (!first_of_kernel(rows, i))
            continue;
        if (strcmp(kf_rep_row_kernel(json_array_get(rows, i)), kernel) == 0)
            return n % (PALETTE - 1);
        n++;
    }
    return GREY;
}

static int same_config(const json_t *a, const json_t *b)
{
    return strcmp(kf_rep_row_kernel(a), kf_rep_row_kernel(b)) == 0 &&
           json_equal(json_object_get(a, "params"), json_object_get(b, "params"));
}

/* ---- measuring and formatting text ---- */

/* Axis ticks: 0.01, 2.5, 250, 1.5k, 200k, 1M. */
void svgi_fmt_si(double v, char *out, size_t len)
{
    static const struct {
        double f;
        const char *s;
    } si[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
    for (size_t i = 0; i < sizeof si / sizeof si[0]; i++) {
        if (fabs(v) >= si[i].f) {
            snprintf(out, len, "%.3g%s", v / si[i].f, si[i].s);
            return;
        }
    }
    snprintf(out, len, "%.3g", v);
}

/* Display columns of a UTF-8 string, and a width estimate for SVG text. */
static size_t columns(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

double svgi_text_w(const char *s)
{
    return 7.6 * (double)columns(s); /* 12px sans-serif, digits the widest */
}

/* ---- SVG pieces ---- */

void svgi_svg_open(kf_buf *b, const char *cls, double w, double h, const char *label)
{
    kf_buf_addf(b,
                "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                "width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
                cls, w, h, w, h);
    kf_text_html(b, label);
    kf_buf_adds(b, "\">\n");
}

void svgi_svg_text(kf_buf *b, double x, double y, const char *anchor, const char *cls,
                   const char *s)
{
    kf_buf_addf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"", x, y, anchor);
    if (cls)
        kf_buf_addf(b, " class=\"%s\"", cls);
    kf_buf_addc(b, '>');
    kf_text_html(b, s);
    kf_buf_adds(b, "</text>\n");
}

void svgi_svg_line(kf_buf *b, double x1, double y1, double x2, double y2, const char *cls)
{
    kf_buf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"%s\"/>\n", x1, y1,
                x2, y2, cls);
}

size_t svgi_add_key(swatch *keys, size_t n, const char *name, int color)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].name, name) == 0)
            return n;
    if (n == MAXKEYS)
        return n;
    keys[n].name = name;
    keys[n].color = color;
    return n + 1;
}

static int by_color(const void *a, const void *b)
{
    return ((const swatch *)a)->color - ((const swatch *)b)->color;
}

/* Draws (when b) the legend from (x, y) wrapping before width; returns the
 * number of lines it takes. */
int svgi_svg_legend(kf_buf *b, double x, double y, double width, const swatch *keys, size_t n)
{
    double cx = x;
    int lines = n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        double w = 18 + svgi_text_w(keys[i].name) + 16;
        if (cx > x && cx + w > width) {
            cx = x;
            y += 18;
            lines++;
        }
        if (b) {
            kf_buf_addf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                        cx, y - 10, svgi_palette[keys[i].color]);
            svgi_svg_text(b, cx + 17, y, "start", NULL, keys[i].name);
        }
        cx += w;
    }
    return lines;
}

/* ---- bar charts (per kernel, per node) ---- */

struct bar {
    char label[96]; /* the configuration; "" continues the group above */
    char tip[320];
    const char *node;
    int color;
    double v, lo, hi; /* lo == hi: no whisker */
    char val[32];     /* v as the bar's label reads it */
};

typedef struct barchart {
    const char *cls;
    char title[160], sub[320], axis[96];
    double scale; /* what the axis shows is value * scale */
    bar *bars;
    size_t n;
} barchart;

enum { CW = 960, BAR_H = 16, BAR_GAP = 4, GROUP_GAP = 10 };

static double nice_step(double span, int nticks)
{
    double raw = span / nticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void bar_axis(kf_buf *b, const barchart *c, double x0, double x1, double top, double bottom,
                     double xmax, double step)
{
    char s[32];
    for (int i = 0; i * step <= xmax * 1.0001; i++) {
        double x = x0 + i * step / xmax * (x1 - x0);
        svgi_svg_line(b, x, top - 4, x, bottom, "grid");
        svgi_fmt_si(i * step, s, sizeof s);
        svgi_svg_text(b, x, bottom + 16, "middle", NULL, s);
    }
    svgi_svg_line(b, x0, top - 4, x0, bottom, "axis");
    svgi_svg_text(b, (x0 + x1) / 2, bottom + 36, "middle", "sub", c->axis);
}

static void bar_one(kf_buf *b, const bar *r, double x0, double y, double px)
{
    double w = fmax(r->v * px, 1), end = x0 + w;
    if (r->label[0])
        svgi_svg_text(b, x0 - 8, y + BAR_H - 4, "end", NULL, r->label);
    kf_buf_addf(b,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                "<title>",
                x0, y, w, BAR_H, svgi_palette[r->color]);
    kf_text_html(b, r->tip);
    kf_buf_adds(b, "</title></rect>\n");
    if (r->hi > r->lo) {
        double a = x0 + r->lo * px, z = x0 + r->hi * px, m = y + BAR_H / 2.0;
        svgi_svg_line(b, a, m, z, m, "whisker");
        svgi_svg_line(b, a, m - 4, a, m + 4, "whisker");
        svgi_svg_line(b, z, m - 4, z, m + 4, "whisker");
        end = fmax(end, z);
    }
    svgi_svg_text(b, end + 4, y + BAR_H - 4, "start", "val", r->val);
}

static void bar_chart(kf_buf *b, const barchart *c)
{
    swatch keys[MAXKEYS] = {{NULL, 0}};
    size_t nk = 0, groups = 0;
    double max = 0, lw = 0;
    for (size_t i = 0; i < c->n; i++) {
        nk = svgi_add_key(keys, nk, c->bars[i].node, c->bars[i].color);
        max = fmax(max, fmax(c->bars[i].v, c->bars[i].hi) * c->scale);
        lw = fmax(lw, svgi_text_w(c->bars[i].label));
        groups += c->bars[i].label[0] != 0;
    }
    nk = nk > 1 ? nk : 0; /* one node: nothing to tell apart */
    qsort(keys, nk, sizeof *keys, by_color);
    double x0 = 20 + fmin(lw, 360), x1 = CW - 80;
    double top = 50 + 18.0 * svgi_svg_legend(NULL, 8, 0, CW, keys, nk);
    double plot_h =
        (double)c->n * (BAR_H + BAR_GAP) + (double)(groups ? groups - 1 : 0) * GROUP_GAP;
    double step = max > 0 ? nice_step(max, 5) : 0.2;
    double xmax = max > 0 ? ceil(max / step) * step : 1;
    svgi_svg_open(b, c->cls, CW, top + plot_h + 48, c->title);
    svgi_svg_text(b, 8, 18, "start", "title", c->title);
    svgi_svg_text(b, 8, 36, "start", "sub", c->sub);
    svgi_svg_legend(b, 8, 58, CW, keys, nk);
    bar_axis(b, c, x0, x1, top, top + plot_h, xmax, step);
    double y = top;
    for (size_t i = 0; i < c->n; i++) {
        if (i && c->bars[i].label[0])
            y += GROUP_GAP;
        bar scaled = c->bars[i];
        scaled.v *= c->scale;
        scaled.lo *= c->scale;
        scaled.hi *= c->scale;
        bar_one(b, &scaled, x0, y, (x1 - x0) / xmax);
        y += BAR_H + BAR_GAP;
    }
    kf_buf_adds(b, "</svg>\n");
}

typedef enum { MET_GFLOPS, MET_GBPS, MET_TIME } metric;

/* The kernel's natural metric: GFLOP/s when it counts FLOPs, else GB/s,
 * else (neither counted) the median time. */
static metric kernel_metric(const json_t *rows, const char *kernel)
{
    metric m = MET_TIME;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const json_t *p = kf_rep_obj_at(row, "profile");
        if (strcmp(kf_rep_row_kernel(row), kernel) != 0 || !p)
            continue;
        if (kf_rep_num_or(p, "flops", 0) > 0)
            return MET_GFLOPS;
        if (kf_rep_num_or(p, "bytes", 0) > 0)
            m = MET_GBPS;
    }
    return m;
}

/* The row's value in metric m with its p10-p90 range (min-max without
 * quantiles); 0 when the row has no successful profile. */
static int metric_of(const json_t *row, metric m, double *v, double *lo, double *hi)
{
    const json_t *p = kf_rep_result_profile(row);
    double fast, slow, work = 0;
    if (!p || !kf_rep_num_at(p,
                             m == MET_GFLOPS ? "gflops"
                             : m == MET_GBPS ? "gbps"
                                             : "median_s",
                             v))
        return 0;
    if (!(kf_rep_num_at(p, "p10_s", &fast) && kf_rep_num_at(p, "p90_s", &slow)) &&
        !(kf_rep_num_at(p, "min_s", &fast) && kf_rep_num_at(p, "max_s", &slow)))
        fast = slow = 0;
    if (m == MET_TIME) {
        *lo = fast;
        *hi = slow;
        return 1;
    }
    kf_rep_num_at(p, m == MET_GFLOPS ? "flops" : "bytes", &work);
    *lo = *hi = *v;
    if (fast > 0 && slow > 0 && work > 0) {
        *lo = work / slow / 1e9;
        *hi = work / fast / 1e9;
    }
    return 1;
}

static const char *metric_name(metric m)
{
    return m == MET_GFLOPS ? "GFLOP/s" : m == MET_GBPS ? "GB/s" : "median time";
}

/* The bars of one kernel's rows that have a value; only those whose
 * configuration ran on two nodes or more when multi. */
static size_t kernel_bars(const kf_rep_svg *ch, const char *kernel, metric m, int multi, bar *bars)
{
    size_t n = 0, i;
    const json_t *row, *prev = NULL;
    json_array_foreach(ch->rows, i, row)
    {
        bar *r = &bars[n];
        if (strcmp(kf_rep_row_kernel(row), kernel) != 0 ||
            !metric_of(row, m, &r->v, &r->lo, &r->hi))
            continue;
        size_t nodes = 0;
        for (size_t j = 0; multi && j < json_array_size(ch->rows); j++) {
            double v, lo, hi;
            const json_t *o = json_array_get(ch->rows, j);
            nodes += same_config(row, o) && metric_of(o, m, &v, &lo, &hi);
        }
        if (multi && nodes < 2)
            continue;
        r->node = kf_rep_row_node(row);
        r->color = svgi_node_color(ch, r->node);
        kf_rep_params_str(ch->rows, row, 1, r->label, sizeof r->label);
        if (!r->label[0])
            snprintf(r->label, sizeof r->label, "%s", kernel);
        char full[256], val[48];
        kf_rep_params_str(ch->rows, row, 0, full, sizeof full);
        if (m == MET_TIME) {
            const char *u;
            double k = kf_rep_time_unit(r->v, &u);
            kf_rep_fmt_time(r->v, val, sizeof val);
            kf_rep_fmt_short(r->v * k, r->val, sizeof r->val);
            snprintf(r->val + strlen(r->val), sizeof r->val - strlen(r->val), " %s", u);
        } else {
            snprintf(val, sizeof val, "%.4g %s", r->v, metric_name(m));
            kf_rep_fmt_short(r->v, r->val, sizeof r->val);
        }
        snprintf(r->tip, sizeof r->tip, "%s %s on %s: %s", kernel, full, r->node, val);
        kf_rep_cut(r->label, sizeof r->label, 44);
        if (prev && same_config(prev, row))
            r->label[0] = '\0';
        prev = row;
        n++;
    }
    return n;
}

static void chart_texts(const kf_rep_svg *ch, barchart *c, const char *kernel, metric m)
{
    char fixed[256];
    const char *u = "";
    c->scale = 1;
    if (m == MET_TIME) {
        double max = 0;
        for (size_t i = 0; i < c->n; i++)
            max = fmax(max, fmax(c->bars[i].v, c->bars[i].hi));
        c->scale = kf_rep_time_unit(max, &u);
    }
    snprintf(c->title, sizeof c->title, "%s: %s", kernel,
             m == MET_TIME ? "median time" : metric_name(m));
    const json_t *row = NULL, *r;
    size_t i;
    json_array_foreach(ch->rows, i, r) if (!row && strcmp(kf_rep_row_kernel(r), kernel) == 0) row =
        r;
    kf_rep_params_str(ch->rows, row, 2, fixed, sizeof fixed);
    snprintf(c->sub, sizeof c->sub, "%s%s%swhisker: p10%sp90 of the samples",
             fixed[0] ? "fixed: " : "", fixed, fixed[0] ? "; " : "", KF_REP_DASH);
    if (m == MET_TIME)
        snprintf(c->axis, sizeof c->axis, "median time (%s), shorter is faster", u);
    else
        snprintf(c->axis, sizeof c->axis, "%s at the median time, longer is faster",
                 metric_name(m));
}

void kf_rep_svg_kernel_charts(kf_rep_svg *ch, kf_buf *b)
{
    kf_buf_adds(b, "<h2 id=\"kernels\">Per kernel</h2>\n<p class=\"note\">One bar per "
                   "configuration and node: GFLOP/s for a kernel that counts FLOPs, GB/s for "
                   "one that counts only bytes, else the median time.</p>\n");
    for (size_t i = 0; i < json_array_size(ch->rows); i++) {
        if (!first_of_kernel(ch->rows, i))
            continue;
        const char *k = kf_rep_row_kernel(json_array_get(ch->rows, i));
        metric m = kernel_metric(ch->rows, k);
        barchart c = {.cls = "kf-bars", .bars = ch->bars};
        c.n = kernel_bars(ch, k, m, 0, ch->bars);
        if (!c.n) {
            kf_buf_adds(b, "<p>");
            kf_text_htmlf(b, "%s: no successful profile to chart.", k);
            kf_buf_adds(b, "</p>\n");
            continue;
        }
        chart_texts(ch, &c, k, m);
        bar_chart(b, &c);
    }
}

void kf_rep_svg_node_charts(kf_rep_svg *ch, kf_buf *b)
{
    int any = 0;
    kf_buf_adds(b, "<h2 id=\"nodes-compared\">Across nodes</h2>\n");
    for (size_t i = 0; i < json_array_size(ch->rows); i++) {
        if (!first_of_kernel(ch->rows, i))
            continue;
        const char *k = kf_rep_row_kernel(json_array_get(ch->rows, i));
        barchart c = {.cls = "kf-nodes", .bars = ch->bars};
        c.n = kernel_bars(ch, k, MET_TIME, 1, ch->bars);
        if (!c.n)
            continue;
        if (!any)
            kf_buf_adds(b, "<p class=\"note\">The configurations that ran on more than one "
                           "node: the median per node.</p>\n");
        any = 1;
        chart_texts(ch, &c, k, MET_TIME);
        snprintf(c.title, sizeof c.title, "%s: median time per node", k);
        bar_chart(b, &c);
    }
    if (!any)
        kf_buf_adds(b, "<p>No configuration ran on more than one node, so there is nothing to "
                       "compare (a sweep with <code>nodes: all</code> runs each on every "
                       "node).</p>\n");
}

/* ---- life cycle ---- */

kf_rep_svg *kf_rep_svg_new(const json_t *rows, const json_t *agents)
{
    kf_rep_svg *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    size_t n = json_array_size(rows) + 1;
    *ch = (kf_rep_svg){rows, agents, calloc(n, sizeof(bar)), calloc(n, sizeof(point)),
                       calloc(2 * n + 2, sizeof(rect))};
    if (!ch->bars || !ch->pts || !ch->placed)
        kf_rep_svg_destroy(&ch);
    return ch;
}

void kf_rep_svg_destroy(kf_rep_svg **self)
{
    if (!self || !*self)
        return;
    free((*self)->bars);
    free((*self)->pts);
    free((*self)->placed);
    free(*self);
    *self = NULL;
}
