/* report_svg — the charts of the HTML report page (report_html.c), as
 * inline SVG: a bar chart per kernel, a roofline per node against its
 * measured ceilings, and the configurations that ran on several nodes side
 * by side. Internal to the report renderer: only report_html.c and
 * report_svg.c include it.
 *
 * The second half declares what the charts borrow from report_html.c (the
 * JSON readers, the escaping, the number formats), so that a figure is
 * read and written the same way in the table and on a chart. */
#ifndef KF_REPORT_SVG_H
#define KF_REPORT_SVG_H

#include "common/buf.h"

#include <jansson.h>
#include <stddef.h>

/* What the page writes for "no figure". */
#define KF_REP_DASH "\xE2\x80\x93"

/* ---- the charts (report_svg.c) ---- */

/* Scratch for charting one report: room for a bar, a point and two label
 * boxes per row, allocated up front so that running out of memory is known
 * before anything is written. */
typedef struct kf_rep_svg kf_rep_svg;

/* rows and agents: the report's "rows" and "agents" arrays; the charts are
 * appended to out. All three stay the caller's and must outlive the
 * result. Returns NULL when out of memory. */
kf_rep_svg *kf_rep_svg_new(const json_t *rows, const json_t *agents, kf_buf *out);
void kf_rep_svg_destroy(kf_rep_svg **self);

/* The page's chart sections, each with its <h2> and notes: a bar chart per
 * kernel; a roofline per node that has measured ceilings; the median per
 * node of each configuration that ran on two nodes or more. */
void kf_rep_svg_kernel_charts(kf_rep_svg *self);
void kf_rep_svg_rooflines(kf_rep_svg *self);
void kf_rep_svg_node_charts(kf_rep_svg *self);

/* ---- shared with the page (report_html.c) ---- */

/* o[key] as a string, or NULL. */
const char *kf_rep_str_at(const json_t *o, const char *key);
/* 1 and *v when o[key] is a finite number; 0 for null or absent. */
int kf_rep_num_at(const json_t *o, const char *key, double *v);
double kf_rep_num_or(const json_t *o, const char *key, double dflt);
/* o[key] as an object, or NULL. */
const json_t *kf_rep_obj_at(const json_t *o, const char *key);
/* A row's kernel ("?" when missing) and node ("" when missing). */
const char *kf_rep_row_kernel(const json_t *row);
const char *kf_rep_row_node(const json_t *row);
/* "n=1048576 block=32". which: 0 every parameter, 1 only those that vary
 * across the kernel's rows (what tells its bars apart), 2 only the fixed. */
void kf_rep_params_str(const json_t *rows, const json_t *row, int which, char *out, size_t len);

/* Appends s (NULL: nothing) HTML-escaped: & < > " '. */
void kf_rep_esc(kf_buf *b, const char *s);
/* The same for a formatted string of up to 1023 bytes. */
void kf_rep_escf(kf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Three significant digits without an exponent: 1.23, 12.3, 123, 12345. */
void kf_rep_fmt_short(double v, char *out, size_t len);
/* The multiplier and name of the unit a time (seconds) reads best in. */
double kf_rep_time_unit(double s, const char **name);
/* A time in that unit: "1.234 ms". */
void kf_rep_fmt_time(double s, char *out, size_t len);
/* Cuts s (of size len) in place to at most max columns, with an ellipsis
 * when cut. */
void kf_rep_cut(char *s, size_t len, size_t max);

#endif
