/* report_json — the report as JSON (schema "kfleet.report/1",
 * docs/report-json.md), rendered from the collected rows (report_rows.h).
 * The tree is built once per report (report_model.h); the HTML page and
 * the CSV read that tree, not this text. */
#ifndef KF_REPORT_JSON_H
#define KF_REPORT_JSON_H

#include "common/buf.h"
#include "report/report_rows.h"

#define KF_REPORT_SCHEMA "kfleet.report/2"

#include <jansson.h>

/* One row as the JSON's rows[] holds it (the caller owns the object):
 * what `submit --follow --format jsonl` streams (report_stream.h). */
json_t *kf_rep_row_json(const rep *r, const rrow *w, int with_samples);

/* The report's document tree (the caller owns it): what the JSON writes and
 * what CSV and the HTML page read (report_model.h). with_samples = 0 leaves
 * out sample_seconds. NULL when out of memory. */
json_t *kf_rep_json_doc(const rep *r, int with_samples);

/* The tree as the JSON text people and scripts read, appended to out.
 * Returns 0 or KF_ENOMEM. */
int kf_rep_json_write(const json_t *doc, kf_buf *out);

#endif
