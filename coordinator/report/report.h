/* report — turns a sweep's stored records into the report people read:
 * a terminal table, Markdown, JSON (schema "kfleet.report/2",
 * docs/report-json.md), CSV, or one self-contained HTML page, each rendered
 * from one model built once from the store (report_model.h).
 *
 * Every figure is computed from stored samples and results, never from a
 * summary the agent claimed: the median and spread come from the samples in
 * the store, and a profile whose stored sample count differs from what the
 * agent reported is flagged. */
#ifndef KF_REPORT_H
#define KF_REPORT_H

#include "common/buf.h"
#include "common/err.h"
#include "core/store.h"
#include "report/report_opts.h"

/* The formats' names in kf_report_format order, NULL-ended: what a
 * command's --format takes (kf_opt_format); "md|markdown" is either. */
extern const char *const kf_report_format_names[];

/* Parses "table|md|json|html|csv" (and "markdown"); -1 when unknown. */
int kf_report_parse_format(const char *s);

/* Parses "kernel|gpu|node"; returns -1 when unknown. */
int kf_report_parse_group(const char *s);

/* Renders the report of sweep_id as opts says. KF_ENOTFOUND when there is
 * no such sweep; KF_EINVAL when opts->baseline is not one of its kernels. */
int kf_report_render_opts(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts, kf_buf *out,
                          kf_err *err);

/* Renders the report of sweep_id from a read transaction into out.
 * color: ANSI colour in the table (only when stdout is a tty).
 * KF_ENOTFOUND when there is no such sweep. */
int kf_report_render(kf_txn *t, uint32_t sweep_id, kf_report_format fmt, int color, kf_buf *out,
                     kf_err *err);

#endif
