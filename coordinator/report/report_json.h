/* report_json — the report as JSON (schema "kfleet.report/1",
 * docs/report-json.md), rendered from the collected rows (report_rows.h).
 * The HTML page and the CSV are drawn from this JSON. */
#ifndef KF_REPORT_JSON_H
#define KF_REPORT_JSON_H

#include "common/buf.h"
#include "report/report_rows.h"

#define KF_REPORT_SCHEMA "kfleet.report/2"

#include <jansson.h>

/* One row as the JSON's rows[] holds it (the caller owns the object):
 * what `submit --follow --format jsonl` streams (report_stream.h). */
json_t *kf_rep_row_json(const rep *r, const rrow *w, int with_samples);

/* The report as JSON, appended to out; with_samples = 0 leaves out
 * sample_seconds. Returns 0 or KF_ENOMEM. */
int kf_rep_render_json(const rep *r, int with_samples, kf_buf *out);

#endif
