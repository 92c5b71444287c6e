/* report_html — the report JSON turned into one HTML page; see report_html.h.
 *
 * How: the page is written top to bottom: the sweep and its nodes with
 * their measured ceilings, the results table, a bar chart per kernel, a
 * roofline per node with ceilings, the comparison across nodes, the
 * failures. It reads only the JSON (never report.c's rows), so the page
 * shows what a script reading the JSON sees, and the two cannot disagree.
 *
 * The charts are SVG written here, not by a charting library, because the
 * page must stand alone (no script or font from a CDN) and each chart is a
 * few dozen lines: a linear axis with 1-2-5 ticks or a log-log axis with
 * decade ticks, then bars or points. Every mark has a <title> tooltip with
 * its figures; a point label that would overlap another is left out.
 *
 * Every string from the JSON is escaped (& < > " ') and every number is
 * checked: null ("not applicable") is written as a dash, never as a number.
 * `sample_seconds` is never read. */
#include "report_html.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA "kfleet.report/1"
#define DASH "\xE2\x80\x93"

enum { PALETTE = 10, GREY = PALETTE - 1 };
static const char *const palette[PALETTE] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                             "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#8c8c8c"};

typedef struct bar bar;
typedef struct point point;
typedef struct rect rect;

typedef struct page {
    const json_t *sweep, *rows, *agents;
    kf_buf *b;
    /* scratch for the charts, one entry per row (two for labels) */
    bar *bars;
    point *pts;
    rect *placed;
} page;

/* ---- reading the JSON ---- */

static const char *str_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* 1 and *v when o[key] is a finite number; 0 for null or absent. */
static int num_at(const json_t *o, const char *key, double *v)
{
    const json_t *j = json_object_get(o, key);
    if (!json_is_number(j) || !isfinite(json_number_value(j)))
        return 0;
    *v = json_number_value(j);
    return 1;
}

static double num_or(const json_t *o, const char *key, double dflt)
{
    double v;
    return num_at(o, key, &v) ? v : dflt;
}

static const json_t *obj_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_object(v) ? v : NULL;
}

static const char *row_kernel(const json_t *row)
{
    const char *k = str_at(row, "kernel");
    return k ? k : "?";
}

static const char *row_node(const json_t *row)
{
    const char *n = str_at(row, "node");
    return n ? n : "";
}

/* A node's colour: its place among the agents. */
static int node_color(const page *pg, const char *node)
{
    size_t i;
    const json_t *a;
    json_array_foreach(pg->agents, i, a)
    {
        const char *id = str_at(a, "agent_id");
        if (id && strcmp(id, node) == 0)
            return (int)(i % (PALETTE - 1));
    }
    return GREY;
}

/* 1 when row i is the first row of its kernel. */
static int first_of_kernel(const json_t *rows, size_t i)
{
    const char *k = row_kernel(json_array_get(rows, i));
    for (size_t j = 0; j < i; j++)
        if (strcmp(row_kernel(json_array_get(rows, j)), k) == 0)
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
        if (strcmp(row_kernel(json_array_get(rows, i)), kernel) == 0)
            return n % (PALETTE - 1);
        n++;
    }
    return GREY;
}

static int same_config(const json_t *a, const json_t *b)
{
    return strcmp(row_kernel(a), row_kernel(b)) == 0 &&
           json_equal(json_object_get(a, "params"), json_object_get(b, "params"));
}

/* 1 when the kernel's rows do not all share key's value. */
static int param_varies(const json_t *rows, const char *kernel, const char *key)
{
    const json_t *first = NULL, *row;
    size_t i;
    json_array_foreach(rows, i, row)
    {
        if (strcmp(row_kernel(row), kernel) != 0)
            continue;
        const json_t *v = json_object_get(json_object_get(row, "params"), key);
        v = v ? v : json_null();
        if (!first)
            first = v;
        else if (!json_equal(first, v))
            return 1;
    }
    return 0;
}

/* "n=1048576 block=32". which: 0 every parameter, 1 only those that vary
 * across the kernel's rows (what tells its bars apart), 2 only the fixed. */
static void params_str(const json_t *rows, const json_t *row, int which, char *out, size_t len)
{
    size_t off = 0;
    const char *key;
    json_t *v;
    out[0] = '\0';
    json_object_foreach((json_t *)json_object_get(row, "params"), key, v)
    {
        if (which && param_varies(rows, row_kernel(row), key) != (which == 1))
            continue;
        if (off >= len)
            break;
        const char *sep = off ? " " : "";
        if (json_is_integer(v))
            off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", sep, key,
                                    (long long)json_integer_value(v));
        else if (json_is_string(v))
            off +=
                (size_t)snprintf(out + off, len - off, "%s%s=%s", sep, key, json_string_value(v));
        else if (json_is_number(v))
            off +=
                (size_t)snprintf(out + off, len - off, "%s%s=%g", sep, key, json_number_value(v));
    }
}

/* ---- writing ---- */

static void esc(kf_buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            kf_buf_adds(b, "&amp;");
            break;
        case '<':
            kf_buf_adds(b, "&lt;");
            break;
        case '>':
            kf_buf_adds(b, "&gt;");
            break;
        case '"':
            kf_buf_adds(b, "&quot;");
            break;
        case '\'':
            kf_buf_adds(b, "&#39;");
            break;
        default:
            kf_buf_addc(b, *s);
        }
    }
}

