/* report_stream — a sweep's rows as they finish, one JSON object a line
 * (`kfleet submit --follow --format jsonl`, docs/report-json.md): each
 * kernel-configuration-node row once, when every task it has (validate,
 * profile) has ended, so a script can consume the verdicts while the sweep
 * runs. Each line is the row of the JSON report (kfleet.report/2's rows[],
 * without sample times) with "schema": "kfleet.row/1", "sweep_id",
 * "verdict" ("passed", or the state of the first task of the row that did
 * not succeed, "validate failed", "profile timed_out") and "median_s" on
 * top. A row's speedup is null when its baseline's configuration had not
 * finished yet; `kfleet report` has it then. */
#ifndef KF_REPORT_STREAM_H
#define KF_REPORT_STREAM_H

#include "common/buf.h"
#include "common/err.h"
#include "core/store.h"

#include <stddef.h>
#include <stdint.h>

#define KF_ROW_SCHEMA "kfleet.row/1"

typedef struct kf_report_stream kf_report_stream;

kf_report_stream *kf_report_stream_new(uint32_t sweep_id);
void kf_report_stream_destroy(kf_report_stream **self);

/* Appends to out a line for each row of the sweep that has finished since
 * the last call (from a read transaction on the store); *nnew counts them.
 * KF_ENOTFOUND when the sweep is not (yet) in the store. */
int kf_report_stream_poll(kf_report_stream *s, kf_txn *t, kf_buf *out, size_t *nnew, kf_err *err);

#endif
