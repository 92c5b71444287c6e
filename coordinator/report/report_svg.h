/* report_svg — the charts of the HTML report page (report_html.c), as
 * inline SVG: a bar chart per kernel, a roofline per node against its
 * measured ceilings, and the configurations that ran on several nodes side
 * by side. Internal to the report renderer: only report_html.c and
 * report_svg.c include it. The JSON readers, the escaping and the number
 * formats it shares with the page are report_page.h's. */
#ifndef KF_REPORT_SVG_H
#define KF_REPORT_SVG_H

#include "common/buf.h"

#include <jansson.h>
#include <stddef.h>

/* Scratch for charting one report: room for a bar, a point and two label
 * boxes per row, allocated up front so that running out of memory is known
 * before anything is written. */
typedef struct kf_rep_svg kf_rep_svg;

/* rows and agents: the report's "rows" and "agents" arrays; both stay the
 * caller's and must outlive the result. Returns NULL when out of memory. */
kf_rep_svg *kf_rep_svg_new(const json_t *rows, const json_t *agents);
void kf_rep_svg_destroy(kf_rep_svg **self);

/* The page's chart sections, each with its <h2> and notes: a bar chart per
 * kernel; a roofline per node that has measured ceilings; the median per
 * node of each configuration that ran on two nodes or more; appended to out,
 * which the charts' scratch does not keep (the page passes its buffer to
 * each writer, as git passes a strbuf). */
void kf_rep_svg_kernel_charts(kf_rep_svg *self, kf_buf *out);
void kf_rep_svg_rooflines(kf_rep_svg *self, kf_buf *out);
void kf_rep_svg_node_charts(kf_rep_svg *self, kf_buf *out);

#endif
