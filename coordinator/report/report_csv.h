/* report_csv — the report as CSV (RFC 4180: comma-separated, CRLF line
 * ends, fields quoted when they hold a comma, quote or line break), one line
 * per row, for spreadsheets and scripts that want a flat table. A printer of
 * the model's rows (report_rows.h), with the figures the JSON writes.
 * Empty fields mean "not applicable" (JSON null). */
#ifndef KF_REPORT_CSV_H
#define KF_REPORT_CSV_H

#include "common/buf.h"
#include "report/report_rows.h"

/* Appends the CSV of r to out: a header line, then one line per row.
 * provenance: add the provenance columns. A problem sweep's ends each line
 * with the row's verdict and the problem's name, hash and seed policy.
 * Returns 0. */
int kf_report_csv(const rep *r, int provenance, kf_buf *out);

#endif
