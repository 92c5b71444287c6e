/* report_html — the sweep report as one self-contained HTML page, rendered
 * from the report's tree (schema "kfleet.report/2", docs/report-json.md):
 * the model's (report_model.h), never JSON text parsed back.
 *
 * The page needs nothing from the network: its style, its charts (inline
 * SVG) and the few lines of script that sort the results table are all in
 * the file. */
#ifndef KF_REPORT_HTML_H
#define KF_REPORT_HTML_H

#include "common/buf.h"
#include "common/err.h"

#include <jansson.h>

/* Appends the HTML page for report (the object kf_report_render writes as
 * JSON) to out. The report stays the caller's; nothing of it is kept.
 * Only the statistics are used: `sample_seconds` is never copied into the
 * page. Returns 0, or KF_EINVAL (with err filled) when report is not a
 * kfleet.report/1 object; out is left as it was on failure. */
int kf_report_html(const json_t *report, kf_buf *out, kf_err *err);

#endif
