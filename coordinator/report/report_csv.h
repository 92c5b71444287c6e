/* report_csv — the report as CSV (RFC 4180: comma-separated, CRLF line
 * ends, fields quoted when they hold a comma, quote or line break), one line
 * per row, for spreadsheets and scripts that want a flat table. Drawn from
 * the report's tree (the one the JSON writes), like the HTML page, so every
 * format shows the same figures. Empty fields mean "not applicable" (JSON null). */
#ifndef KF_REPORT_CSV_H
#define KF_REPORT_CSV_H

#include "common/buf.h"

#include <jansson.h>

/* Appends the CSV of a report JSON object (the model's tree,
 * report_model.h) to out: a header line, then one line per row.
 * provenance: add the provenance columns. A problem sweep's (its "problem"
 * an object) ends each line with the row's verdict and the problem's name,
 * hash and seed policy. Returns 0, or
 * KF_EINVAL when report has no "rows" array. */
int kf_report_csv(const json_t *report, int provenance, kf_buf *out);

#endif
