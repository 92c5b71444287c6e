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
#include "report/report_page.h"
#include "report/report_svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PALETTE = 10, GREY = PALETTE - 1 };
static const char *const palette[PALETTE] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                             "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#8c8c8c"};

typedef struct bar bar;
typedef struct point point;
typedef struct rect rect;

struct kf_rep_svg {
    const json_t *rows, *agents;
    kf_buf *b;
    /* scratch for the charts, one entry per row (two for labels) */
    bar *bars;
    point *pts;
    rect *placed;
};

/* ---- the rows, as the charts group them ---- */

/* A node's colour: its place among the agents. */
static int node_color(const kf_rep_svg *ch, const char *node)
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
static int kernel_color(const json_t *rows, const char *kernel)
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
static void fmt_si(double v, char *out, size_t len)
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

static double text_w(const char *s)
{
    return 7.6 * (double)columns(s); /* 12px sans-serif, digits the widest */
}

/* ---- SVG pieces ---- */

static void svg_open(kf_buf *b, const char *cls, double w, double h, const char *label)
{
    kf_buf_addf(b,
                "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                "width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
                cls, w, h, w, h);
    kf_rep_esc(b, label);
    kf_buf_adds(b, "\">\n");
}

static void svg_text(kf_buf *b, double x, double y, const char *anchor, const char *cls,
                     const char *s)
{
    kf_buf_addf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"", x, y, anchor);
    if (cls)
        kf_buf_addf(b, " class=\"%s\"", cls);
    kf_buf_addc(b, '>');
    kf_rep_esc(b, s);
    kf_buf_adds(b, "</text>\n");
}

static void svg_line(kf_buf *b, double x1, double y1, double x2, double y2, const char *cls)
{
    kf_buf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"%s\"/>\n", x1, y1,
                x2, y2, cls);
}

typedef struct swatch {
    const char *name;
    int color;
} swatch;

enum { MAXKEYS = 24 };

static size_t add_key(swatch *keys, size_t n, const char *name, int color)
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
static int svg_legend(kf_buf *b, double x, double y, double width, const swatch *keys, size_t n)
{
    double cx = x;
    int lines = n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        double w = 18 + text_w(keys[i].name) + 16;
        if (cx > x && cx + w > width) {
            cx = x;
            y += 18;
            lines++;
        }
        if (b) {
            kf_buf_addf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                        cx, y - 10, palette[keys[i].color]);
            svg_text(b, cx + 17, y, "start", NULL, keys[i].name);
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
        svg_line(b, x, top - 4, x, bottom, "grid");
        fmt_si(i * step, s, sizeof s);
        svg_text(b, x, bottom + 16, "middle", NULL, s);
    }
    svg_line(b, x0, top - 4, x0, bottom, "axis");
    svg_text(b, (x0 + x1) / 2, bottom + 36, "middle", "sub", c->axis);
}

static void bar_one(kf_buf *b, const bar *r, double x0, double y, double px)
{
    double w = fmax(r->v * px, 1), end = x0 + w;
    if (r->label[0])
        svg_text(b, x0 - 8, y + BAR_H - 4, "end", NULL, r->label);
    kf_buf_addf(b,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                "<title>",
                x0, y, w, BAR_H, palette[r->color]);
    kf_rep_esc(b, r->tip);
    kf_buf_adds(b, "</title></rect>\n");
    if (r->hi > r->lo) {
        double a = x0 + r->lo * px, z = x0 + r->hi * px, m = y + BAR_H / 2.0;
        svg_line(b, a, m, z, m, "whisker");
        svg_line(b, a, m - 4, a, m + 4, "whisker");
        svg_line(b, z, m - 4, z, m + 4, "whisker");
        end = fmax(end, z);
    }
    svg_text(b, end + 4, y + BAR_H - 4, "start", "val", r->val);
}