static void escf(kf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(kf_buf *b, const char *fmt, ...)
{
    char s[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    esc(b, s);
}

/* Three significant digits without an exponent: 1.23, 12.3, 123, 12345. */
static void fmt_short(double v, char *out, size_t len)
{
    double a = fabs(v);
    snprintf(out, len, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : 2, v);
}

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

/* The multiplier and name of the unit a time reads best in. */
static double time_unit(double s, const char **name)
{
    *name = s < 1e-6 ? "ns" : s < 1e-3 ? "\xC2\xB5s" : s < 1 ? "ms" : "s";
    return s < 1e-6 ? 1e9 : s < 1e-3 ? 1e6 : s < 1 ? 1e3 : 1;
}

static void fmt_time(double s, char *out, size_t len)
{
    const char *u;
    double k = time_unit(s, &u);
    snprintf(out, len, "%.3f %s", s * k, u);
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

/* Cuts s in place to at most max columns, with an ellipsis when cut. */
static void cut(char *s, size_t len, size_t max)
{
    size_t n = 0, i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++n > max)
            break;
    if (s[i] && i + 4 <= len)
        strcpy(s + i, "\xE2\x80\xA6");
}

/* ---- SVG pieces ---- */

static void svg_open(kf_buf *b, const char *cls, double w, double h, const char *label)
{
    kf_buf_addf(b,
                "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                "width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
                cls, w, h, w, h);
    esc(b, label);
    kf_buf_adds(b, "\">\n");
}

static void svg_text(kf_buf *b, double x, double y, const char *anchor, const char *cls,
                     const char *s)
{
    kf_buf_addf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"", x, y, anchor);
    if (cls)
        kf_buf_addf(b, " class=\"%s\"", cls);
    kf_buf_addc(b, '>');
    esc(b, s);
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
    esc(b, r->tip);
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
        const json_t *p = obj_at(row, "profile");
        if (strcmp(row_kernel(row), kernel) != 0 || !p)
            continue;
        if (num_or(p, "flops", 0) > 0)
            return MET_GFLOPS;
        if (num_or(p, "bytes", 0) > 0)
            m = MET_GBPS;
    }
    return m;
}

/* The row's value in metric m with its p10-p90 range (min-max without
 * quantiles); 0 when the row has no successful profile. */
