/* report_model — one sweep's report, built once from the store, that every
 * format prints: the collected rows (report_rows.h: tasks, results,
 * samples, agents, ranks, the problem's provenance), typed. The table,
 * Markdown and CSV print the rows; the JSON printer makes its document
 * tree (schema kfleet.report/2, report_json.h) from them, which the HTML
 * page (and its SVG charts) and `compare` read. None goes back to the
 * store.
 *
 * Not an API outside coordinator/report: report.h and compare.h are. */
#ifndef KF_REPORT_MODEL_H
#define KF_REPORT_MODEL_H

#include "common/err.h"
#include "core/store.h"
#include "report/report_opts.h"
#include "report/report_rows.h"

typedef struct kf_report_model kf_report_model;

/* Reads sweep_id from the read transaction t and builds its model as opts
 * asks (baseline, group_by, provenance; a problem sweep's rows in
 * leaderboard order unless opts->group_set). *out is the caller's, for
 * kf_report_model_destroy; it reads nothing more from t. KF_ENOTFOUND: no
 * such sweep; KF_EINVAL: the baseline is not one of its kernels; else the
 * store's error or KF_ENOMEM; err says which, and *out is NULL. */
int kf_report_model_new(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts,
                        kf_report_model **out, kf_err *err);

/* Frees the model and sets *self to NULL; NULL is fine. */
void kf_report_model_destroy(kf_report_model **self);

/* The rows; they belong to the model and live as long. */
const rep *kf_report_model_rows(const kf_report_model *self);

#endif