static void bar_chart(kf_buf *b, const barchart *c)
{
    swatch keys[MAXKEYS] = {{NULL, 0}};
    size_t nk = 0, groups = 0;
    double max = 0, lw = 0;
    for (size_t i = 0; i < c->n; i++) {
        nk = add_key(keys, nk, c->bars[i].node, c->bars[i].color);
        max = fmax(max, fmax(c->bars[i].v, c->bars[i].hi) * c->scale);
        lw = fmax(lw, text_w(c->bars[i].label));
        groups += c->bars[i].label[0] != 0;
    }
    nk = nk > 1 ? nk : 0; /* one node: nothing to tell apart */
    qsort(keys, nk, sizeof *keys, by_color);
    double x0 = 20 + fmin(lw, 360), x1 = CW - 80;
    double top = 50 + 18.0 * svg_legend(NULL, 8, 0, CW, keys, nk);
    double plot_h =
        (double)c->n * (BAR_H + BAR_GAP) + (double)(groups ? groups - 1 : 0) * GROUP_GAP;
    double step = max > 0 ? nice_step(max, 5) : 0.2;
    double xmax = max > 0 ? ceil(max / step) * step : 1;
    svg_open(b, c->cls, CW, top + plot_h + 48, c->title);
    svg_text(b, 8, 18, "start", "title", c->title);
    svg_text(b, 8, 36, "start", "sub", c->sub);
    svg_legend(b, 8, 58, CW, keys, nk);
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
    const json_t *p = kf_rep_obj_at(row, "profile");
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
        r->color = node_color(ch, r->node);
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

void kf_rep_svg_kernel_charts(kf_rep_svg *ch)
{
    kf_buf_adds(ch->b, "<h2 id=\"kernels\">Per kernel</h2>\n<p class=\"note\">One bar per "
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
            kf_buf_adds(ch->b, "<p>");
            kf_rep_escf(ch->b, "%s: no successful profile to chart.", k);
            kf_buf_adds(ch->b, "</p>\n");
            continue;
        }
        chart_texts(ch, &c, k, m);
        bar_chart(ch->b, &c);
    }
}

void kf_rep_svg_node_charts(kf_rep_svg *ch)
{
    int any = 0;
    kf_buf_adds(ch->b, "<h2 id=\"nodes-compared\">Across nodes</h2>\n");
    for (size_t i = 0; i < json_array_size(ch->rows); i++) {
        if (!first_of_kernel(ch->rows, i))
            continue;
        const char *k = kf_rep_row_kernel(json_array_get(ch->rows, i));
        barchart c = {.cls = "kf-nodes", .bars = ch->bars};
        c.n = kernel_bars(ch, k, MET_TIME, 1, ch->bars);
        if (!c.n)
            continue;
        if (!any)
            kf_buf_adds(ch->b, "<p class=\"note\">The configurations that ran on more than one "
                               "node: the median per node.</p>\n");
        any = 1;
        chart_texts(ch, &c, k, MET_TIME);
        snprintf(c.title, sizeof c.title, "%s: median time per node", k);
        bar_chart(ch->b, &c);
    }
    if (!any)
        kf_buf_adds(ch->b, "<p>No configuration ran on more than one node, so there is nothing to "
                           "compare (a sweep with <code>nodes: all</code> runs each on every "
                           "node).</p>\n");
}

/* ---- roofline (per node) ---- */

struct rect {
    double x, y, w, h;
};

struct point {
    double ai, gf; /* FLOPs per byte, GFLOP/s */
    const char *kernel;
    int color, labelled;
    char tip[320];
};

typedef struct roof {
    double copy, peak;         /* GB/s and GFLOP/s; 0 when not measured */
    double lx0, lx1, ly0, ly1; /* log10 of the axes' ends */
    double x0, x1, y0, y1;     /* the plot area in pixels, y0 at the top */
    rect *placed;              /* what a label must not cover */
    size_t nplaced;
} roof;

enum { RW = 960, RH = 560 };

static double rx(const roof *f, double v)
{
    return f->x0 + (log10(v) - f->lx0) / (f->lx1 - f->lx0) * (f->x1 - f->x0);
}

static double ry(const roof *f, double v)
{
    return f->y1 - (log10(v) - f->ly0) / (f->ly1 - f->ly0) * (f->y1 - f->y0);
}

/* The node's rows with both FLOPs and bytes; the kernels of the others
 * (nothing to place on an intensity axis) go to skipped. */
static size_t roof_points(const kf_rep_svg *ch, const char *node, point *pts, swatch *skipped,
                          size_t *nsk)
{
    size_t n = 0, i;
    const json_t *row;
    json_array_foreach(ch->rows, i, row)
    {
        const json_t *p = kf_rep_obj_at(row, "profile");
        double flops = 0, bytes = 0, gf = 0, med;
        if (!p || strcmp(kf_rep_row_node(row), node) != 0 || !kf_rep_num_at(p, "median_s", &med))
            continue;
        kf_rep_num_at(p, "flops", &flops);
        kf_rep_num_at(p, "bytes", &bytes);
        if (!(flops > 0 && bytes > 0 && kf_rep_num_at(p, "gflops", &gf) && gf > 0)) {
            *nsk = add_key(skipped, *nsk, kf_rep_row_kernel(row), 0);
            continue;
        }
        point *q = &pts[n++];
        char params[256];
        q->ai = flops / bytes;
        q->gf = gf;
        q->kernel = kf_rep_row_kernel(row);
        q->color = kernel_color(ch->rows, q->kernel);
        q->labelled = 0;
        kf_rep_params_str(ch->rows, row, 0, params, sizeof params);
        snprintf(q->tip, sizeof q->tip, "%s %s: %.4g GFLOP/s at %.3g FLOP/byte", q->kernel, params,
                 gf, q->ai);
    }
    return n;
}

