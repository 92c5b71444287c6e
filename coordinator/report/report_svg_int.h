/* report_svg_int — what the charts' files share: report_svg.c (the bars
 * per kernel and per node, and the SVG pieces) and report_roofline.c (a
 * roofline per node). The roofline depends on report_svg.c, not the other
 * way. Not a header outside coordinator/report. */
#ifndef KF_REPORT_SVG_INT_H
#define KF_REPORT_SVG_INT_H

#include "common/buf.h"
#include "report/report_svg.h"

#include <jansson.h>
#include <stddef.h>

enum { PALETTE = 10, GREY = PALETTE - 1 };
extern const char *const svgi_palette[PALETTE];

typedef struct bar bar;
typedef struct point point;
typedef struct rect rect;

struct kf_rep_svg {
    const json_t *rows, *agents;
    /* scratch for the charts, one entry per row (two for labels) */
    bar *bars;
    point *pts;
    rect *placed;
};

typedef struct swatch {
    const char *name;
    int color;
} swatch;

enum { MAXKEYS = 24 };

struct rect {
    double x, y, w, h;
};

struct point {
    double ai, gf; /* FLOPs per byte, GFLOP/s */
    const char *kernel;
    int color, labelled;
    char tip[320];
};

/* A node's colour, stable across the page's charts. */
int svgi_node_color(const kf_rep_svg *ch, const char *node);
/* A kernel's colour: the order of its first row. */
int svgi_kernel_color(const json_t *rows, const char *kernel);
/* A value with an SI prefix, for ticks and tooltips. */
void svgi_fmt_si(double v, char *out, size_t len);
/* A string's width in pixels at the charts' font size. */
double svgi_text_w(const char *s);
void svgi_svg_open(kf_buf *b, const char *cls, double w, double h, const char *label);
void svgi_svg_text(kf_buf *b, double x, double y, const char *anchor, const char *cls,
                   const char *text);
void svgi_svg_line(kf_buf *b, double x1, double y1, double x2, double y2, const char *cls);
size_t svgi_add_key(swatch *keys, size_t n, const char *name, int color);
int svgi_svg_legend(kf_buf *b, double x, double y, double width, const swatch *keys, size_t n);

#endif
