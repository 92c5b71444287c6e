/* report_text — the report for people: the aligned terminal table and
 * Markdown, rendered from the collected rows (report_rows.h). */
#ifndef KF_REPORT_TEXT_H
#define KF_REPORT_TEXT_H

#include "common/buf.h"
#include "report/report_rows.h"

/* The aligned table (md = 0; color: ANSI colours) or Markdown (md = 1),
 * appended to out. Returns 0 or KF_ENOMEM. */
int kf_rep_render_text(const rep *r, int md, int color, kf_buf *out);

#endif