/* Axis ends around the points, the ridge and the roofs' ends, with a margin
 * so that no point sits on the frame. */
static void roof_range(roof *f, const point *pts, size_t n)
{
    double xa = INFINITY, xb = 0, ya = INFINITY, yb = 0;
    for (size_t i = 0; i < n; i++) {
        xa = fmin(xa, pts[i].ai);
        xb = fmax(xb, pts[i].ai);
        ya = fmin(ya, pts[i].gf);
        yb = fmax(yb, pts[i].gf);
    }
    if (f->copy > 0 && f->peak > 0) {
        xa = fmin(xa, f->peak / f->copy);
        xb = fmax(xb, f->peak / f->copy);
    }
    if (!(xb > 0)) {
        xa = 0.01;
        xb = 1000;
    }
    if (f->peak > 0) {
        ya = fmin(ya, f->peak);
        yb = fmax(yb, f->peak);
    }
    if (f->copy > 0) {
        ya = fmin(ya, f->copy * xa);
        yb = fmax(yb, f->copy * xa);
    }
    /* At least two decades, widened on both sides, so that a decade tick
     * always falls inside and a lone point sits in the middle. */
    double wx = fmax(0, 2 - (log10(xb) - log10(xa) + 0.5)) / 2;
    double wy = fmax(0, 2 - (log10(yb) - log10(ya) + 0.55)) / 2;
    f->lx0 = log10(xa) - 0.25 - wx;
    f->lx1 = log10(xb) + 0.25 + wx;
    f->ly0 = log10(ya) - 0.25 - wy;
    f->ly1 = log10(yb) + 0.3 + wy;
}

/* Ticks at the decades inside [l0, l1], and at 2 and 5 times them when the
 * axis spans few decades; x: 1 for the x axis. */
static void roof_ticks(kf_buf *b, const roof *f, int x)
{
    double l0 = x ? f->lx0 : f->ly0, l1 = x ? f->lx1 : f->ly1;
    static const double steps[] = {1, 2, 5};
    size_t nsteps = l1 - l0 <= 3 ? 3 : 1;
    char s[32];
    for (double k = floor(l0); k <= l1; k++) {
        for (size_t i = 0; i < nsteps; i++) {
            double v = steps[i] * pow(10, k);
            if (log10(v) < l0 || log10(v) > l1)
                continue;
            fmt_si(v, s, sizeof s);
            if (x) {
                svg_line(b, rx(f, v), f->y0, rx(f, v), f->y1, "grid");
                svg_text(b, rx(f, v), f->y1 + 16, "middle", NULL, s);
            } else {
                svg_line(b, f->x0, ry(f, v), f->x1, ry(f, v), "grid");
                svg_text(b, f->x0 - 6, ry(f, v) + 4, "end", NULL, s);
            }
        }
    }
}

static void roof_axes(kf_buf *b, const roof *f)
{
    roof_ticks(b, f, 1);
    roof_ticks(b, f, 0);
    svg_line(b, f->x0, f->y0, f->x0, f->y1, "axis");
    svg_line(b, f->x0, f->y1, f->x1, f->y1, "axis");
    svg_text(b, (f->x0 + f->x1) / 2, f->y1 + 36, "middle", "sub",
             "arithmetic intensity (FLOPs per byte moved), log scale");
    kf_buf_addf(b,
                "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" class=\"sub\" "
                "transform=\"rotate(-90 16 %.1f)\">GFLOP/s at the median, log scale</text>\n",
                (f->y0 + f->y1) / 2, (f->y0 + f->y1) / 2);
}

static void roof_obstacle(roof *f, double x, double y, double w, double h)
{
    f->placed[f->nplaced++] = (rect){x, y, w, h};
}

/* The memory roof (copy rate x intensity) up to the ridge, then the compute
 * roof, each clipped to the axes and labelled with its figure. */
