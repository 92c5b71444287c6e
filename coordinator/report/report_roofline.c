/* report_roofline — a roofline per node: each row's FLOPs per byte
 * against its GFLOP/s on log-log axes, under the node's measured copy
 * bandwidth and bf16 rate (the doctor's ceilings), labels placed where they
 * cover nothing. Reads the report JSON through report_page.h, like the
 * rest of the page. */
#include "common/text.h"
#include "report/report_page.h"
#include "report/report_svg_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- roofline (per node) ---- */

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
        const json_t *p = kf_rep_result_profile(row);
        double flops = 0, bytes = 0, gf = 0, med;
        if (!p || strcmp(kf_rep_row_node(row), node) != 0 || !kf_rep_num_at(p, "median_s", &med))
            continue;
        kf_rep_num_at(p, "flops", &flops);
        kf_rep_num_at(p, "bytes", &bytes);
        if (!(flops > 0 && bytes > 0 && kf_rep_num_at(p, "gflops", &gf) && gf > 0)) {
            *nsk = svgi_add_key(skipped, *nsk, kf_rep_row_kernel(row), 0);
            continue;
        }
        point *q = &pts[n++];
        char params[256];
        q->ai = flops / bytes;
        q->gf = gf;
        q->kernel = kf_rep_row_kernel(row);
        q->color = svgi_kernel_color(ch->rows, q->kernel);
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
            svgi_fmt_si(v, s, sizeof s);
            if (x) {
                svgi_svg_line(b, rx(f, v), f->y0, rx(f, v), f->y1, "grid");
                svgi_svg_text(b, rx(f, v), f->y1 + 16, "middle", NULL, s);
            } else {
                svgi_svg_line(b, f->x0, ry(f, v), f->x1, ry(f, v), "grid");
                svgi_svg_text(b, f->x0 - 6, ry(f, v) + 4, "end", NULL, s);
            }
        }
    }
}

static void roof_axes(kf_buf *b, const roof *f)
{
    roof_ticks(b, f, 1);
    roof_ticks(b, f, 0);
    svgi_svg_line(b, f->x0, f->y0, f->x0, f->y1, "axis");
    svgi_svg_line(b, f->x0, f->y1, f->x1, f->y1, "axis");
    svgi_svg_text(b, (f->x0 + f->x1) / 2, f->y1 + 36, "middle", "sub",
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
            svgi_svg_line(b, ax, ay, bx, by, "roof");
            snprintf(s, sizeof s, "copy %.0f GB/s", f->copy);
            kf_buf_addf(b,
                        "<text x=\"%.1f\" y=\"%.1f\" class=\"rooflabel\" "
                        "transform=\"rotate(%.2f %.1f %.1f)\">",
                        lx, ly, deg, lx, ly);
            kf_text_html(b, s);
            kf_buf_adds(b, "</text>\n");
            double w = svgi_text_w(s), c = cos(deg * M_PI / 180), sn = sin(deg * M_PI / 180);
            roof_obstacle(f, lx, ly + w * sn - 12, w * c, 12 - w * sn);
        }
    }
    if (f->peak > 0 && f->peak >= Y0 && f->peak <= Y1) {
        double xa = f->copy > 0 ? fmax(X0, f->peak / f->copy) : X0, y = ry(f, f->peak);
        svgi_svg_line(b, rx(f, xa), y, f->x1, y, "roof");
        snprintf(s, sizeof s, "bf16 %.0f TFLOP/s (cuBLAS)", f->peak / 1e3);
        svgi_svg_text(b, f->x1 - 4, y - 6, "end", "rooflabel", s);
        roof_obstacle(f, f->x1 - 4 - svgi_text_w(s), y - 18, svgi_text_w(s), 14);
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
    double px = rx(f, p->ai), py = ry(f, p->gf), w = svgi_text_w(p->kernel);
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
        svgi_svg_text(b, px + at[c].dx, py + at[c].dy, at[c].anchor, "ptlabel", p->kernel);
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
                    rx(f, pts[i].ai), ry(f, pts[i].gf), svgi_palette[pts[i].color]);
        kf_text_html(b, pts[i].tip);
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
            kf_text_html(b, skipped[i].name);
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

static void roofline(kf_rep_svg *ch, kf_buf *b, const json_t *agent)
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
        nk = svgi_add_key(kernels, nk, pts[i].kernel, pts[i].color);
    char title[256];
    snprintf(title, sizeof title, "Roofline: %s (%s)", id ? id : "?", dev ? dev : "?");
    double top = 50 + 18.0 * svgi_svg_legend(NULL, 8, 0, RW, kernels, nk);
    f.x0 = 70;
    f.x1 = RW - 24;
    f.y0 = top;
    f.y1 = top + RH - 110;
    roof_range(&f, pts, n);
    svgi_svg_open(b, "kf-roofline", RW, f.y1 + 50, title);
    svgi_svg_text(b, 8, 18, "start", "title", title);
    svgi_svg_text(b, 8, 36, "start", "sub",
                  n ? "one point per row: GFLOP/s at the median time against FLOPs per byte"
                    : "no row on this node counts both FLOPs and bytes");
    svgi_svg_legend(b, 8, 58, RW, kernels, nk);
    roof_axes(b, &f);
    roof_marks(b, &f, pts, n);
    kf_buf_adds(b, "</svg>\n");
    roof_caption(b, skipped, nsk, &f, gpu == NULL);
}

void kf_rep_svg_rooflines(kf_rep_svg *ch, kf_buf *b)
{
    size_t i;
    int any = 0;
    const json_t *a;
    kf_buf_adds(b, "<h2 id=\"roofline\">Roofline</h2>\n");
    json_array_foreach(ch->agents, i, a)
    {
        if (kf_rep_num_or(a, "ceiling_copy_gbps", 0) <= 0 &&
            kf_rep_num_or(a, "ceiling_bf16_tflops", 0) <= 0)
            continue;
        any = 1;
        roofline(ch, b, a);
    }
    if (!any)
        kf_buf_adds(b, "<p>No node has measured ceilings (the doctor's copy and bf16 "
                       "rates), so there is no roofline.</p>\n");
}