static int metric_of(const json_t *row, metric m, double *v, double *lo, double *hi)
{
    const json_t *p = obj_at(row, "profile");
    double fast, slow, work = 0;
    if (!p || !num_at(p, m == MET_GFLOPS ? "gflops" : m == MET_GBPS ? "gbps" : "median_s", v))
        return 0;
    if (!(num_at(p, "p10_s", &fast) && num_at(p, "p90_s", &slow)) &&
        !(num_at(p, "min_s", &fast) && num_at(p, "max_s", &slow)))
        fast = slow = 0;
    if (m == MET_TIME) {
        *lo = fast;
        *hi = slow;
        return 1;
    }
    num_at(p, m == MET_GFLOPS ? "flops" : "bytes", &work);
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
static size_t kernel_bars(const page *pg, const char *kernel, metric m, int multi, bar *bars)
{
    size_t n = 0, i;
    const json_t *row, *prev = NULL;
    json_array_foreach(pg->rows, i, row)
    {
        bar *r = &bars[n];
        if (strcmp(row_kernel(row), kernel) != 0 || !metric_of(row, m, &r->v, &r->lo, &r->hi))
            continue;
        size_t nodes = 0;
        for (size_t j = 0; multi && j < json_array_size(pg->rows); j++) {
            double v, lo, hi;
            const json_t *o = json_array_get(pg->rows, j);
            nodes += same_config(row, o) && metric_of(o, m, &v, &lo, &hi);
        }
        if (multi && nodes < 2)
            continue;
        r->node = row_node(row);
        r->color = node_color(pg, r->node);
        params_str(pg->rows, row, 1, r->label, sizeof r->label);
        if (!r->label[0])
            snprintf(r->label, sizeof r->label, "%s", kernel);
        char full[256], val[48];
        params_str(pg->rows, row, 0, full, sizeof full);
        if (m == MET_TIME) {
            const char *u;
            double k = time_unit(r->v, &u);
            fmt_time(r->v, val, sizeof val);
            fmt_short(r->v * k, r->val, sizeof r->val);
            snprintf(r->val + strlen(r->val), sizeof r->val - strlen(r->val), " %s", u);
        } else {
            snprintf(val, sizeof val, "%.4g %s", r->v, metric_name(m));
            fmt_short(r->v, r->val, sizeof r->val);
        }
        snprintf(r->tip, sizeof r->tip, "%s %s on %s: %s", kernel, full, r->node, val);
        cut(r->label, sizeof r->label, 44);
        if (prev && same_config(prev, row))
            r->label[0] = '\0';
        prev = row;
        n++;
    }
    return n;
}

static void chart_texts(const page *pg, barchart *c, const char *kernel, metric m)
{
    char fixed[256];
    const char *u = "";
    c->scale = 1;
    if (m == MET_TIME) {
        double max = 0;
        for (size_t i = 0; i < c->n; i++)
            max = fmax(max, fmax(c->bars[i].v, c->bars[i].hi));
        c->scale = time_unit(max, &u);
    }
    snprintf(c->title, sizeof c->title, "%s: %s", kernel,
             m == MET_TIME ? "median time" : metric_name(m));
    const json_t *row = NULL, *r;
    size_t i;
    json_array_foreach(pg->rows, i, r) if (!row && strcmp(row_kernel(r), kernel) == 0) row = r;
    params_str(pg->rows, row, 2, fixed, sizeof fixed);
    snprintf(c->sub, sizeof c->sub, "%s%s%swhisker: p10%sp90 of the samples",
             fixed[0] ? "fixed: " : "", fixed, fixed[0] ? "; " : "", DASH);
    if (m == MET_TIME)
        snprintf(c->axis, sizeof c->axis, "median time (%s), shorter is faster", u);
    else
        snprintf(c->axis, sizeof c->axis, "%s at the median time, longer is faster",
                 metric_name(m));
}

static void kernel_charts(page *pg)
{
    kf_buf_adds(pg->b, "<h2 id=\"kernels\">Per kernel</h2>\n<p class=\"note\">One bar per "
                       "configuration and node: GFLOP/s for a kernel that counts FLOPs, GB/s for "
                       "one that counts only bytes, else the median time.</p>\n");
    for (size_t i = 0; i < json_array_size(pg->rows); i++) {
        if (!first_of_kernel(pg->rows, i))
            continue;
        const char *k = row_kernel(json_array_get(pg->rows, i));
        metric m = kernel_metric(pg->rows, k);
        barchart c = {.cls = "kf-bars", .bars = pg->bars};
        c.n = kernel_bars(pg, k, m, 0, pg->bars);
        if (!c.n) {
            kf_buf_adds(pg->b, "<p>");
            escf(pg->b, "%s: no successful profile to chart.", k);
            kf_buf_adds(pg->b, "</p>\n");
            continue;
        }
        chart_texts(pg, &c, k, m);
        bar_chart(pg->b, &c);
    }
}

static void node_charts(page *pg)
{
    int any = 0;
    kf_buf_adds(pg->b, "<h2 id=\"nodes-compared\">Across nodes</h2>\n");
    for (size_t i = 0; i < json_array_size(pg->rows); i++) {
        if (!first_of_kernel(pg->rows, i))
            continue;
        const char *k = row_kernel(json_array_get(pg->rows, i));
        barchart c = {.cls = "kf-nodes", .bars = pg->bars};
        c.n = kernel_bars(pg, k, MET_TIME, 1, pg->bars);
        if (!c.n)
            continue;
        if (!any)
            kf_buf_adds(pg->b, "<p class=\"note\">The configurations that ran on more than one "
                               "node: the median per node.</p>\n");
        any = 1;
        chart_texts(pg, &c, k, MET_TIME);
        snprintf(c.title, sizeof c.title, "%s: median time per node", k);
        bar_chart(pg->b, &c);
    }
    if (!any)
        kf_buf_adds(pg->b, "<p>No configuration ran on more than one node, so there is nothing to "
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
static size_t roof_points(const page *pg, const char *node, point *pts, swatch *skipped,
                          size_t *nsk)
{
    size_t n = 0, i;
    const json_t *row;
    json_array_foreach(pg->rows, i, row)
    {
        const json_t *p = obj_at(row, "profile");
        double flops = 0, bytes = 0, gf = 0, med;
        if (!p || strcmp(row_node(row), node) != 0 || !num_at(p, "median_s", &med))
            continue;
        num_at(p, "flops", &flops);
        num_at(p, "bytes", &bytes);
        if (!(flops > 0 && bytes > 0 && num_at(p, "gflops", &gf) && gf > 0)) {
            *nsk = add_key(skipped, *nsk, row_kernel(row), 0);
            continue;
        }
        point *q = &pts[n++];
        char params[256];
        q->ai = flops / bytes;
        q->gf = gf;
        q->kernel = row_kernel(row);
        q->color = kernel_color(pg->rows, q->kernel);
        q->labelled = 0;
        params_str(pg->rows, row, 0, params, sizeof params);
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
            esc(b, s);
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
        esc(b, pts[i].tip);
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
            esc(b, skipped[i].name);
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

static void roofline(page *pg, const json_t *agent)
{
    point *pts = pg->pts;
    const char *id = str_at(agent, "agent_id");
    const json_t *gpu = json_array_get(json_object_get(agent, "gpus"), 0);
    const char *dev = gpu ? str_at(gpu, "name") : str_at(agent, "cpu_model");
    swatch skipped[MAXKEYS] = {{NULL, 0}}, kernels[MAXKEYS] = {{NULL, 0}};
    size_t nsk = 0, nk = 0;
    size_t n = roof_points(pg, id ? id : "", pts, skipped, &nsk);
    roof f = {.placed = pg->placed};
    f.copy = num_or(agent, "ceiling_copy_gbps", 0);
    f.peak = num_or(agent, "ceiling_bf16_tflops", 0) * 1e3;
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
    svg_open(pg->b, "kf-roofline", RW, f.y1 + 50, title);
    svg_text(pg->b, 8, 18, "start", "title", title);
    svg_text(pg->b, 8, 36, "start", "sub",
             n ? "one point per row: GFLOP/s at the median time against FLOPs per byte"
               : "no row on this node counts both FLOPs and bytes");
    svg_legend(pg->b, 8, 58, RW, kernels, nk);
    roof_axes(pg->b, &f);
    roof_marks(pg->b, &f, pts, n);
    kf_buf_adds(pg->b, "</svg>\n");
    roof_caption(pg->b, skipped, nsk, &f, gpu == NULL);
}

static void rooflines(page *pg)
{
    size_t i;
    int any = 0;
    const json_t *a;
    kf_buf_adds(pg->b, "<h2 id=\"roofline\">Roofline</h2>\n");
    json_array_foreach(pg->agents, i, a)
    {
        if (num_or(a, "ceiling_copy_gbps", 0) <= 0 && num_or(a, "ceiling_bf16_tflops", 0) <= 0)
            continue;
        any = 1;
        roofline(pg, a);
    }
    if (!any)
        kf_buf_adds(pg->b, "<p>No node has measured ceilings (the doctor's copy and bf16 "
                           "rates), so there is no roofline.</p>\n");
}

/* ---- the results table ---- */

static void td(kf_buf *b, const char *cls, const char *s)
{
    kf_buf_adds(b, cls ? "<td class=\"" : "<td>");
    if (cls) {
        kf_buf_adds(b, cls);
        kf_buf_adds(b, "\">");
    }
    esc(b, s && *s ? s : DASH);
    kf_buf_adds(b, "</td>");
}

/* A numeric cell: data-sort holds the number for the table's script; an
 * empty one (no figure) sorts last. */
static void td_num(kf_buf *b, int ok, double sort, const char *text)
{
    if (ok)
        kf_buf_addf(b, "<td class=\"n\" data-sort=\"%.17g\">", sort);
    else
        kf_buf_adds(b, "<td class=\"n\" data-sort=\"\">");
    esc(b, ok ? text : DASH);
    kf_buf_adds(b, "</td>");
}

static void td_short(kf_buf *b, const json_t *p, const char *key)
{
    double v;
    char s[48] = "";
    int ok = num_at(p, key, &v);
    if (ok)
        fmt_short(v, s, sizeof s);
    td_num(b, ok, ok ? v : 0, s);
}

static int is_failed(const char *state)
{
    return state && (strcmp(state, "failed") == 0 || strcmp(state, "timed_out") == 0);
}

static void td_validation(kf_buf *b, const json_t *v)
{
    const char *st = str_at(v, "state");
    double mx;
    char s[96];
    if (!v || !st) {
        td(b, NULL, NULL);
        return;
    }
    if (strcmp(st, "succeeded") != 0 && !is_failed(st)) {
        td(b, NULL, st);
        return;
    }
    int pass = json_is_true(json_object_get(v, "passed"));
    size_t seeds = json_array_size(json_object_get(v, "trials"));
    int got = num_at(v, "max_abs_err", &mx);
    snprintf(s, sizeof s, "%s%s%.1e", pass ? "pass" : "FAIL", got ? " " : "", got ? mx : 0);
    if (!got)
        s[4] = '\0';
    kf_buf_addf(b, "<td class=\"%s\" title=\"max abs error over %zu seed%s\">", pass ? "ok" : "bad",
                seeds, seeds == 1 ? "" : "s");
    esc(b, s);
    kf_buf_adds(b, "</td>");
}

static void td_times(kf_buf *b, const json_t *p)
{
    double med, lo, hi, noise;
    char s[64] = "";
    int ok = num_at(p, "median_s", &med);
    if (ok)
        fmt_time(med, s, sizeof s);
    td_num(b, ok, ok ? med : 0, s);
    int range = ok && ((num_at(p, "p10_s", &lo) && num_at(p, "p90_s", &hi)) ||
                       (num_at(p, "min_s", &lo) && num_at(p, "max_s", &hi)));
    if (range) {
        const char *u;
        double k = time_unit(med, &u);
        char a[24], z[24];
        fmt_short(lo * k, a, sizeof a);
        fmt_short(hi * k, z, sizeof z);
        snprintf(s, sizeof s, "%s" DASH "%s %s", a, z, u);
    }
    td_num(b, range, range ? hi - lo : 0, s);
    ok = num_at(p, "noise_pct", &noise);
    snprintf(s, sizeof s, "%.1f%%", ok ? noise : 0);
    td_num(b, ok, ok ? noise : 0, s);
}

/* The nearer ceiling says what bounds the kernel: bandwidth or matrix. */
static void td_ceiling(kf_buf *b, const json_t *p)
{
    double bw = NAN, mma = NAN;
    char s[32] = "";
    num_at(p, "pct_copy_ceiling", &bw);
    num_at(p, "pct_bf16_ceiling", &mma);
    int use_bw = isfinite(bw) && !(mma > bw), ok = use_bw || isfinite(mma);
    if (ok)
        snprintf(s, sizeof s, "%.0f%% %s", use_bw ? bw : mma, use_bw ? "bw" : "mma");
    td_num(b, ok, use_bw ? bw : ok ? mma : 0, s);
}

static void td_speedup(kf_buf *b, const json_t *row)
{
    double v, e;
    char s[64] = "";
    int ok = num_at(row, "speedup", &v);
    if (ok && num_at(row, "speedup_err", &e))
        snprintf(s, sizeof s, "%.2f\xC3\x97 \xC2\xB1%.2f", v, e);
    else if (ok)
        snprintf(s, sizeof s, "%.2f\xC3\x97", v);
    td_num(b, ok, ok ? v : 0, s);
}

static void add_flag(char *s, size_t len, const char *f)
{
    size_t n = strlen(s);
    snprintf(s + n, len - n, "%s%s", n ? ", " : "", f);
}

static int row_failed(const json_t *row)
{
    return is_failed(str_at(obj_at(row, "validation"), "state")) ||
           is_failed(str_at(obj_at(row, "profile"), "state"));
}

/* The row's flags, how its samples were taken, and why a task failed. */
static void td_flags(kf_buf *b, const json_t *row, int failed)
{
    char s[512] = "", f[160];
    size_t i;
    const json_t *v, *p = obj_at(row, "profile");
    json_array_foreach(json_object_get(row, "flags"), i, v)
    {
        const char *name = json_string_value(v);
        double pct;
        if (name && strcmp(name, "outlier") == 0 && num_at(row, "outlier_pct", &pct)) {
            snprintf(f, sizeof f, "outlier node +%.0f%%", pct);
            add_flag(s, sizeof s, f);
        } else if (name && strcmp(name, "failed") != 0) {
            add_flag(s, sizeof s, name);
        }
    }
    if (p && json_is_true(json_object_get(p, "hot")))
        add_flag(s, sizeof s, "hot");
    if (p && num_or(p, "batch", 1) > 1) {
        snprintf(f, sizeof f, "batch %.0f", num_or(p, "batch", 1));
        add_flag(s, sizeof s, f);
    }
    const char *const kinds[2] = {"validation", "profile"};
    for (int k = 0; k < 2; k++) {
        const json_t *t = obj_at(row, kinds[k]);
        if (!is_failed(str_at(t, "state")))
            continue;
        const char *e = str_at(t, "error");
        snprintf(f, sizeof f, "%s %s: %.*s", k ? "profile" : "validate",
                 strcmp(str_at(t, "state"), "failed") == 0 ? "failed" : "timed out",
                 e ? (int)strcspn(e, "\r\n") : 0, e ? e : "");
        cut(f, sizeof f, 70);
        add_flag(s, sizeof s, f);
    }
    td(b, failed ? "fail wrap" : s[0] ? "warn wrap" : "wrap", s);
}

static void dd(kf_buf *b, const char *name, const char *value)
{
    kf_buf_addf(b, "<dt>%s</dt><dd>", name);
    esc(b, value && *value ? value : DASH);
    kf_buf_adds(b, "</dd>");
}

static void dd_num(kf_buf *b, const char *name, const json_t *o, const char *key, const char *fmt)
{
    double v;
    char s[64] = "";
    if (num_at(o, key, &v))
        snprintf(s, sizeof s, fmt, v);
    dd(b, name, s);
}

static void dd_bool(kf_buf *b, const char *name, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    dd(b, name, json_is_boolean(v) ? (json_is_true(v) ? "yes" : "no") : NULL);
}

static void td_provenance(kf_buf *b, const json_t *row)
{
    const json_t *pv = obj_at(row, "provenance"), *p = obj_at(row, "profile");
    const json_t *tm = obj_at(p, "telemetry");
    kf_buf_adds(b, "<td><details><summary>show</summary><dl>");
    dd(b, "node", str_at(pv, "agent_id"));
    dd(b, "host", str_at(pv, "hostname"));
    dd(b, "GPU", str_at(pv, "gpu_name"));
    dd(b, "GPU UUID", str_at(pv, "gpu_uuid"));
    dd(b, "CPU", str_at(pv, "cpu_model"));
    dd(b, "driver", str_at(pv, "driver_version"));
    dd(b, "compiler", str_at(pv, "compiler"));
    dd(b, "kernel hash", str_at(pv, "kernel_hash"));
    dd(b, "artifact hash", str_at(pv, "artifact_hash"));
    char s[96] = "";
    const json_t *bt = json_object_get(pv, "build_task_id");
    if (json_is_integer(bt)) /* in hex, as the CLI names tasks */
        snprintf(s, sizeof s, "%llx", (unsigned long long)json_integer_value(bt));
    dd(b, "build task", s);
    dd(b, "SASS archs", str_at(pv, "sass_archs"));
    dd_bool(b, "PTX", pv, "has_ptx");
    dd_num(b, "registers", pv, "registers", "%.0f");
    dd_num(b, "spill bytes", pv, "spill_bytes", "%.0f");
    const char *nv = str_at(pv, "nvcc_cuda"), *dr = str_at(pv, "driver_cuda");
    snprintf(s, sizeof s, "%s / %s", nv ? nv : DASH, dr ? dr : DASH);
    dd(b, "CUDA nvcc / driver", nv || dr ? s : NULL);
    dd(b, "agent version", str_at(pv, "agent_version"));
    if (tm) {
        dd_num(b, "SM clock min MHz", tm, "sm_clock_mhz_min", "%.0f");
        dd_num(b, "SM clock max MHz", tm, "sm_clock_mhz_max", "%.0f");
        dd_num(b, "power max W", tm, "power_w_max", "%.0f");
        dd_num(b, "temperature max C", tm, "temp_c_max", "%.0f");
    }
    kf_buf_adds(b, "</dl></details></td>");
}

static void table_row(page *pg, const json_t *row)
{
    kf_buf *b = pg->b;
    const json_t *p = obj_at(row, "profile");
    char s[320];
    double v;
    int failed = row_failed(row);
    kf_buf_adds(b, failed ? "<tr class=\"failed\">" : "<tr>");
    td(b, NULL, row_kernel(row));
    params_str(pg->rows, row, 0, s, sizeof s);
    td(b, "wrap", s);
    td(b, NULL, row_node(row));
    td(b, "wrap", str_at(row, "device"));
    td_validation(b, obj_at(row, "validation"));
    int ok = num_at(p, "samples", &v) && v > 0;
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, ok ? v : 0, s);
    td_times(b, p);
    td_short(b, p, "gbps");
    td_short(b, p, "gflops");
    td_ceiling(b, p);
    td_speedup(b, row);
    td_flags(b, row, failed);
    td_provenance(b, row);
    kf_buf_adds(b, "</tr>\n");
}

static const char *const columns_names[] = {"kernel",     "params",  "node",      "device",
                                            "validation", "samples", "median",    "p10" DASH "p90",
                                            "noise",      "GB/s",    "GFLOP/s",   "% ceiling",
                                            "speedup",    "flags",   "provenance"};

static void results_table(page *pg)
{
    kf_buf *b = pg->b;
    size_t n = sizeof columns_names / sizeof columns_names[0], i;
    const json_t *row;
    kf_buf_adds(b, "<h2 id=\"results\">Results</h2>\n");
    if (!json_array_size(pg->rows)) {
        kf_buf_adds(b, "<p>No validate or profile tasks.</p>\n");
        return;
    }
    kf_buf_adds(b, "<p class=\"note\">Click a column's header to sort by it. Times are medians of "
                   "the stored samples; noise is 1.4826 MAD / median; GB/s and GFLOP/s are at "
                   "the median.</p>\n<table id=\"kf-results\">\n<thead><tr>");
    for (size_t c = 0; c < n; c++)
        kf_buf_addf(b, "<th%s>%s</th>",
                    c == n - 1          ? " class=\"nosort\""
                    : c >= 5 && c <= 12 ? " class=\"n\""
                                        : "",
                    columns_names[c]);
    kf_buf_adds(b, "</tr></thead>\n<tbody>\n");
    json_array_foreach(pg->rows, i, row) table_row(pg, row);
    /* No scrolling box around it: that would clip an open provenance card. */
    kf_buf_adds(b, "</tbody></table>\n");
}

/* ---- the page around them ---- */

static const char css[] =
    ":root{color-scheme:light}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2330;"
    "background:#fff;max-width:1400px;margin:24px auto;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 4px}"
    "h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #dde1ea;padding-bottom:4px}"
    ".meta,.note{color:#5a6270}.nav a{margin-right:12px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{padding:4px 6px;border-bottom:1px solid #e6e8ef;text-align:left;vertical-align:top;"
    "white-space:nowrap}td.wrap{white-space:normal;min-width:8em;max-width:17em}"
    "th{background:#f3f4f8}.n{text-align:right;font-variant-numeric:tabular-nums}"
    "#kf-results th{cursor:pointer;position:sticky;top:0;user-select:none}"
    "#kf-results th.nosort{cursor:default}"
    "#kf-results th[aria-sort=ascending]::after{content:' \\25B2'}"
    "#kf-results th[aria-sort=descending]::after{content:' \\25BC'}"
    "#kf-results tbody tr:hover{background:#f7f8fb}"
    "tr.failed td{background:#fdecea}"
    ".ok{color:#1a7f37}.bad{color:#c62828;font-weight:600}.fail{color:#c62828}.warn{color:#9a6700}"
    ".scroll{overflow-x:auto}"
    "details summary{cursor:pointer;color:#4e79a7}"
    /* an open provenance is a card over the table, not a wider column */
    "td details{position:relative}"
    "td details dl{position:absolute;right:0;z-index:2;width:40em;background:#fff;"
    "border:1px solid #cfd3de;box-shadow:0 4px 14px rgba(0,0,0,.12);padding:8px 10px;"
    "display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0;"
    "white-space:normal;word-break:break-all}"
    "dt{color:#5a6270}dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;"
    "font-size:12px}"
    "code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}"
    "pre{background:#f6f7f9;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0 "
    "12px}"
    "svg{max-width:100%;height:auto;display:block;margin:8px 0 4px}"
    "svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#1d2330}"
    "svg .title{font-size:14px;font-weight:600}svg .sub{fill:#5a6270}"
    "svg .val{fill:#3a4250;font-size:11px}svg .ptlabel{font-size:11px}"
    "svg .rooflabel{fill:#c62828;font-size:12px}"
    "svg .grid{stroke:#e6e8ef}svg .axis{stroke:#5a6270}"
    "svg .whisker{stroke:#1d2330;stroke-width:1}"
    "svg .roof{stroke:#c62828;stroke-width:2;fill:none}"
    "svg circle{stroke:#fff;stroke-width:1}";

/* Sorts the results table on a header click: numerically by data-sort
 * where a cell has one (blanks last), else by text, digits as numbers. */
static const char script[] =
    "(function () {\n"
    "  var table = document.getElementById('kf-results');\n"
    "  if (!table) return;\n"
    "  var heads = table.tHead.rows[0].cells;\n"
    "  function key(c) { var s = c.getAttribute('data-sort'); return s === null ? c.textContent "
    ": s; }\n"
    "  function sortBy(col) {\n"
    "    var up = heads[col].getAttribute('aria-sort') !== 'ascending';\n"
    "    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = key(a.cells[col]), y = key(b.cells[col]);\n"
    "      if (a.cells[col].hasAttribute('data-sort')) {\n"
    "        var fx = x !== '' && Number.isFinite(+x), fy = y !== '' && Number.isFinite(+y);\n"
    "        if (!fx || !fy) return fx === fy ? 0 : fx ? -1 : 1;\n"
    "        return up ? x - y : y - x;\n"
    "      }\n"
    "      var c = x.localeCompare(y, undefined, {numeric: true});\n"
    "      return up ? c : -c;\n"
    "    });\n"
    "    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('aria-sort');\n"
    "    heads[col].setAttribute('aria-sort', up ? 'ascending' : 'descending');\n"
    "    rows.forEach(function (r) { body.appendChild(r); });\n"
    "  }\n"
    "  for (var i = 0; i < heads.length; i++)\n"
    "    if (!heads[i].classList.contains('nosort'))\n"
    "      heads[i].addEventListener('click', sortBy.bind(null, i));\n"
    "  table.setAttribute('data-sortable', 'yes');\n"
    "})();\n";

static void page_head(page *pg)
{
    kf_buf *b = pg->b;
    kf_buf_adds(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                   "<title>");
    escf(b, "kfleet sweep %.0f: %s", num_or(pg->sweep, "sweep_id", 0),
         str_at(pg->sweep, "name") ? str_at(pg->sweep, "name") : "");
    kf_buf_addf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
}

static void totals(kf_buf *b, const json_t *t)
{
    static const char *const states[] = {"succeeded", "failed",   "timed_out", "cancelled",
                                         "pending",   "assigned", "running"};
    kf_buf_addf(b, "<p>%.0f tasks:", num_or(t, "tasks", 0));
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        double n = num_or(t, states[i], 0);
        if (i >= 4 && n == 0)
            continue; /* nothing still pending: the usual case, left unsaid */
        int bad = n > 0 && (i == 1 || i == 2);
        kf_buf_addf(b, "%s %s%.0f %s%s", i ? "," : "", bad ? "<span class=\"bad\">" : "", n,
                    i == 2 ? "timed out" : states[i], bad ? "</span>" : "");
    }
    kf_buf_adds(b, "</p>\n");
}

static void page_summary(page *pg, const json_t *report)
{
    kf_buf *b = pg->b;
    const json_t *s = pg->sweep;
    const char *fin = str_at(s, "finished"), *base = str_at(s, "baseline");
    kf_buf_adds(b, "<h1>");
    escf(b, "Sweep %.0f: %s", num_or(s, "sweep_id", 0), str_at(s, "name") ? str_at(s, "name") : "");
    kf_buf_adds(b, "</h1>\n<p class=\"meta\"><code>");
    esc(b, str_at(s, "file"));
    kf_buf_adds(b, "</code> &middot; created ");
    esc(b, str_at(s, "created") ? str_at(s, "created") : DASH);
    kf_buf_adds(b, fin ? ", finished " : ", not finished");
    esc(b, fin);
    if (json_is_true(json_object_get(s, "cancelled")))
        kf_buf_adds(b, " (cancelled)");
    kf_buf_adds(b, " &middot; nodes: ");
    esc(b, str_at(s, "nodes"));
    if (base) {
        kf_buf_adds(b, " &middot; speedup against ");
        esc(b, base);
        kf_buf_adds(b, " in the same configuration on the same node");
    }
    kf_buf_adds(b, " &middot; kfleet ");
    esc(b, str_at(report, "kfleet_version"));
    kf_buf_adds(b, "</p>\n");
    totals(b, obj_at(report, "totals"));
    kf_buf_adds(b, "<p class=\"nav\"><a href=\"#nodes\">Nodes</a><a href=\"#results\">Results</a>"
                   "<a href=\"#kernels\">Per kernel</a><a href=\"#roofline\">Roofline</a>"
                   "<a href=\"#nodes-compared\">Across nodes</a>"
                   "<a href=\"#failures\">Failures</a></p>\n");
}

static void node_line(kf_buf *b, const json_t *a)
{
    const json_t *gpus = json_object_get(a, "gpus"), *g = json_array_get(gpus, 0);
    char dev[320], s[48] = "";
    double v;
    if (g)
        snprintf(dev, sizeof dev, "%s%s", str_at(g, "name") ? str_at(g, "name") : "GPU",
                 json_array_size(gpus) > 1 ? " (several)" : "");
    else
        snprintf(dev, sizeof dev, "%s (CPU)",
                 str_at(a, "cpu_model") ? str_at(a, "cpu_model") : "?");
    kf_buf_adds(b, "<tr>");
    td(b, NULL, str_at(a, "agent_id"));
    td(b, NULL, str_at(a, "hostname"));
    td(b, NULL, dev);
    td(b, NULL, str_at(a, "driver_version"));
    int ok = num_at(a, "ceiling_copy_gbps", &v);
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, v, s);
    ok = num_at(a, "ceiling_bf16_tflops", &v);
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, v, s);
    const char *note = str_at(a, "doctor_error");
    td(b, NULL, json_is_true(json_object_get(a, "lost")) ? "lost" : note);
    kf_buf_adds(b, "</tr>\n");
}

static void nodes_table(page *pg)
{
    size_t i;
    const json_t *a;
    kf_buf_adds(pg->b, "<h2 id=\"nodes\">Nodes</h2>\n");
    if (!json_array_size(pg->agents)) {
        kf_buf_adds(pg->b, "<p>No agent ran a task of this sweep.</p>\n");
        return;
    }
    kf_buf_adds(pg->b, "<div class=\"scroll\"><table>\n<thead><tr><th>node</th><th>host</th>"
                       "<th>device</th><th>driver</th><th class=\"n\">copy GB/s</th>"
                       "<th class=\"n\">bf16 TFLOP/s</th><th>note</th></tr></thead>\n<tbody>\n");
    json_array_foreach(pg->agents, i, a) node_line(pg->b, a);
    kf_buf_adds(pg->b, "</tbody></table></div>\n<p class=\"note\">Ceilings: the doctor's "
                       "device-to-device copy rate (host memcpy on a CPU node) and cuBLAS bf16 "
                       "rate, measured when the agent registered.</p>\n");
}

/* The first lines of an error: enough to see the cause; the whole message
 * is in the JSON. */
static void error_block(kf_buf *b, const char *e)
{
    enum { LINES = 40 };
    const char *p = e;
    for (int l = 0; l < LINES && *p; l++)
        p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
    kf_buf_adds(b, "<pre>");
    char *part = strndup(e, (size_t)(p - e));
    esc(b, part ? part : "");
    free(part);
    if (*p)
        kf_buf_adds(b, "\n\xE2\x80\xA6 (the whole message is in the JSON report)");
    kf_buf_adds(b, "</pre>");
}

static void failures(page *pg, const json_t *list)
{
    kf_buf *b = pg->b;
    size_t i;
    const json_t *f;
    char params[320];
    kf_buf_addf(b, "<h2 id=\"failures\">Failures (%zu)</h2>\n", json_array_size(list));
    if (!json_array_size(list)) {
        kf_buf_adds(b, "<p>No task failed or timed out.</p>\n");
        return;
    }
    kf_buf_adds(b, "<ul class=\"failures\">\n");
    json_array_foreach(list, i, f)
    {
        const char *st = str_at(f, "state"), *node = str_at(f, "node"), *e = str_at(f, "error");
        params_str(NULL, f, 0, params, sizeof params);
        kf_buf_adds(b, "<li><b>");
        esc(b, str_at(f, "kind"));
        kf_buf_adds(b, "</b> ");
        escf(b, "%s%s%s%s on %s: ", str_at(f, "kernel") ? str_at(f, "kernel") : "?",
             params[0] ? " [" : "", params, params[0] ? "]" : "", node ? node : "no node");
        kf_buf_addf(b, "<span class=\"bad\">%s</span>",
                    st && strcmp(st, "timed_out") == 0 ? "timed out" : "failed");
        kf_buf_addf(b, ", task %llx, attempt %.0f",
                    (unsigned long long)json_integer_value(json_object_get(f, "task_id")),
                    num_or(f, "attempt", 0));
        if (e)
            error_block(b, e);
        kf_buf_adds(b, "</li>\n");
    }
    kf_buf_adds(b, "</ul>\n");
}

int kf_report_html(const json_t *report, kf_buf *out, kf_err *err)
{
    const char *schema = str_at(report, "schema");
    if (!schema || strcmp(schema, SCHEMA) != 0)
        return kf_err_set(err, KF_EINVAL,
                          "not a kfleet report: the HTML renderer reads schema \"%s\", got %s%s%s",
                          SCHEMA, schema ? "\"" : "", schema ? schema : "none", schema ? "\"" : "");
    page pg = {obj_at(report, "sweep"),
               json_object_get(report, "rows"),
               json_object_get(report, "agents"),
               out,
               NULL,
               NULL,
               NULL};
    if (!pg.sweep || !json_is_array(pg.rows))
        return kf_err_set(err, KF_EINVAL,
                          "report JSON without its \"sweep\" object or \"rows\" array: it "
                          "was not written by `kfleet report --format json`");
    size_t n = json_array_size(pg.rows) + 1;
    pg.bars = calloc(n, sizeof *pg.bars);
    pg.pts = calloc(n, sizeof *pg.pts);
    pg.placed = calloc(2 * n + 2, sizeof *pg.placed);
    int rc = pg.bars && pg.pts && pg.placed ? KF_OK : KF_ENOMEM;
    if (rc == KF_OK) {
        page_head(&pg);
        page_summary(&pg, report);
        nodes_table(&pg);
        results_table(&pg);
        kernel_charts(&pg);
        rooflines(&pg);
        node_charts(&pg);
        failures(&pg, json_object_get(report, "failures"));
        kf_buf_addf(out, "<script>\n%s</script>\n</body>\n</html>\n", script);
    }
    free(pg.bars);
    free(pg.pts);
    free(pg.placed);
    if (rc)
        return kf_err_set(err, rc, "out of memory for the charts of %zu rows", n - 1);
    return KF_OK;
}