static void roof_lines(kf_buf *b, roof *f)
{
    double X0 = pow(10, f->lx0), X1 = pow(10, f->lx1), Y0 = pow(10, f->ly0), Y1 = pow(10, f->ly1);
    char s[96];
    if (f->copy > 0) {
        double xa = fmax(X0, Y0 / f->copy), xb = fmin(X1, Y1 / f->copy);
        if (f->peak > 0)
            xb = fmin(xb, f->peak / f->copy);
        double ax = rx(f, xa), ay = ry(f, f->copy * xa), bx = rx(f, xb), by = ry(f, f->copy * xb);
        if (xa < xb) {
            double deg = atan2(by - ay, bx - ax) * 180 / M_PI, lx = ax + 0.06 * (bx - ax) + 4;
            double ly = ay + 0.06 * (by - ay) - 6;
            svg_line(b, ax, ay, bx, by, "roof");
            snprintf(s, sizeof s, "copy %.0f GB/s", f->copy);
            kf_buf_addf(b,
                        "<text x=\"%.1f\" y=\"%.1f\" class=\"rooflabel\" "
                        "transform=\"rotate(%.2f %.1f %.1f)\">",
                        lx, ly, deg, lx, ly);
            kf_rep_esc(b, s);
            kf_buf_adds(b, "</text>\n");
            double w = text_w(s), c = cos(deg * M_PI / 180), sn = sin(deg * M_PI / 180);
            roof_obstacle(f, lx, ly + w * sn - 12, w * c, 12 - w * sn);
        }
    }
    if (f->peak > 0 && f->peak >= Y0 && f->peak <= Y1) {
        double xa = f->copy > 0 ? fmax(X0, f->peak / f->copy) : X0, y = ry(f, f->peak);
        svg_line(b, rx(f, xa), y, f->x1, y, "roof");
        snprintf(s, sizeof s, "bf16 %.0f TFLOP/s (cuBLAS)", f->peak / 1e3);
        svg_text(b, f->x1 - 4, y - 6, "end", "rooflabel", s);
        roof_obstacle(f, f->x1 - 4 - text_w(s), y - 18, text_w(s), 14);
    }
}

static int overlaps(const rect *a, const rect *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Labels point p with its kernel at the first free place around it:
 * right, left, above, below; nowhere when all four are taken. */
static void roof_label(kf_buf *b, roof *f, point *p)
{
    static const struct {
        double dx, dy;
        const char *anchor;
    } at[] = {{7, 4, "start"}, {-7, 4, "end"}, {0, -9, "middle"}, {0, 17, "middle"}};
    double px = rx(f, p->ai), py = ry(f, p->gf), w = text_w(p->kernel);
    for (size_t c = 0; c < sizeof at / sizeof at[0]; c++) {
        double left = at[c].anchor[0] == 's'   ? px + at[c].dx
                      : at[c].anchor[0] == 'e' ? px + at[c].dx - w
                                               : px - w / 2;
        rect r = {left, py + at[c].dy - 10, w, 12};
        int free = r.x >= f->x0 && r.x + r.w <= f->x1 && r.y >= f->y0 && r.y + r.h <= f->y1;
        for (size_t i = 0; free && i < f->nplaced; i++)
            free = !overlaps(&r, &f->placed[i]);
        if (!free)
            continue;
        svg_text(b, px + at[c].dx, py + at[c].dy, at[c].anchor, "ptlabel", p->kernel);
        roof_obstacle(f, r.x, r.y, r.w, r.h);
        p->labelled = 1;
        return;
    }
}

/* 1 when a point of the same kernel nearby already carries the name. */
static int named_nearby(const roof *f, const point *pts, size_t n, const point *p)
{
    for (size_t j = 0; j < n; j++)
        if (pts[j].labelled && pts[j].color == p->color &&
            hypot(rx(f, pts[j].ai) - rx(f, p->ai), ry(f, pts[j].gf) - ry(f, p->gf)) < 120)
            return 1;
    return 0;
}

static void roof_marks(kf_buf *b, roof *f, point *pts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        roof_obstacle(f, rx(f, pts[i].ai) - 5, ry(f, pts[i].gf) - 5, 10, 10);
    roof_lines(b, f);
    for (size_t i = 0; i < n; i++) {
        kf_buf_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"><title>",
                    rx(f, pts[i].ai), ry(f, pts[i].gf), palette[pts[i].color]);
        kf_rep_esc(b, pts[i].tip);
        kf_buf_adds(b, "</title></circle>\n");
    }
    /* Each kernel's first point gets its name first, then the others where
     * no point of the same kernel close by has it. */
    for (size_t i = 0; i < n; i++)
        if (!named_nearby(f, pts, i, &pts[i]))
            roof_label(b, f, &pts[i]);
    for (size_t i = 0; i < n; i++)
        if (!pts[i].labelled && !named_nearby(f, pts, n, &pts[i]))
            roof_label(b, f, &pts[i]);
}

