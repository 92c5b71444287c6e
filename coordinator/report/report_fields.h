/* report_fields — what a row says that more than one printer writes,
 * derived from the model (report_rows.h) in one place, so the JSON and the
 * CSV cannot disagree: its flags, its validation's largest error, the
 * compiler that built it. Not an API outside coordinator/report. */
#ifndef KF_REPORT_FIELDS_H
#define KF_REPORT_FIELDS_H

#include "report/report_rows.h"

#include <stddef.h>

/* The most flags a row can carry. */
#define KF_REP_MAX_FLAGS 12

/* w's flags in the report's order ("noisy", "imprecise", ...,
 * "failed"), static words, into out; returns how many. */
size_t kf_rep_row_flags(const rrow *w, const char *out[KF_REP_MAX_FLAGS]);

/* The largest max_abs_err over vt's trials; NAN without a trial (or where
 * a trial's error is NAN and none after it is a number). */
double kf_rep_max_abs_err(const rtask *vt);

/* The compiler the row's build reported, else the node's for the kernel's
 * language (nvcc or cc, from its inventory); NULL when neither is known. */
const char *kf_rep_compiler(const rrow *w);

#endif
