/* report_rowtime — the runner time of a finished sweep's rows (issue 45):
 * the figures are kf_rep_row_time's (report_rows.h); this is their line in
 * the text and Markdown reports. */
#ifndef KF_REPORT_ROWTIME_H
#define KF_REPORT_ROWTIME_H

#include "common/buf.h"
#include "report/report_rows.h"

/* "  slot time a row (41 rows that ran): median 5.98 s, mean 7.35 s:
 * profile warm-up 1.72 s (23%), ...; costliest tri000 [rows=512] 19.68 s:
 * profile sampling 6.20 s (31%), ...", nothing for fewer than 2 rows. */
void kf_rep_row_time_text(const rep *r, int md, kf_buf *out);

#endif