static void roof_caption(kf_buf *b, const swatch *skipped, size_t nsk, const roof *f, int cpu)
{
    kf_buf_adds(b, "<p class=\"note\">");
    if (nsk) {
        kf_buf_adds(b, "Not on the chart, as they count no FLOPs: ");
        for (size_t i = 0; i < nsk; i++) {
            kf_buf_adds(b, i ? ", " : "");
            kf_rep_esc(b, skipped[i].name);
        }
        kf_buf_adds(b, ". ");
    }
    if (f->peak > 0)
        kf_buf_adds(b, "The compute roof is cuBLAS's bf16 rate; a kernel in another precision "
                       "peaks lower. ");
    else
        kf_buf_adds(b, "No compute ceiling was measured on this node: memory roof only. ");
    if (cpu)
        kf_buf_adds(b, "On a CPU node the memory roof is host memcpy (DRAM): a working set that "
                       "fits in a cache can run above it. ");
    kf_buf_adds(b, "Hover a point for its figures.</p>\n");
}

static void roofline(kf_rep_svg *ch, const json_t *agent)
{
    point *pts = ch->pts;
    const char *id = kf_rep_str_at(agent, "agent_id");
    const json_t *gpu = json_array_get(json_object_get(agent, "gpus"), 0);
    const char *dev = gpu ? kf_rep_str_at(gpu, "name") : kf_rep_str_at(agent, "cpu_model");
    swatch skipped[MAXKEYS] = {{NULL, 0}}, kernels[MAXKEYS] = {{NULL, 0}};
    size_t nsk = 0, nk = 0;
    size_t n = roof_points(ch, id ? id : "", pts, skipped, &nsk);
    roof f = {.placed = ch->placed};
    f.copy = kf_rep_num_or(agent, "ceiling_copy_gbps", 0);
    f.peak = kf_rep_num_or(agent, "ceiling_bf16_tflops", 0) * 1e3;
    for (size_t i = 0; i < n; i++)
        nk = add_key(kernels, nk, pts[i].kernel, pts[i].color);
    char title[256];
    snprintf(title, sizeof title, "Roofline: %s (%s)", id ? id : "?", dev ? dev : "?");
    double top = 50 + 18.0 * svg_legend(NULL, 8, 0, RW, kernels, nk);
    f.x0 = 70;
    f.x1 = RW - 24;
    f.y0 = top;
    f.y1 = top + RH - 110;
    roof_range(&f, pts, n);
    svg_open(ch->b, "kf-roofline", RW, f.y1 + 50, title);
    svg_text(ch->b, 8, 18, "start", "title", title);
    svg_text(ch->b, 8, 36, "start", "sub",
             n ? "one point per row: GFLOP/s at the median time against FLOPs per byte"
               : "no row on this node counts both FLOPs and bytes");
    svg_legend(ch->b, 8, 58, RW, kernels, nk);
    roof_axes(ch->b, &f);
    roof_marks(ch->b, &f, pts, n);
    kf_buf_adds(ch->b, "</svg>\n");
    roof_caption(ch->b, skipped, nsk, &f, gpu == NULL);
}

void kf_rep_svg_rooflines(kf_rep_svg *ch)
{
    size_t i;
    int any = 0;
    const json_t *a;
    kf_buf_adds(ch->b, "<h2 id=\"roofline\">Roofline</h2>\n");
    json_array_foreach(ch->agents, i, a)
    {
        if (kf_rep_num_or(a, "ceiling_copy_gbps", 0) <= 0 &&
            kf_rep_num_or(a, "ceiling_bf16_tflops", 0) <= 0)
            continue;
        any = 1;
        roofline(ch, a);
    }
    if (!any)
        kf_buf_adds(ch->b, "<p>No node has measured ceilings (the doctor's copy and bf16 "
                           "rates), so there is no roofline.</p>\n");
}

/* ---- life cycle ---- */

kf_rep_svg *kf_rep_svg_new(const json_t *rows, const json_t *agents, kf_buf *out)
{
    kf_rep_svg *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    size_t n = json_array_size(rows) + 1;
    *ch = (kf_rep_svg){rows,
                       agents,
                       out,
                       calloc(n, sizeof(bar)),
                       calloc(n, sizeof(point)),
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
